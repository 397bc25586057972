// The outbox in the daemon: opened (replayed) at start, flushed and closed
// at stop, and replayed towards the service by the dispatcher only while the
// controller says the service answers. Other units put work through here so
// the dispatcher looks at new work at once.
import type { Logger } from '../lib/logger.js';
import { CANCEL_WAIT_MS } from '../lib/timing.js';
import type { DaemonSnapshot, DaemonState } from '../core/state.js';
import type { DaemonUnit } from '../core/unit.js';
import type { StatusSections } from '../core/status-document.js';
import type { EventBus } from '../core/event-bus.js';
import type { Dispatcher, KindFailing, Worker } from './dispatcher.js';
import type { LazyWorkers } from './lazy-workers.js';
import type { Outbox } from './outbox.js';
import type { OutboxItem, PutOptions } from './types.js';

const REACHABLE: ReadonlySet<DaemonState> = new Set(['online', 'paused']);


export class OutboxUnit implements DaemonUnit {
  readonly name = 'outbox';
  private opened: Promise<boolean> | undefined;

  constructor(
    private readonly outbox: Outbox,
    private readonly dispatcher: Dispatcher,
    private readonly bus: EventBus,
    private readonly logger?: Logger,
    /** The workers loaded with the first item of their kind (features' `outbox` declarations). */
    private readonly lazy?: LazyWorkers,
  ) {}

  /** A feature's kinds: their workers load when the first item of one of them is put or replayed. */
  register(kinds: readonly string[], load: () => Promise<readonly Worker[]>): void {
    if (this.lazy === undefined) throw new Error('this outbox takes no lazily loaded workers');
    this.lazy.register(kinds, load);
  }

  start(): void {
    // A kind that waited may go (the upload window opened): look at the queue now rather than at the next retry.
    this.bus.on('outboxWorkReady', this, () => this.dispatcher.kick());
    this.opened = this.outbox.open().then(
      async () => {
        // Items replayed of a kind whose worker is not loaded yet: load it before the first look.
        const lazy = this.lazy;
        if (lazy !== undefined) await Promise.all(lazy.kinds().filter((k) => this.outbox.pending(k).length > 0).map((k) => lazy.ensure(k)));
        this.dispatcher.start();
        return true;
      },
      (err: unknown) => {
        // The agent's main job (heartbeats) goes on without a queue; the log says why.
        this.logger?.error({ err: err instanceof Error ? err.message : String(err) }, 'cannot open the outbox; queued work is unavailable until restart');
        return false;
      },
    );
  }

  async stop(): Promise<void> {
    this.bus.removeListeners(this);
    if (!(await this.opened)) return;
    await this.dispatcher.stop();
    // Everything acknowledged is on flash already; this writes what is still in the window.
    await this.outbox.close();
  }

  onSnapshot(snap: DaemonSnapshot): void {
    this.dispatcher.setOpen(REACHABLE.has(snap.state));
  }

  /** Resolves once the outbox was replayed from disk (false when it could not be): pending() is complete from then on. */
  async ready(): Promise<boolean> {
    return (await this.opened) ?? false;
  }

  async put(kind: string, payload: unknown, opts?: PutOptions): Promise<OutboxItem> {
    if (!(await this.opened)) throw new Error('the outbox is not open');
    await this.lazy?.ensure(kind);
    const item = await this.outbox.put(kind, payload, opts);
    this.dispatcher.kick();
    return item;
  }

  /**
   * Cancels a pending item: ended in the outbox at once (dead, reason
   * 'cancelled: …', on flash with the next group commit), and an attempt in
   * flight aborted; resolves once that attempt has stopped (at most
   * CANCEL_WAIT_MS: the answer must not hang on a stuck socket). False when
   * the item was not pending.
   */
  async cancel(id: string, why: string): Promise<boolean> {
    if (!(await this.opened)) return false;
    if (!(await this.outbox.cancel(id, why))) return false;
    if (this.dispatcher.abort(id, why)) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.dispatcher.settled(id), new Promise<void>((r) => (timer = setTimeout(r, CANCEL_WAIT_MS)))]);
      clearTimeout(timer);
    }
    return true;
  }

  /** Marks a pending item urgent (taken before the others) or not, durably; false when it is not pending. */
  async setUrgent(id: string, urgent: boolean): Promise<boolean> {
    if (!(await this.opened)) return false;
    const ok = await this.outbox.setUrgent(id, urgent);
    if (ok) this.dispatcher.kick();
    return ok;
  }

  pending(kind?: string): OutboxItem[] {
    return this.opened === undefined ? [] : safe(() => this.outbox.pending(kind), []);
  }

  unsettled(kind: string): number {
    return this.opened === undefined ? 0 : safe(() => this.outbox.unsettled(kind), 0);
  }

  /** Every item still held, oldest first: pending ones and ended ones until their segment is reclaimed. */
  items(): OutboxItem[] {
    return this.opened === undefined ? [] : safe(() => this.outbox.items(), []);
  }

  inFlight(): string[] {
    return this.dispatcher.view().inFlight;
  }

  /** The kinds whose attempts keep failing (the dispatcher's), absent when none. */
  failing(): Record<string, KindFailing> | undefined {
    return this.dispatcher.view().failing;
  }

  /** A worker's progress record for item `id` (group commit: on flash with the next flush). */
  progress(id: string, data: unknown): Promise<void> {
    return this.outbox.progress(id, data);
  }

  /** Resolves once every record written so far is on flash. */
  flush(): Promise<void> {
    return this.outbox.flush();
  }

  report(): Pick<Partial<StatusSections>, 'queue'> {
    // QueueReport: what tsc holds to the reader's declaration (queue-section.ts).
    const stats = safe(() => this.outbox.stats(), undefined);
    return stats === undefined ? {} : { queue: { ...stats, ...this.dispatcher.view() } };
  }
}

/** Before open() finished the outbox has nothing to show. */
function safe<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}
