// The uploads feature's workers (feature.ts), loaded with the first `upload`
// or `realtime-upload` item: the storage client, the whole-file worker and
// the real-time one (built even with real-time uploads off: recordings
// queued while they were on still finish), and the heap's trim after every
// 64 MiB sent.
import { createStorageClient } from '../api/storage.js';
import type { FeatureContext } from '../core/feature.js';
import { HeapTrim } from '../lib/heap-trim.js';
import type { Worker } from '../outbox/dispatcher.js';
import { RealtimeWorker } from './realtime-worker.js';
import { UploadWorker } from './upload-worker.js';

export async function uploadWorkers(ctx: FeatureContext): Promise<Worker[]> {
  const { settings, clock, logger, bus, services } = ctx;
  const service = services.get('uploads');
  if (service === undefined) throw new Error('uploads: the feature was not built');
  const u = await service.pipeline();
  const storage = createStorageClient({ clock, logger, extraCas: settings.extraCas, ...(ctx.wire !== undefined && { wire: ctx.wire }) });
  services.provide('storage', storage);
  const heap = new HeapTrim(undefined, undefined, (err) => logger.warn({ err: String(err) }, 'cannot collect garbage after an upload; memory may stay higher'));
  bus.on('bytesSent', heap, ({ bytes }) => heap.sent(bytes));
  // Both workers date their requests by the service's clock and file an upload under its channel the same way.
  const serverNow = (): number => clock.wallNow() + (ctx.api.lastMeta?.clockOffsetMs ?? 0);
  const channelId = async (key: string): Promise<string | undefined> => services.get('channels')?.channelId(key);
  const { window } = u;
  const common = {
    assets: ctx.api.assets,
    storage,
    outbox: ctx.outbox,
    clock,
    serverNow,
    channelId,
    index: u.index,
    deleteAfterUpload: settings.deleteAfterUpload,
    queueDir: ctx.paths.queue,
    onBytes: (bytes: number) => bus.emit('bytesSent', { bytes }),
    ...(window && { windowOpen: () => window.isOpen() }),
    roots: u.roots,
    lastParts: u.lastParts,
    logger,
  };
  const uploadWorker = new UploadWorker({ ...common, urls: u.urls });
  const realtime = new RealtimeWorker({ ...common, settleMs: settings.mediaSettleSeconds * 1000, onChange: () => bus.emit('statusChanged', {}) });
  services.provide('recordings', realtime);
  return [uploadWorker, realtime];
}
