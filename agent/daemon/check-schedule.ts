// When the controller asks GET /v2/devices/me again: the re-verify and
// needs-pairing rates and the start-up backoff. The waits after a failure
// come from lib/backoff.ts, which also honours any Retry-After.
import type { BackoffOptions, FailureLike } from '../lib/backoff.js';
import { backoffDelay, retryAfterOf, SERVICE_429_LADDER } from '../lib/backoff.js';

const MINUTE = 60_000;

/**
 * The controller's checks before heartbeats run (and after a refresh that
 * could not reach the service): after the n-th failure in a row uniform in
 * [2 s, min(5 min, 5 s * 2^n)]; after a 429 the service's ladder from about
 * a second, or its Retry-After when longer.
 */
export const CHECK_BACKOFF: Pick<BackoffOptions, 'failure' | 'rateLimit'> = {
  failure: { baseMs: 5_000, capMs: 5 * MINUTE, floorMs: 2_000 },
  rateLimit: SERVICE_429_LADDER,
};

/** The next re-verify after a good one; paused looks again sooner, so uploads resume soon after the person unpauses. */
export function reverifyDelay(paused: boolean, random: () => number): number {
  return (paused ? 15 : 60) * MINUTE * (0.85 + 0.3 * random());
}

/** In needs-pairing, a low rate: the token will not come back by itself, only a person pairing does that. */
export function pairingCheckDelay(random: () => number): number {
  return (15 + 15 * random()) * MINUTE;
}

/** A check that failed in needs-pairing for another reason than a refusal (the network, say); a Retry-After when longer. */
export function pairingRetryDelay(e: FailureLike, failures: number, random: () => number): number {
  return Math.max(backoffDelay({ baseMs: 30_000, capMs: 5 * MINUTE, floorMs: 30_000 }, failures, random), retryAfterOf(e));
}

/** A failed re-verify while heartbeating: the heartbeats report reachability, so just come back later (a Retry-After when longer). */
export function reverifyRetryDelay(e: FailureLike, random: () => number): number {
  return Math.max(backoffDelay({ baseMs: 5 * MINUTE, capMs: 15 * MINUTE, floorMs: 2 * MINUTE }, 0, random), retryAfterOf(e));
}
