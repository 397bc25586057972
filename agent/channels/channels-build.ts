// The channels feature's units (feature.ts): the record, the detector and
// the unit that queues syncs; and the sync worker, loaded with the first
// `channel-sync` item. A change of what is plugged in or of the record is a
// change of the status document.
import { getClientId } from '../auth/client-id.js';
import type { FeatureContext, FeatureParts } from '../core/feature.js';
import type { DaemonUnit } from '../core/unit.js';
import { ChannelMapStore } from './channel-map.js';
import { ChannelsUnit } from './channels-unit.js';
import { ChannelDetector } from './detect.js';
import type { ChannelsService } from './feature.js';
import { ChannelSyncWorker } from './sync-worker.js';

export function buildChannels(ctx: FeatureContext): FeatureParts {
  const { settings, clock, logger, bus } = ctx;
  const specs = ctx.profile.channels;
  const map = new ChannelMapStore(ctx.paths.state, { soleWriter: true, onSwept: (files) => logger.info({ files }, `removed ${files.length} stale temp file(s) of the channel record`) });
  const detector = new ChannelDetector({ specs, hostRoot: settings.hostRoot, clock, logger, onChange: (keys) => bus.emit('channelsDetected', { keys }) });
  const service: ChannelsService = {
    map,
    detected: () => new Set(detector.current ?? []),
    channelId: async (key) => (await map.load().catch(() => ({}) as Record<string, string>))[key],
  };
  ctx.services.provide('channels', service);
  const unit = new ChannelsUnit({ specs, detector, map, outbox: ctx.outbox, inFlight: () => ctx.outbox.inFlight(), bus, clock, logger });
  return { units: [unit, new ChannelsChanged(ctx)] };
}

/** What is plugged in or the record changed: the status document changed (started after ChannelsUnit, which hears it first). */
class ChannelsChanged implements DaemonUnit {
  readonly name = 'channels-status';
  constructor(private readonly ctx: Pick<FeatureContext, 'bus'>) {}
  start(): void {
    for (const e of ['channelsDetected', 'channelsSynced'] as const) this.ctx.bus.on(e, this, () => this.ctx.bus.emit('statusChanged', {}));
  }
  async stop(): Promise<void> {
    this.ctx.bus.removeListeners(this);
  }
}

export function syncWorker(ctx: FeatureContext): ChannelSyncWorker {
  const channels = ctx.services.get('channels');
  if (channels === undefined) throw new Error('channels: the feature was not built');
  return new ChannelSyncWorker({
    specs: ctx.profile.channels,
    api: ctx.api,
    clientId: async () => (await getClientId(ctx.settings)).clientId,
    map: channels.map,
    detected: channels.detected,
    bus: ctx.bus,
    logger: ctx.logger,
  });
}
