// Channel reporting in the daemon: the detector says what is plugged in, and
// every change (and every return to online, when the service may have missed
// one) queues a channel sync in the outbox. The sync itself runs from the
// outbox while the service answers (sync-worker.ts), so a change made while
// offline survives power cuts and is applied on reconnection.
import type { Logger } from '../lib/logger.js';
import type { OutboxItem, PutOptions } from '../outbox/types.js';
import type { DaemonSnapshot, DaemonState } from '../daemon/snapshot.js';
import type { DaemonUnit } from '../daemon/unit.js';
import { CHANNEL_SYNC_KIND } from './sync-worker.js';

export interface ChannelsUnitDeps {
  /** How many channels the profile lists: none, nothing to do. */
  channelCount: number;
  detector: { start(): void; stop(): void };
  outbox: { put(kind: string, payload: unknown, opts?: PutOptions): Promise<OutboxItem>; pending(kind?: string): OutboxItem[] };
  /** Items running right now (a pending sync that is not running will read the new state itself). */
  inFlight: () => string[];
  logger?: Logger;
}

const REACHABLE: ReadonlySet<DaemonState> = new Set(['online', 'paused']);

export class ChannelsUnit implements DaemonUnit {
  readonly name = 'channels';
  private detected: string[] = [];
  /** Keys the service holds a channel for, as of the last sync (unknown before one). */
  private known: string[] | undefined;
  private reachable = false;
  private queueing: Promise<void> = Promise.resolve();

  constructor(private readonly d: ChannelsUnitDeps) {}

  start(): void {
    if (this.d.channelCount > 0) this.d.detector.start();
  }

  async stop(): Promise<void> {
    this.d.detector.stop();
    await this.queueing;
  }

  /** The detector's report (once at start, then after each settled change). */
  changed(detected: Set<string>): void {
    this.detected = [...detected].sort();
    this.requestSync(`detected: ${this.detected.join(', ') || 'none'}`);
  }

  onSnapshot(snap: DaemonSnapshot): void {
    const reachable = REACHABLE.has(snap.state);
    if (reachable && !this.reachable && this.d.channelCount > 0) this.requestSync('the service is reachable again');
    this.reachable = reachable;
  }

  /** A sync went through: what the service now holds. */
  synced(map: Record<string, string>): void {
    this.known = Object.keys(map).sort();
  }

  report(): Record<string, unknown> {
    if (this.d.channelCount === 0) return {};
    return { channels: { detected: this.detected, known: this.known ?? null, pendingSyncs: this.d.outbox.pending(CHANNEL_SYNC_KIND).length } };
  }

  requestSync(why: string): void {
    this.queueing = this.queueing.then(async () => {
      const inFlight = new Set(this.d.inFlight());
      // A waiting sync reads the hardware and the service when it runs: one is enough.
      if (this.d.outbox.pending(CHANNEL_SYNC_KIND).some((i) => !inFlight.has(i.id))) return;
      try {
        await this.d.outbox.put(CHANNEL_SYNC_KIND, { why, detected: this.detected }, { group: CHANNEL_SYNC_KIND, priority: 10 });
      } catch (err) {
        this.d.logger?.warn({ err: String(err) }, 'cannot queue a channel sync');
      }
    });
  }
}
