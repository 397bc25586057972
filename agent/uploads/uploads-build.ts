// The uploads feature's units at start (feature.ts): what an idle camera
// runs. The media watcher (when a media dir is set) and the window (when one
// is), the unit that says what blocks uploads (upload-blocks.ts), and the
// idle part (uploads-idle.ts) that loads the pipeline (pipeline.ts) on first
// use. Each of the watcher and the window is loaded only when set.
import { realtimeUploadsOn } from '../config/types.js';
import type { FeatureContext, FeatureParts } from '../core/feature.js';
import { fileTypeOf } from './file-type.js';
import type { UploadsService } from './feature.js';
import type { GrowingFile } from './media-watcher.js';
import { ownDirs } from './own-dirs.js';
import { UploadBlocks } from './upload-blocks.js';
import { uploadRows } from './upload-rows.js';
import { UploadsIdle } from './uploads-idle.js';

export { ownDirs };

export async function buildUploads(ctx: FeatureContext): Promise<FeatureParts> {
  const { settings, clock, logger, bus, services } = ctx;
  const specs = ctx.profile.channels;
  const win = settings.uploadWindow;
  const window =
    win === undefined
      ? undefined
      : new (await import('./upload-window.js')).UploadWindow({
          ...win,
          clock,
          clockOffsetMs: () => ctx.api.lastMeta?.clockOffsetMs,
          onOpen: () => {
            bus.emit('uploadWindowOpened', {});
            bus.emit('outboxWorkReady', {});
          },
          logger,
        });
  // Where files may be taken from by path: the local API's checks, again for a changed file before it goes once more, and on the descriptor each upload reads from.
  const rootList = [...(settings.mediaDir === undefined ? [] : [settings.mediaDir]), ...(settings.uploadRoots ?? [])];
  const roots = { roots: rootList, channelKeys: specs.map((c) => c.key), own: ownDirs(settings, rootList) };
  const realtimeOn = realtimeUploadsOn(settings, ctx.profile);
  const watcher =
    settings.mediaDir === undefined
      ? undefined
      : new (await import('./media-watcher.js')).MediaWatcher({
          dir: settings.mediaDir,
          channelKeys: specs.map((c) => c.key),
          clock,
          settleMs: settings.mediaSettleSeconds * 1000,
          onReady: (f) => bus.emit('mediaFileReady', { file: { ...f, ...fileTypeOf(f.name) } }),
          ...(realtimeOn && { onGrowing: (f: GrowingFile) => bus.emit('mediaFileGrowing', { file: { ...f, ...fileTypeOf(f.name) } }) }),
          onSkipped: () => bus.emit('statusChanged', {}),
          logger,
        });
  const autoUpload = (): boolean => services.get('prefs')?.prefs().autoUpload ?? true;
  // What keeps uploads from going (no media dir, autoUpload off, the window closed, refused attempts): in the uploads section, and logged once each.
  const blocks = new UploadBlocks({ mediaDir: settings.mediaDir, autoUpload, held: (): number => idle.heldCount, ...(window && { window }), failing: () => ctx.outbox.failing(), clock, bus, logger });
  const blocked = (): ReturnType<UploadBlocks['current']> => blocks.current();
  const idle: UploadsIdle = new UploadsIdle({
    ctx,
    ...(watcher && { watcher }),
    ...(window && { window }),
    blocked,
    load: async () => (await import('./pipeline.js')).buildPipeline(ctx, { ...(watcher && { watcher }), ...(window && { window }), roots, autoUpload, blocked }),
  });
  const service: UploadsService = {
    bytesPerSecond: () => idle.bytesPerSecond(),
    rows: () => uploadRows(ctx.outbox.items(), new Set(ctx.outbox.inFlight())),
    roots,
    pipeline: () => idle.pipeline(),
  };
  services.provide('uploads', service);
  return { units: [idle, blocks] };
}
