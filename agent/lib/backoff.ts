// How long to wait before trying again: the one home of the agent's retry
// rules, in the manner of tailscale's util/backoff. A loop that retries (the
// heartbeat scheduler, the outbox's dispatcher, the controller's device
// checks, the token source's refresh, pairing's code requests) owns one
// Backoff: it tells it every failure and every success, and the object
// keeps the failures in a row, chooses the wait, and honours Retry-After.
//
// Two ladders, one object:
// - a failure (the network, a 5xx, a timeout): exponential backoff with full
//   jitter (AWS architecture blog), uniform in [floor, min(cap, base * 2^n)]
//   after the n-th failure in a row, so a fleet that lost the network
//   together does not come back together;
// - a 429 (kind `rate-limited`): the service's rule, "pause about a second
//   and lengthen the pause on every further 429" (docs/service-api.md,
//   "Rate limits"), as one formula for every caller (rateLimitDelay): the
//   caller's base doubled on every further 429, jittered by +-25 %, capped,
//   and never shorter than the Retry-After the answer carried. A failure of
//   another kind ends a row of 429s; a 429 does not end a row of failures.
//
// Retry-After is clamped here and only here (retryAfterOf): the parser
// (api/rate-limit.ts) reads what the header says, bounding only an HTTP-date
// it cannot anchor to the server's clock.
import type { RateLimitInfo } from './errors.js';
import { MAX_RETRY_AFTER_MS } from './timing.js';

export interface BackoffPolicy {
  baseMs: number;
  capMs: number;
  floorMs?: number;
}

/** Full jitter: uniform in [floor, min(cap, base * 2^attempt)]. */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const floor = policy.floorMs ?? 0;
  const ceiling = Math.max(floor, Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(attempt, 30)));
  return floor + random() * (ceiling - floor);
}

/** The 429 ladder of one loop: the first 429's nominal wait, and the longest. */
export interface RateLimitLadder {
  baseMs: number;
  capMs: number;
}

/** The service's own advice (docs/service-api.md, "Rate limits"): about a second, doubled on every further 429, at most 5 min. */
export const SERVICE_429_LADDER: RateLimitLadder = { baseMs: 1_000, capMs: 5 * 60_000 };

/** What a failure may say about waiting: an AgentError, or a stand-in with its kind and details. */
export interface FailureLike {
  kind: string;
  details: { retryAfterMs?: number | undefined };
}

/** A Retry-After (or the window hint that stands for it) as a wait: never negative, never longer than MAX_RETRY_AFTER_MS. */
export function honoured(retryAfterMs: number | undefined): number {
  const ms = retryAfterMs ?? 0;
  return Number.isNaN(ms) ? 0 : Math.min(Math.max(0, ms), MAX_RETRY_AFTER_MS);
}

/** The wait a failure's Retry-After asks for, honoured (0 when it carries none). */
export const retryAfterOf = (e: FailureLike | undefined): number => honoured(e?.details.retryAfterMs);

/**
 * The one 429 formula: after the n-th 429 in a row (n from 1), the ladder's
 * base doubled n-1 times, jittered by +-25 % and capped, or the Retry-After
 * when that is longer. The jitter is narrower than a third, so every further
 * 429 waits longer than the one before whatever the draws: the service asks
 * for a longer pause on every further 429, and a caller's floor (the
 * heartbeat's 60 s spacing) must not flatten the first rungs into equal waits.
 */
export function rateLimitDelay(ladder: RateLimitLadder, n: number, retryAfterMs: number | undefined, random: () => number): number {
  const nominal = ladder.baseMs * 2 ** Math.min(Math.max(n, 1) - 1, 30);
  return Math.max(honoured(retryAfterMs), Math.min(ladder.capMs, nominal * (0.75 + 0.5 * random())));
}

/**
 * A leaky bucket's drip: the ms one request's worth of allowance takes to
 * come back (window / limit), from the service's rate-limit headers;
 * undefined when they do not say. Not honoured yet: a caller waiting on it
 * passes it through honoured(), as any Retry-After.
 */
export function dripMs(rl: RateLimitInfo | undefined): number | undefined {
  if (rl?.limit === undefined || rl.limit <= 0 || rl.windowMs === undefined || rl.windowMs <= 0) return undefined;
  return Math.ceil(rl.windowMs / rl.limit);
}

export interface BackoffOptions {
  /** After a failure that is not a 429 (and after a 429 too when there is no rateLimit ladder). */
  failure: BackoffPolicy;
  /** After a 429: its ladder. Absent, a 429 counts as a failure, still waiting at least its Retry-After. */
  rateLimit?: RateLimitLadder;
  random: () => number;
}

/** One loop's backoff: the failures and 429s in a row, and the wait each one calls for. */
export class Backoff {
  private n = 0;
  private limited = 0;
  private row = 0;

  constructor(private readonly o: BackoffOptions) {}

  /** Failures in a row (429s not counted when they have a ladder of their own). */
  get failures(): number {
    return this.n;
  }

  /** 429s in a row. */
  get rateLimits(): number {
    return this.limited;
  }

  /** Failed attempts of either kind since the last success. */
  get inARow(): number {
    return this.row;
  }

  /** An attempt went through: every row ends. */
  succeeded(): void {
    this.n = 0;
    this.limited = 0;
    this.row = 0;
  }

  /** An attempt failed with `e`: counted, and the wait before the next one returned (agent ms). */
  failed(e?: FailureLike): number {
    const ladder = this.count(e);
    if (ladder) return rateLimitDelay(this.o.rateLimit as RateLimitLadder, this.limited, e?.details.retryAfterMs, this.o.random);
    const wait = backoffDelay(this.o.failure, this.n, this.o.random);
    return e?.kind === 'rate-limited' ? Math.max(wait, retryAfterOf(e)) : wait;
  }

  /**
   * An attempt failed with `e`, counted but no wait drawn: for a caller whose
   * wait comes from elsewhere in this state (a fixed re-verify rate), so the
   * rows stay true without spending a random draw. True when it was a 429 on its ladder.
   */
  count(e?: FailureLike): boolean {
    this.row++;
    if (e?.kind === 'rate-limited' && this.o.rateLimit !== undefined) {
      this.limited++;
      return true;
    }
    // Another failure ends a row of 429s.
    this.limited = 0;
    this.n++;
    return false;
  }
}
