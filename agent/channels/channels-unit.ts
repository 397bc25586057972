// Channel reporting in the daemon. Two things queue a channel sync in the
// outbox: a settled hardware change seen by the detector, and a device record
// (GET /v2/devices/me, which the controller reads at start-up, on
// reconnection, hourly and on SIGHUP) whose channel list does not match what
// is plugged in and what the agent has recorded. When everything matches,
// nothing is queued and nothing is written: a healthy unit never touches its
// SD card. The sync runs from the outbox while the service answers
// (sync-worker.ts), so a change made offline survives power cuts.
import type { DeviceChannel, Device } from '../api/types.js';
import type { ChannelSpec } from '../config/types.js';
import type { DaemonUnit } from '../core/unit.js';
import type { StatusSections } from '../core/status-document.js';
import type { EventBus } from '../core/event-bus.js';
import { sleep, type Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { OutboxItem, PutOptions } from '../outbox/types.js';
import type { ChannelMap } from './channel-map.js';
import { isSettled, reconcile } from './reconcile.js';
import { CHANNEL_SYNC_KIND } from './kinds.js';

export interface ChannelsUnitDeps {
  specs: ChannelSpec[];
  detector: { start(): void; stop(): void };
  map: { load(): Promise<ChannelMap> };
  outbox: { ready(): Promise<boolean>; put(kind: string, payload: unknown, opts?: PutOptions): Promise<OutboxItem>; pending(kind?: string): OutboxItem[]; unsettled(kind: string): number };
  /** Items running right now (a pending sync that is not running will read the new state itself). */
  inFlight: () => string[];
  /** Listens to channelsDetected, deviceSeen, channelSyncRequested and channelsSynced while it runs. */
  bus: EventBus;
  clock: Clock;
  logger?: Logger;
}

/**
 * Agent ms the reconcile after a device record waits. At start the first
 * heartbeat's request is made in the same moment, and its attempt record
 * is written first: a loop turn is not enough, and reading the channel
 * record loads conf (about 5 ms under the unit's flags) before the request
 * would go. By this time it has gone; keeping the camera online comes first.
 */
export const RECONCILE_DELAY_MS = 250;

export class ChannelsUnit implements DaemonUnit {
  readonly name = 'channels';
  private detected = new Set<string>();
  /** Whether the detector has spoken since start: its first report is the state at start, not a change. */
  private seenFirst = false;
  /** Keys the service holds a channel for, as of the last sync (unknown before one). */
  private known: string[] | undefined;
  private queueing: Promise<void> = Promise.resolve();
  /** Ends the reconcile waits at stop: the next start's device check reconciles again. */
  private stopping = new AbortController();
  /** Syncs that went through: a device record from before the last of them is out of date. */
  private syncsDone = 0;

  constructor(private readonly d: ChannelsUnitDeps) {}

  start(): void {
    this.stopping = new AbortController();
    const { bus } = this.d;
    bus.on('channelsDetected', this, ({ keys }) => this.changed(new Set(keys)));
    bus.on('deviceSeen', this, ({ device }) => this.deviceSeen(device));
    bus.on('channelSyncRequested', this, ({ why }) => this.requestSync(why));
    bus.on('channelsSynced', this, ({ map }) => this.synced(map));
    if (this.d.specs.length > 0) this.d.detector.start();
  }

  async stop(): Promise<void> {
    this.d.bus.removeListeners(this);
    this.d.detector.stop();
    this.stopping.abort();
    await this.queueing;
  }

  /** The detector's report (once at start, then after each settled change). */
  changed(detected: Set<string>): void {
    this.detected = detected;
    const first = !this.seenFirst;
    this.seenFirst = true;
    // At start the controller's first device check decides whether anything differs.
    if (!first) this.requestSync(`detected: ${[...detected].sort().join(', ') || 'none'}`);
  }

  /** A device record from the service: queue a sync only if it disagrees with the hardware or the record. */
  deviceSeen(device: Device): void {
    if (this.d.specs.length === 0) return;
    const listed: DeviceChannel[] = device.channels ?? [];
    const syncsBefore = this.syncsDone;
    const { signal } = this.stopping;
    this.queueing = this.queueing.then(() =>
      sleep(this.d.clock, RECONCILE_DELAY_MS, signal).then(
        // A sync that went through meanwhile left the service newer than this record says.
        () => (this.syncsDone === syncsBefore ? this.compare(listed) : undefined),
        () => undefined,
      ),
    );
  }

  /** Reads the record and queues a sync if the service, the record and the hardware disagree. */
  private async compare(listed: DeviceChannel[]): Promise<void> {
    let map: ChannelMap;
    try {
      map = await this.d.map.load();
    } catch {
      map = {}; // an unreadable record: the sync will say why
    }
    const plan = reconcile({ specs: this.d.specs, detected: this.detected, listed, map });
    if (isSettled(plan, map)) {
      this.known = Object.keys(map).sort();
      return;
    }
    this.put('the service does not list what is plugged in');
  }

  /** A sync went through: what the service now holds. */
  synced(map: ChannelMap): void {
    this.syncsDone++;
    this.known = Object.keys(map).sort();
  }

  report(): Pick<Partial<StatusSections>, 'channels'> {
    if (this.d.specs.length === 0) return {};
    return { channels: { detected: [...this.detected].sort(), known: this.known ?? null, pendingSyncs: this.d.outbox.unsettled(CHANNEL_SYNC_KIND) } };
  }

  requestSync(why: string): void {
    this.queueing = this.queueing.then(() => this.put(why));
  }

  private async put(why: string): Promise<void> {
    // Before the outbox is replayed, pending() does not yet show what a previous run queued.
    if (!(await this.d.outbox.ready())) return;
    const inFlight = new Set(this.d.inFlight());
    // A waiting sync reads the hardware and the service when it runs: one is enough.
    if (this.d.outbox.pending(CHANNEL_SYNC_KIND).some((i) => !inFlight.has(i.id))) return;
    try {
      await this.d.outbox.put(CHANNEL_SYNC_KIND, { why, detected: [...this.detected].sort() }, { group: CHANNEL_SYNC_KIND, priority: 10 });
    } catch (err) {
      this.d.logger?.warn({ err: String(err) }, 'cannot queue a channel sync');
    }
  }
}
