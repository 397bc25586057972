// Replays the outbox while the service can be reached: oldest first, a few
// items in flight, each kind run by its worker. A failed item stays at the
// front and the whole queue waits (lib/backoff.ts: the service's 429 ladder
// from about a second, jittered backoff otherwise); the rate-limit headers
// slow it down before a 429 happens. Nothing is retried forever: after
// MAX_ATTEMPTS an item is dead-lettered with its last error as the reason.
import { Backoff, dripMs, honoured, SERVICE_429_LADDER } from '../lib/backoff.js';
import type { Clock, Timer } from '../lib/clock.js';
import type { RateLimitInfo } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { classify, type Outcome } from './outcome.js';
import type { OutboxItem } from './types.js';

export interface Worker {
  readonly kind: string;
  /** One attempt; rejects are classified like any error (see outcome.ts). */
  run(item: OutboxItem, signal: AbortSignal): Promise<Outcome>;
  /** False while this kind must wait (uploads outside their window); the others go on. */
  ready?(): boolean;
}

/** The part of the outbox the dispatcher needs. */
export interface OutboxView {
  pending(kind?: string): OutboxItem[];
  done(id: string, reason?: string): Promise<void>;
  dead(id: string, reason: string): Promise<void>;
}

export interface DispatcherDeps {
  outbox: OutboxView;
  workers: Worker[];
  clock: Clock;
  random: () => number;
  logger?: Logger;
  /** The service's latest rate-limit headers. */
  rateLimit?: () => RateLimitInfo | undefined;
  /**
   * After a 401: the token source's verdict (auth/token-source.ts
   * `callRefused`, the one 401 policy): 'retry' sends again at once with the
   * newer token; anything else waits like any other failure.
   */
  unauthorized?: (why: string, sentAt: number) => Promise<string>;
  /** Items of one kind in flight at once (default 2). */
  window?: number;
  /** After every attempt, whatever its outcome (the status file shows the queue). */
  onSettled?: () => void;
}

export const MAX_ATTEMPTS = 50;
/** After a failure, uniform in [1 s, min(5 min, 5 s * 2^n)]; after a 429, the service's ladder from about a second. */
const DISPATCH_BACKOFF = { failure: { baseMs: 5_000, capMs: 5 * 60_000, floorMs: 1_000 }, rateLimit: SERVICE_429_LADDER };

/**
 * A kind whose attempts keep failing: since its first failure in a row (an
 * attempt that finished or moved its work forward ends the row), how many,
 * and the last error. Shown once FAILING_AFTER attempts in a row failed: one
 * failure alone is usually a glitch the next attempt gets past.
 */
export interface KindFailing {
  /** When the row's first failed attempt ended: wall ISO time and agent-monotonic ms. */
  since: { at: string; monotonic: number };
  attempts: number;
  lastError: string;
}

export interface DispatcherView {
  inFlight: string[];
  attempts: Record<string, { count: number; lastError: string }>;
  /** Agent-monotonic time the queue waits until, when it waits. */
  waitingUntil: number | undefined;
  /** Kinds whose attempts have kept failing (at least FAILING_AFTER in a row), by kind; absent when none. */
  failing?: Record<string, KindFailing>;
}

/** Failed attempts in a row of one kind before it is shown as failing (status: storage or the service refusing). */
export const FAILING_AFTER = 2;

export class Dispatcher {
  readonly name = 'outbox';
  private running = false;
  private gateOpen = false;
  private readonly inFlight = new Map<string, { kind: string; ac: AbortController; done: Promise<void>; cancelled: boolean }>();
  private readonly attempts = new Map<string, { count: number; lastError: string }>();
  private waitUntil = 0;
  private timer: Timer | undefined;
  private emptyBucketSeen: RateLimitInfo | undefined;
  /** The queue's failures and 429s in a row, and the waits they call for. */
  private readonly backoff: Backoff;
  /** Per kind, the row of failed attempts going on now (KindFailing). */
  private readonly failingRows = new Map<string, KindFailing>();

  constructor(private readonly d: DispatcherDeps) {
    this.backoff = new Backoff({ ...DISPATCH_BACKOFF, random: d.random });
  }

  start(): void {
    this.running = true;
    this.pump();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.timer?.cancel();
    this.timer = undefined;
    for (const f of this.inFlight.values()) f.ac.abort(new Error('stopping'));
    await Promise.allSettled([...this.inFlight.values()].map((f) => f.done));
  }

  /** Work only while the service answers: the controller's state says when. */
  setOpen(open: boolean): void {
    if (open === this.gateOpen) return;
    this.gateOpen = open;
    if (open) this.pump();
  }

  /** Something was put: look at once. */
  kick(): void {
    this.pump();
  }

  /**
   * Stops the attempt at item `id` now (it was cancelled): its worker's
   * signal is aborted, and whatever the attempt ends with is not counted as
   * a failure (no retry, no backoff for the rest of the queue). The caller
   * ends the item in the outbox. False when it is not running.
   */
  abort(id: string, why: string): boolean {
    const f = this.inFlight.get(id);
    if (f === undefined) return false;
    f.cancelled = true;
    f.ac.abort(new Error(why));
    return true;
  }

  /** Resolves once the attempt at `id` (if any) has ended. */
  async settled(id: string): Promise<void> {
    await this.inFlight.get(id)?.done;
  }

  view(): DispatcherView {
    const now = this.d.clock.now();
    // A row whose kind has nothing left to send is over (its items went, or were given up).
    for (const kind of [...this.failingRows.keys()]) if (this.d.outbox.pending(kind).length === 0) this.failingRows.delete(kind);
    const failing = [...this.failingRows].filter(([, f]) => f.attempts >= FAILING_AFTER).map(([kind, f]) => [kind, { ...f }] as const);
    return {
      inFlight: [...this.inFlight.keys()],
      attempts: Object.fromEntries(this.attempts),
      waitingUntil: this.waitUntil > now ? this.waitUntil : undefined,
      ...(failing.length > 0 && { failing: Object.fromEntries(failing) }),
    };
  }

  /** An attempt of `kind` failed (retry), or finished or moved its work forward (the row ends). */
  private noteRow(kind: string, failed: boolean, error?: string): void {
    if (!failed) {
      this.failingRows.delete(kind);
      return;
    }
    const row = this.failingRows.get(kind);
    if (row === undefined) this.failingRows.set(kind, { since: { at: new Date(this.d.clock.wallNow()).toISOString(), monotonic: this.d.clock.now() }, attempts: 1, lastError: error ?? '' });
    else {
      row.attempts++;
      row.lastError = error ?? row.lastError;
    }
  }

  private pump(): void {
    if (!this.running || !this.gateOpen) return;
    const now = this.d.clock.now();
    const rl = this.d.rateLimit?.();
    // The bucket is empty: one request's worth drips back every window/limit ms, honoured like a Retry-After.
    // Once per answer: the headers stay the same until another request replaces them.
    const drip = rl?.remaining === 0 ? dripMs(rl) : undefined;
    if (rl !== undefined && drip !== undefined && rl !== this.emptyBucketSeen && this.waitUntil <= now) {
      this.emptyBucketSeen = rl;
      this.waitUntil = now + honoured(drip);
    }
    if (now < this.waitUntil) return this.arm(this.waitUntil - now);
    // The window is per kind: a long upload must not hold back a channel sync.
    const window = this.d.window ?? 2;
    const busy = new Map<string, number>();
    for (const f of this.inFlight.values()) busy.set(f.kind, (busy.get(f.kind) ?? 0) + 1);
    const waiting = new Set(this.d.workers.filter((w) => w.ready !== undefined && !w.ready()).map((w) => w.kind));
    // Urgent items first (someone asked for them), each group in queue order.
    const pending = this.d.outbox.pending();
    for (const item of [...pending.filter((i) => i.urgent === true), ...pending.filter((i) => i.urgent !== true)]) {
      if (this.inFlight.has(item.id) || waiting.has(item.kind) || (busy.get(item.kind) ?? 0) >= window) continue;
      busy.set(item.kind, (busy.get(item.kind) ?? 0) + 1);
      this.launch(item);
    }
  }

  private arm(ms: number): void {
    if (this.timer) return;
    this.timer = this.d.clock.setTimer(() => {
      this.timer = undefined;
      this.pump();
    }, ms);
  }

  private launch(item: OutboxItem): void {
    const ac = new AbortController();
    const entry = { kind: item.kind, ac, done: Promise.resolve(), cancelled: false };
    this.inFlight.set(item.id, entry);
    entry.done = this.attempt(item, ac, () => entry.cancelled)
      .catch((err: unknown) => this.d.logger?.warn({ id: item.id, err: String(err) }, 'cannot record an outbox outcome'))
      .finally(() => {
        this.inFlight.delete(item.id);
        this.d.onSettled?.();
        this.pump();
      });
  }

  /**
   * The outcome is in the outbox's memory at once (the item is no longer
   * pending); its record reaches flash with the next group commit. Waiting for
   * that would hold the slot half a second per item and cap replay far below
   * the service's rate limit; a crash before it only replays an item whose
   * work is idempotent (a sync, an upload the index knows).
   */
  private record(item: OutboxItem, written: Promise<void>): void {
    written.catch((err: unknown) => this.d.logger?.warn({ id: item.id, err: String(err) }, 'cannot record an outbox outcome'));
  }

  private async attempt(item: OutboxItem, ac: AbortController, cancelled: () => boolean): Promise<void> {
    const worker = this.d.workers.find((w) => w.kind === item.kind);
    const sentAt = this.d.clock.now();
    const outcome: Outcome = worker ? await worker.run(item, ac.signal).catch((err: unknown) => classify(err)) : { result: 'dead', reason: `no worker for kind '${item.kind}'` };
    if (!this.running) return;
    // Cancelled while it ran: the canceller ended the item; a finish that won the race is still recorded (the outbox ignores the end of an ended item).
    if (cancelled()) {
      this.attempts.delete(item.id);
      if (outcome.result === 'done') this.record(item, this.d.outbox.done(item.id, outcome.note));
      return;
    }
    if (outcome.result === 'done') {
      this.attempts.delete(item.id);
      this.noteRow(item.kind, false);
      this.backoff.succeeded();
      return this.record(item, this.d.outbox.done(item.id, outcome.note));
    }
    if (outcome.result === 'dead') {
      this.attempts.delete(item.id);
      this.d.logger?.warn({ id: item.id, kind: item.kind, reason: outcome.reason }, `outbox item dead-lettered: ${outcome.reason}`);
      return this.record(item, this.d.outbox.dead(item.id, outcome.reason));
    }
    const e = outcome.error;
    // MAX_ATTEMPTS counts failures in a row: an attempt that moved its work forward starts a new row.
    const a = { count: (outcome.progressed === true ? 0 : (this.attempts.get(item.id)?.count ?? 0)) + 1, lastError: e.message };
    // The kind's row too: work that moved forward is not refused.
    if (outcome.progressed === true) this.noteRow(item.kind, false);
    this.noteRow(item.kind, true, e.message);
    if (a.count >= MAX_ATTEMPTS) {
      this.attempts.delete(item.id);
      const reason = `gave up after ${a.count} attempts: ${e.message}`;
      this.d.logger?.warn({ id: item.id, kind: item.kind }, `outbox item dead-lettered: ${reason}`);
      return this.record(item, this.d.outbox.dead(item.id, reason));
    }
    if (e.kind === 'unauthorized' && this.d.unauthorized) {
      const r = await this.d.unauthorized(`the service answered 401 (${item.kind})`, sentAt).catch(() => 'not-token');
      if (r === 'retry') {
        this.attempts.set(item.id, a);
        return;
      }
      a.lastError = `${e.message}; not a token problem (the token in use was refreshed or is being verified), so this item waits like any refused call`;
    }
    this.attempts.set(item.id, a);
    // A 429 climbs its ladder and honours Retry-After; another failure ends a row of 429s, as in the heartbeat's rules.
    const wait = this.backoff.failed(e);
    this.waitUntil = Math.max(this.waitUntil, this.d.clock.now() + wait);
    this.d.logger?.debug({ id: item.id, kind: item.kind, attempt: a.count, waitMs: Math.round(wait), err: a.lastError }, 'outbox item will be retried');
  }
}
