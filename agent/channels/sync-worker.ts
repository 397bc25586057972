// One channel sync, run from the outbox: read what the service lists now,
// reconcile it with what is plugged in now and with the agent's record, and
// apply the difference. Working from the live state rather than from the
// change that queued the job makes it idempotent: a sync replayed after a
// crash, or one that raced another, converges to the same end.
import type { ChannelEndpoints } from '../api/channels.js';
import type { DeviceApi } from '../api/types.js';
import type { ChannelSpec } from '../config/types.js';
import type { EventBus } from '../core/event-bus.js';
import type { AgentError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { Worker } from '../outbox/dispatcher.js';
import { classify, type Outcome } from '../outbox/outcome.js';
import type { OutboxItem } from '../outbox/types.js';
import type { ChannelMap } from './channel-map.js';
import { reconcile } from './reconcile.js';

import { CHANNEL_SYNC_KIND } from './kinds.js';

export { CHANNEL_SYNC_KIND };

export interface ChannelSyncDeps {
  specs: ChannelSpec[];
  api: Pick<DeviceApi, 'getDevice'> & { channels: ChannelEndpoints };
  clientId: () => Promise<string>;
  map: { load(): Promise<ChannelMap>; save(map: ChannelMap): Promise<boolean> };
  /** The keys plugged in now. */
  detected: () => Set<string>;
  /**
   * Publishes channelSyncRequested (after a 409 on connect the listing
   * changed under us: one more sync) and channelsSynced (the record as it
   * stands after a sync that went through).
   */
  bus: EventBus;
  logger?: Logger;
}

const notFound = (e: AgentError): boolean => e.kind === 'not-found';
const conflict = (e: AgentError): boolean => e.kind === 'conflict';

export class ChannelSyncWorker implements Worker {
  readonly kind = CHANNEL_SYNC_KIND;

  constructor(private readonly d: ChannelSyncDeps) {}

  async run(_item: OutboxItem, signal: AbortSignal): Promise<Outcome> {
    try {
      return await this.sync(signal);
    } catch (err) {
      return classify(err);
    }
  }

  private async sync(signal: AbortSignal): Promise<Outcome> {
    const device = (await this.d.api.getDevice(signal)).value;
    const plan = reconcile({ specs: this.d.specs, detected: this.d.detected(), listed: device.channels ?? [], map: await this.d.map.load() });
    let map = plan.map;
    await this.d.map.save(map);
    for (const op of plan.disconnect) {
      try {
        await this.d.api.channels.disconnect(op.channelId, signal);
        this.d.logger?.info({ channel: op.channelId, key: op.key, why: op.why }, 'channel disconnected');
      } catch (err) {
        const o = classify(err, notFound);
        if (o.result !== 'done') return o;
      }
    }
    const clientId = plan.connect.length > 0 ? await this.d.clientId() : '';
    for (const op of plan.connect) {
      try {
        const ch = (await this.d.api.channels.connect(clientId, op.deviceModelId, op.externalIndex, signal)).value;
        map = { ...map, [op.key]: ch.id };
        // Recorded at once: a crash after this leaves a channel the next sync recognises as ours.
        await this.d.map.save(map);
        this.d.logger?.info({ channel: ch.id, key: op.key }, 'channel connected');
      } catch (err) {
        const o = classify(err, conflict);
        if (o.result !== 'done') return o;
        this.d.bus.emit('channelSyncRequested', { why: `connect of ${op.key} answered 409` });
      }
    }
    this.d.bus.emit('channelsSynced', { map });
    return { result: 'done' };
  }
}
