// The daemon's units, built and put in order. main.ts owns the process
// (lock, signals, exit); this file owns what runs inside it, so a new
// feature is one more unit here and nowhere else.
import type { ServiceApi } from '../api/service.js';
import { getClientId } from '../auth/client-id.js';
import type { CredentialsTokenSource } from '../auth/token-source.js';
import { ChannelMapStore } from '../channels/channel-map.js';
import { ChannelsUnit } from '../channels/channels-unit.js';
import { ChannelDetector } from '../channels/detect.js';
import { ChannelSyncWorker } from '../channels/sync-worker.js';
import type { FirmwareProfile, Settings } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { Dispatcher } from '../outbox/dispatcher.js';
import { Outbox } from '../outbox/outbox.js';
import { createStorageClient } from '../api/storage.js';
import { fileTypeOf } from '../uploads/file-type.js';
import { MediaWatcher } from '../uploads/media-watcher.js';
import { UploadedIndex } from '../uploads/uploaded-index.js';
import { HeapTrim } from '../lib/heap-trim.js';
import { UploadsUnit } from '../uploads/uploads-unit.js';
import { UploadWorker } from '../uploads/upload-worker.js';
import { UploadWindow } from '../uploads/upload-window.js';
import { UploadUrls } from '../uploads/upload-urls.js';
import { OutboxUnit } from '../outbox/outbox-unit.js';
import { Controller, type ControllerDeps } from './controller.js';
import { boundsOf } from './heartbeat/policy.js';
import { createStatusSink } from './runtime/status-file.js';
import { StatusPublisher } from './runtime/status-publisher.js';
import type { SystemdNotifier } from './systemd/notify.js';
import { Watchdog } from './systemd/watchdog.js';
import type { DaemonUnit } from './unit.js';
import { queueDirOf } from '../outbox/location.js';

export interface UnitsInput {
  settings: Settings;
  profile: FirmwareProfile;
  clock: Clock;
  logger: Logger;
  api: ServiceApi;
  tokens: CredentialsTokenSource;
  notifier: SystemdNotifier;
  bootId: string;
  /** The controller's facts that come from the process (last attempt, info, persistence). */
  controller: Pick<ControllerDeps, 'lastAttempt' | 'persistAttempt' | 'info'>;
  onStatusWriteError: (err: unknown) => void;
}

export interface DaemonUnits {
  units: DaemonUnit[];
  controller: Controller;
}

export function buildUnits(i: UnitsInput): DaemonUnits {
  const { settings, clock, logger, api } = i;
  const units: DaemonUnit[] = [];
  const status = new StatusPublisher(
    createStatusSink(settings.runtimeDir, i.onStatusWriteError),
    i.notifier,
    clock,
    () => Object.assign({}, ...units.map((u) => u.report?.() ?? {})),
    () => units.flatMap((u) => u.statusText?.() ?? []),
  );

  const specs = i.profile.channels;
  const channelMap = new ChannelMapStore(settings.stateDir);
  let detected = new Set<string>();
  // eslint-disable-next-line prefer-const -- the worker and the detector reach the unit built after them
  let channels: ChannelsUnit;
  const sync = new ChannelSyncWorker({
    specs,
    api,
    clientId: async () => (await getClientId(settings)).clientId,
    map: channelMap,
    detected: () => detected,
    resync: (why) => channels.requestSync(why),
    synced: (map) => channels.synced(map),
    logger,
  });
  const queueDir = queueDirOf(settings.stateDir);
  const outbox = new Outbox({ dir: queueDir, clock, bootId: i.bootId, capBytes: settings.queueMaxBytes, logger });
  const storage = createStorageClient({ clock, logger });
  const index = new UploadedIndex(settings.stateDir, { logger });
  // eslint-disable-next-line prefer-const -- the worker and the watcher reach the unit built after them
  let uploads: UploadsUnit;
  let dispatcher: Dispatcher | undefined;
  const win = settings.uploadWindow;
  const window =
    win === undefined
      ? undefined
      : new UploadWindow({ ...win, clock, clockOffsetMs: () => api.lastMeta?.clockOffsetMs, onOpen: () => dispatcher?.kick(), logger });
  const urls = new UploadUrls(queueDir);
  const heap = new HeapTrim(undefined, undefined, (err) => logger.warn({ err: String(err) }, 'cannot collect garbage after an upload; memory may stay higher'));
  const uploadWorker = new UploadWorker({
    assets: api.assets,
    storage,
    outbox,
    urls,
    clock,
    serverNow: () => clock.wallNow() + (api.lastMeta?.clockOffsetMs ?? 0),
    channelId: async (key) => (await channelMap.load().catch(() => ({}) as Record<string, string>))[key],
    index,
    deleteAfterUpload: settings.deleteAfterUpload,
    onBytes: (n) => {
      uploads.bytesSent(n);
      heap.sent(n);
    },
    ...(window && { windowOpen: () => window.isOpen() }),
    logger,
  });

  dispatcher = new Dispatcher({
    outbox,
    workers: [sync, uploadWorker],
    clock,
    random: Math.random,
    logger,
    rateLimit: () => api.lastMeta?.rateLimit,
    unauthorized: (why, sentAt) => i.tokens.callRefused(why, sentAt),
    onSettled: () => status.refresh(),
  });
  const outboxUnit = new OutboxUnit(outbox, dispatcher, logger);

  const watcher =
    settings.mediaDir === undefined
      ? undefined
      : new MediaWatcher({
          dir: settings.mediaDir,
          channelKeys: specs.map((c) => c.key),
          clock,
          settleMs: settings.mediaSettleSeconds * 1000,
          onReady: (f) => uploads.fileReady({ ...f, ...fileTypeOf(f.name) }),
          logger,
        });
  uploads = new UploadsUnit({ ...(watcher && { watcher }), ...(window && { window }), index, outbox: outboxUnit, queueDir, urls, clock, logger, changed: () => status.refresh(), close: () => storage.close() });
  const detector = new ChannelDetector({
    specs,
    hostRoot: settings.hostRoot,
    clock,
    logger,
    onChange: (set) => {
      detected = set;
      channels.changed(set);
      status.refresh();
    },
  });
  channels = new ChannelsUnit({ specs, detector, map: channelMap, outbox: outboxUnit, inFlight: () => outboxUnit.inFlight(), logger });

  const controller: Controller = new Controller({
    clock,
    random: Math.random,
    logger,
    api,
    tokens: i.tokens,
    bounds: boundsOf(i.profile.heartbeat),
    ...i.controller,
    onDevice: (device) => channels.deviceSeen(device),
    publish: (snap, transition) => {
      for (const u of units) u.onSnapshot?.(snap, transition);
    },
  });
  // Started in this order, stopped in reverse. The status file listens before the
  // controller's first snapshot and is flushed after its last. The token source
  // refreshes ahead of expiry once the controller has loaded the credentials, and
  // stops after it (a refresh in flight is waited for, never cut). The outbox opens
  // before anything puts work in it and closes (flushed) after the last put. The
  // watchdog pings only once the controller has something to be healthy about.
  units.push(status, i.tokens, outboxUnit, channels, uploads, controller, new Watchdog(i.notifier, () => controller.isHealthy()));
  return { units, controller };
}
