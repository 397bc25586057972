// The daemon's units, built and put in order around the core (core.ts: the
// service API, the token source, the controller). main.ts owns the process
// (lock, signals, exit); this file owns what runs inside it, so a new
// feature is one more unit here and nowhere else. Everything is built top to
// bottom: a part that must reach another one built later publishes on the
// event bus (core/event-bus.ts) instead of holding a reference to it.
import path from 'node:path';
import { getClientId } from '../auth/client-id.js';
import { UNIT_CREDENTIALS_DIR } from '../auth/credentials-systemd.js';
import { DaemonPairing } from '../auth/daemon-pairing.js';
import { createServiceApi } from '../api/service.js';
import type { Wire } from '../api/transport.js';
import { ChannelMapStore } from '../channels/channel-map.js';
import { ChannelsUnit } from '../channels/channels-unit.js';
import { ChannelDetector } from '../channels/detect.js';
import { ChannelSyncWorker } from '../channels/sync-worker.js';
import { realtimeUploadsOn, type FirmwareProfile, type Settings } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { Dispatcher, type Worker } from '../outbox/dispatcher.js';
import { LazyWorkers } from '../outbox/lazy-workers.js';
import type { FeatureContext } from '../core/feature.js';
import { buildFeatures, ServiceRegistry } from './feature-host.js';
import { FEATURES } from './features.js';
import { Outbox } from '../outbox/outbox.js';
import { createStorageClient } from '../api/storage.js';
import { fileTypeOf } from '../uploads/file-type.js';
import { MediaWatcher, type GrowingFile } from '../uploads/media-watcher.js';
import { UploadedIndex } from '../uploads/uploaded-index.js';
import { HeapTrim } from '../lib/heap-trim.js';
import { UploadsUnit } from '../uploads/uploads-unit.js';
import { UploadBlocks } from '../uploads/upload-blocks.js';
import { UploadWorker } from '../uploads/upload-worker.js';
import { RealtimeWorker } from '../uploads/realtime-worker.js';
import { UploadWindow } from '../uploads/upload-window.js';
import { UploadUrls } from '../uploads/upload-urls.js';
import { LastParts } from '../uploads/last-part.js';
import { OutboxUnit } from '../outbox/outbox-unit.js';
import type { Controller } from './controller.js';
import type { Core } from './core.js';
import type { EventBus } from '../core/event-bus.js';
import { createStatusSink } from './runtime/status-file.js';
import { StatusPublisher } from './runtime/status-publisher.js';
import type { SystemdNotifier } from './systemd/notify.js';
import { Watchdog } from './systemd/watchdog.js';
import type { DaemonUnit } from '../core/unit.js';
import type { StatusSections, UploadBlock } from '../core/status-document.js';
import { queueDirOf } from '../outbox/location.js';
import { HandlerMap } from '../localapi/handlers.js';
import { EventsHub } from '../localapi/events.js';
import { apiSocketOf, LocalApiUnit } from '../localapi/local-api-unit.js';
import { registerStatusHandlers } from '../localapi/status-handlers.js';
import { registerPairHandlers } from '../localapi/pair-handlers.js';
import { registerUploadHandlers } from '../localapi/upload-handlers.js';
import { registerPrefsHandlers } from '../localapi/prefs-handlers.js';
import { PrefsStore } from '../localapi/prefs-store.js';
import { NetworkUnit } from '../network/network-unit.js';
import { AddressWatch } from '../network/address-watch.js';
import { uploadRows } from '../uploads/upload-rows.js';

export interface UnitsInput {
  settings: Settings;
  profile: FirmwareProfile;
  clock: Clock;
  random: () => number;
  logger: Logger;
  bus: EventBus;
  core: Core;
  notifier: SystemdNotifier;
  bootId: string;
  onStatusWriteError: (err: unknown) => void;
  agentVersion: string;
  /** Replaces the HTTP exchange with the service and storage, as the core's does (daemon.ts); production never sets it. */
  wire?: Wire;
}

export interface DaemonUnits {
  units: DaemonUnit[];
  controller: Controller;
  /** Pairing and unpairing by the daemon, for the local API (POST/DELETE /v1/pair, POST /v1/unpair). */
  pairing: DaemonPairing;
}

/**
 * The agent's own dirs, whose files are never uploaded whatever a root resolves to (a root swapped
 * for a link to the state dir would hold credentials.json): the state, runtime and credentials
 * dirs and those of the config, token and client secret files. One that holds a configured root
 * as written (a media dir inside the state dir) is left out, or that root could never upload.
 */
export function ownDirs(settings: Pick<Settings, 'stateDir' | 'runtimeDir' | 'credentialsDir' | 'configFile' | 'tokenFile' | 'clientSecretFile'>, roots: readonly string[]): string[] {
  const dirs = [settings.stateDir, settings.runtimeDir, settings.credentialsDir ?? UNIT_CREDENTIALS_DIR, path.dirname(settings.configFile), path.dirname(settings.tokenFile), ...(settings.clientSecretFile === undefined ? [] : [path.dirname(settings.clientSecretFile)])].map((d) => path.resolve(d));
  const holds = (dir: string, root: string): boolean => {
    const rel = path.relative(dir, path.resolve(root));
    return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
  };
  return [...new Set(dirs)].filter((d) => !roots.some((r) => holds(d, r)));
}

export function buildUnits(i: UnitsInput): DaemonUnits {
  const { settings, clock, logger, bus } = i;
  const { api, tokens, controller } = i.core;
  const units: DaemonUnit[] = [];
  const status = new StatusPublisher(
    createStatusSink(settings.runtimeDir, i.onStatusWriteError),
    i.notifier,
    clock,
    bus,
    () => units.reduce<Partial<StatusSections>>((doc, u) => ({ ...doc, ...u.report?.() }), {}),
    () => units.flatMap((u) => u.statusText?.() ?? []),
  );

  const specs = i.profile.channels;
  const channelMap = new ChannelMapStore(settings.stateDir, { soleWriter: true, onSwept: (files) => logger.info({ files }, `removed ${files.length} stale temp file(s) of the channel record`) });
  const detector = new ChannelDetector({
    specs,
    hostRoot: settings.hostRoot,
    clock,
    logger,
    onChange: (keys) => bus.emit('channelsDetected', { keys }),
  });
  const sync = new ChannelSyncWorker({
    specs,
    api,
    clientId: async () => (await getClientId(settings)).clientId,
    map: channelMap,
    detected: () => new Set(detector.current ?? []),
    bus,
    logger,
  });

  const queueDir = queueDirOf(settings.stateDir);
  const outbox = new Outbox({ dir: queueDir, clock, bootId: i.bootId, capBytes: settings.queueMaxBytes, logger });
  const storage = createStorageClient({ clock, logger, extraCas: settings.extraCas, ...(i.wire !== undefined && { wire: i.wire }) });
  const index = new UploadedIndex(settings.stateDir, { logger });
  const win = settings.uploadWindow;
  const window =
    win === undefined
      ? undefined
      : new UploadWindow({ ...win, clock, clockOffsetMs: () => api.lastMeta?.clockOffsetMs, onOpen: () => bus.emit('uploadWindowOpened', {}), logger });
  const urls = new UploadUrls(queueDir);
  const heap = new HeapTrim(undefined, undefined, (err) => logger.warn({ err: String(err) }, 'cannot collect garbage after an upload; memory may stay higher'));
  // Both workers date their requests by the service's clock and file an upload under its channel the same way.
  const serverNow = (): number => clock.wallNow() + (api.lastMeta?.clockOffsetMs ?? 0);
  const channelId = async (key: string): Promise<string | undefined> => (await channelMap.load().catch(() => ({}) as Record<string, string>))[key];
  // Where files may be taken from by path: the local API's checks, again for a changed file before it goes once more, and on the descriptor each upload reads from.
  const rootList = [...(settings.mediaDir === undefined ? [] : [settings.mediaDir]), ...(settings.uploadRoots ?? [])];
  const uploadRoots = { roots: rootList, channelKeys: specs.map((c) => c.key), own: ownDirs(settings, rootList) };
  // Where a cancel meets the moment an upload's last bytes go.
  const lastParts = new LastParts();
  const uploadWorker = new UploadWorker({
    assets: api.assets,
    storage,
    outbox,
    urls,
    clock,
    serverNow,
    channelId,
    index,
    deleteAfterUpload: settings.deleteAfterUpload,
    queueDir,
    onBytes: (bytes) => bus.emit('bytesSent', { bytes }),
    ...(window && { windowOpen: () => window.isOpen() }),
    roots: uploadRoots,
    lastParts,
    logger,
  });
  bus.on('bytesSent', heap, ({ bytes }) => heap.sent(bytes));
  // Built even with real-time uploads off: recordings queued while they were on still finish.
  const realtime = new RealtimeWorker({
    assets: api.assets,
    storage,
    outbox,
    clock,
    serverNow,
    channelId,
    index,
    deleteAfterUpload: settings.deleteAfterUpload,
    settleMs: settings.mediaSettleSeconds * 1000,
    queueDir,
    onBytes: (bytes) => bus.emit('bytesSent', { bytes }),
    onChange: () => bus.emit('statusChanged', {}),
    ...(window && { windowOpen: () => window.isOpen() }),
    roots: uploadRoots,
    lastParts,
    logger,
  });
  const realtimeOn = realtimeUploadsOn(settings, i.profile);

  // The listed features' kinds join these, their workers loaded with the first item of a kind (outbox/lazy-workers.ts).
  const workers: Worker[] = [sync, uploadWorker, realtime];
  const lazyWorkers = new LazyWorkers(workers, () => dispatcher.kick(), (kinds, err) => logger.error({ kinds, err: err instanceof Error ? err.message : String(err) }, 'cannot load the worker of an outbox kind; its items wait'));
  const dispatcher = new Dispatcher({
    outbox,
    workers,
    clock,
    random: i.random,
    logger,
    rateLimit: () => api.lastMeta?.rateLimit,
    unauthorized: (why, sentAt) => tokens.callRefused(why, sentAt),
    onSettled: () => bus.emit('outboxSettled', {}),
  });
  const outboxUnit = new OutboxUnit(outbox, dispatcher, bus, logger, lazyWorkers);

  const watcher =
    settings.mediaDir === undefined
      ? undefined
      : new MediaWatcher({
          dir: settings.mediaDir,
          channelKeys: specs.map((c) => c.key),
          clock,
          settleMs: settings.mediaSettleSeconds * 1000,
          onReady: (f) => bus.emit('mediaFileReady', { file: { ...f, ...fileTypeOf(f.name) } }),
          ...(realtimeOn && { onGrowing: (f: GrowingFile) => bus.emit('mediaFileGrowing', { file: { ...f, ...fileTypeOf(f.name) } }) }),
          onSkipped: () => bus.emit('statusChanged', {}),
          logger,
        });
  const prefs = new PrefsStore({ stateDir: settings.stateDir, bus, clock, logger });
  // What keeps uploads from going (no media dir, autoUpload off, the window closed, refused attempts): in the uploads section, and logged once each.
  const blocks = new UploadBlocks({ mediaDir: settings.mediaDir, autoUpload: () => prefs.prefs().autoUpload, held: (): number => uploads.heldCount, ...(window && { window }), failing: () => dispatcher.view().failing, clock, bus, logger });
  const uploads = new UploadsUnit({ autoUpload: () => prefs.prefs().autoUpload, ...(watcher && { watcher }), ...(window && { window }), index, outbox: outboxUnit, queueDir, roots: uploadRoots, settleMs: settings.mediaSettleSeconds * 1000, urls, clock, logger, bus, recordings: () => realtime.recordings(), close: () => storage.close(), lastParts, blocked: (): UploadBlock[] => blocks.current() });
  const channels = new ChannelsUnit({ specs, detector, map: channelMap, outbox: outboxUnit, inFlight: () => outboxUnit.inFlight(), bus, logger });

  const pairing = new DaemonPairing({
    settings,
    clock,
    random: i.random,
    logger,
    bus,
    oauth: api.oauth,
    // The grant is verified with its own token before anything uses it: a client of its own, closed after.
    verifier: (accessToken) => createServiceApi({ baseUrl: settings.apiUrl, token: () => accessToken, firmwareVersion: settings.firmwareVersion, agentVersion: i.agentVersion, clock, logger, extraCas: settings.extraCas, ...(i.wire !== undefined && { wire: i.wire }) }),
    clientId: async () => (await getClientId(settings)).clientId,
    credentials: tokens,
  });

  const addresses = new AddressWatch({ clock, logger, closers: [(gone) => api.transport.dropConnectionsOn(gone), (gone) => storage.dropConnectionsOn(gone)] });
  const network = new NetworkUnit({ hostRoot: settings.hostRoot, clock, lastMeta: () => api.lastMeta, uploadBytesPerSecond: () => uploads.bytesPerSecond() });

  // The local API (agent/localapi/): one handler map, each feature's routes registered by its own function.
  const events = new EventsHub({ bus, clock, status: () => status.document(), uploads: () => uploadRows(outboxUnit.items(), new Set(outboxUnit.inFlight())) });
  const routes = new HandlerMap();
  registerStatusHandlers(routes, {
    status: () => {
      network.refresh();
      return status.document();
    },
    events,
  });
  registerPairHandlers(routes, { pairing });
  registerUploadHandlers(routes, {
    uploads,
    rows: () => uploadRows(outboxUnit.items(), new Set(outboxUnit.inFlight())),
    roots: uploadRoots,
    events,
  });
  registerPrefsHandlers(routes, prefs);
  const localApi = new LocalApiUnit({ socketPath: apiSocketOf(settings.runtimeDir), routes, clock, logger });

  // The listed features (daemon/features.ts), each given the same context.
  const ctx: FeatureContext = {
    bus,
    clock,
    random: i.random,
    logger,
    settings,
    profile: i.profile,
    agentVersion: i.agentVersion,
    bootId: i.bootId,
    api,
    outbox: outboxUnit,
    routes,
    lines: { publish: (type, line) => events.publish({ ...line, type }) },
    services: new ServiceRegistry(),
    paths: { state: settings.stateDir, runtime: settings.runtimeDir, queue: queueDir },
    ...(i.wire !== undefined && { wire: i.wire }),
  };
  const features = buildFeatures(FEATURES, ctx);

  // Started in this order, stopped in reverse. The status file listens before the
  // controller's first snapshot and is flushed after its last. The token source
  // refreshes ahead of expiry once the controller has loaded the credentials, and
  // stops after it (a refresh in flight is waited for, never cut). The outbox opens
  // before anything puts work in it and closes (flushed) after the last put. The
  // watchdog pings only once the controller has something to be healthy about.
  // The local API serves once the units it steers run, and hears the controller's
  // first snapshot; it stops (connections dropped) before what it steers, the
  // daemon's pairing among them (a flow under way is cancelled, nothing stored).
  units.push(status, tokens, outboxUnit, channels, prefs, uploads, blocks, network, addresses, pairing, events, localApi, ...features.units, controller, new Watchdog(i.notifier, () => controller.isHealthy()));
  return { units, controller, pairing };
}
