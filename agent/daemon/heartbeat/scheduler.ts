// One heartbeat loop: at most one request in flight, one timer armed, all
// times from the injected monotonic clock (a wall-clock jump changes nothing).
// The timing rules live in policy.ts; this file owns the I/O.
import type { Clock, Timer } from '../../lib/clock.js';
import { AgentError } from '../../lib/errors.js';
import type { ApiResult } from '../../api/types.js';
import { guarded } from '../abort.js';
import { probeDelay, probeOnce, unreachable } from '../reachability.js';
import { Backoff } from '../../lib/backoff.js';
import { earliestNext, firstAttemptAt, HEARTBEAT_BACKOFF, lastEndOf, nextAfterSuccess, nextAfterWait, type AttemptRecord, type Bounds } from './policy.js';

export type HeartbeatResult = 'ok' | 'paused' | 'rate-limited' | 'failed' | 'aborted';

export interface HeartbeatOutcome {
  result: HeartbeatResult;
  startedAt: number;
  endedAt: number;
  /** The next attempt, agent-monotonic. */
  nextAt: number;
  consecutiveFailures: number;
  error?: AgentError;
  meta?: ApiResult<void>['meta'];
}

export interface HeartbeatTransport {
  heartbeat(signal: AbortSignal): Promise<ApiResult<void>>;
  health(signal: AbortSignal): Promise<unknown>;
}

export interface SchedulerOptions {
  clock: Clock;
  random: () => number;
  transport: HeartbeatTransport;
  bounds: Bounds;
  /** The previous attempt, from this process or (via the runtime dir) the one before it. */
  lastAttempt?: AttemptRecord | undefined;
  /** Saves the attempt record before each request and after it ends. */
  persist: (rec: AttemptRecord) => Promise<void>;
  onOutcome: (o: HeartbeatOutcome) => void;
}

export class HeartbeatScheduler {
  private running = false;
  private timer: Timer | undefined;
  private inFlight: { ac: AbortController; since: number; done: Promise<void> } | undefined;
  private last: AttemptRecord | undefined;
  private nextAt = 0;
  private probeAt: number | undefined;
  private probes = 0;
  /** A probe already cut this outage's backoff short once: no more until a success. */
  private shortcutUsed = false;
  /** The failures and 429s in a row, and the waits they call for. */
  private readonly backoff: Backoff;

  constructor(private readonly o: SchedulerOptions) {
    this.backoff = new Backoff({ ...HEARTBEAT_BACKOFF, random: o.random });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    const now = this.o.clock.now();
    this.last = this.o.lastAttempt;
    // No backlog: the first heartbeat goes as soon as the spacing allows (spread out just after a boot).
    this.nextAt = firstAttemptAt(this.last, now, this.o.bounds, this.o.random);
    this.arm();
  }

  /** Cancels the timer and aborts the request in flight; resolves once it has settled. */
  async stop(): Promise<void> {
    this.running = false;
    this.timer?.cancel();
    this.timer = undefined;
    const f = this.inFlight;
    if (f) {
      f.ac.abort(new AgentError('network', 'heartbeat aborted: stopping', { code: 'ABORTED' }));
      await f.done;
    }
  }

  get lastAttempt(): AttemptRecord | undefined {
    return this.last;
  }

  /** What the health check and the status need: is something due, and when. */
  view(): { running: boolean; nextAt: number | undefined; probeAt: number | undefined; inFlightSince: number | undefined } {
    return {
      running: this.running,
      nextAt: this.running ? this.nextAt : undefined,
      probeAt: this.running ? this.probeAt : undefined,
      inFlightSince: this.inFlight?.since,
    };
  }

  private arm(): void {
    this.timer?.cancel();
    this.timer = undefined;
    if (!this.running || this.inFlight) return;
    const due = Math.min(this.nextAt, this.probeAt ?? Infinity);
    this.timer = this.o.clock.setTimer(() => this.fire(), Math.max(0, due - this.o.clock.now()));
  }

  private fire(): void {
    this.timer = undefined;
    if (!this.running || this.inFlight) return;
    const now = this.o.clock.now();
    // A real timer may fire a hair early after --time-scale rounding: re-arm for the rest.
    if (now >= this.nextAt) this.track((ac) => this.beat(ac));
    else if (this.probeAt !== undefined && now >= this.probeAt) this.track((ac) => this.probe(ac));
    else this.arm();
  }

  private track(work: (ac: AbortController) => Promise<void>): void {
    const ac = new AbortController();
    const entry = { ac, since: this.o.clock.now(), done: Promise.resolve() };
    this.inFlight = entry;
    entry.done = work(ac).finally(() => {
      this.inFlight = undefined;
      this.arm();
    });
  }

  private async beat(ac: AbortController): Promise<void> {
    const planned: AttemptRecord = { startedAt: this.o.clock.now() };
    // Written BEFORE the request: a restart must see this attempt even if we die during it.
    await this.o.persist(planned).catch(() => undefined);
    if (ac.signal.aborted) return;
    const startedAt = planned.startedAt;
    let outcome: Omit<HeartbeatOutcome, 'nextAt' | 'consecutiveFailures' | 'endedAt'>;
    try {
      const res = await guarded(this.o.clock, ac, (s) => this.o.transport.heartbeat(s));
      outcome = { result: 'ok', startedAt, meta: res.meta };
    } catch (err) {
      const error = err instanceof AgentError ? err : new AgentError('internal', String(err));
      const result: HeartbeatResult = !this.running
        ? 'aborted'
        : error.kind === 'paused'
          ? 'paused'
          : error.kind === 'rate-limited'
            ? 'rate-limited'
            : 'failed';
      outcome = { result, startedAt, error };
    }
    const endedAt = this.o.clock.now();
    this.last = { startedAt, endedAt };
    await this.o.persist(this.last).catch(() => undefined);
    if (!this.running) return;
    this.schedule(outcome, endedAt);
  }

  private schedule(o: Omit<HeartbeatOutcome, 'nextAt' | 'consecutiveFailures' | 'endedAt'>, endedAt: number): void {
    const r = this.o.random;
    this.probeAt = undefined;
    if (o.result === 'ok' || o.result === 'paused') {
      // A paused device is still answered by the service: keep it shown as alive.
      this.backoff.succeeded();
      this.shortcutUsed = false;
      this.nextAt = nextAfterSuccess(this.o.bounds, o.startedAt, endedAt, r);
    } else {
      // A 429 climbs its own ladder and honours Retry-After; any other failure ends a row of 429s (lib/backoff.ts).
      this.nextAt = nextAfterWait(endedAt, this.backoff.failed(o.error));
      // Unreachable: watch for the network to come back with cheap health probes, so
      // the one heartbeat after reconnection goes out as soon as the spacing allows.
      // Once per outage only: if the hurried attempt fails too, /health answering
      // says nothing about the heartbeat, and probing again would undo the backoff
      // (a fleet would retry in lockstep every 62 s).
      if (unreachable(o.error) && !this.shortcutUsed) {
        this.probes = 0;
        this.probeAt = earliestNext(endedAt);
      }
    }
    const failures = o.result === 'rate-limited' ? this.backoff.rateLimits : this.backoff.failures;
    this.o.onOutcome({ ...o, endedAt, nextAt: this.nextAt, consecutiveFailures: failures });
  }

  private async probe(ac: AbortController): Promise<void> {
    const reachable = await probeOnce(this.o.clock, ac, (s) => this.o.transport.health(s));
    if (!this.running) return;
    const now = this.o.clock.now();
    if (reachable) {
      this.probeAt = undefined;
      this.shortcutUsed = true;
      this.nextAt = Math.max(now, earliestNext(lastEndOf(this.last, now)));
    } else {
      this.probes++;
      const at = now + probeDelay(this.probes, this.o.random);
      this.probeAt = at < this.nextAt ? at : undefined;
    }
  }
}
