// When the controller asks GET /v2/devices/me again: the re-verify and
// needs-pairing rates and the start-up backoff.
import type { AgentError } from '../lib/errors.js';
import { backoffDelay } from '../lib/backoff.js';
import { MAX_RETRY_AFTER_MS } from '../lib/timing.js';

const MINUTE = 60_000;

/** The wait before the next start-up check: backoff, or a Retry-After if longer (capped like the scheduler's). */
export function startupRetryDelay(e: AgentError, failures: number, random: () => number): number {
  const wait = backoffDelay({ baseMs: 5_000, capMs: 5 * MINUTE, floorMs: 2_000 }, failures, random);
  const retryAfter = e.kind === 'rate-limited' ? Math.min(Math.max(0, e.details.retryAfterMs ?? 0), MAX_RETRY_AFTER_MS) : 0;
  return Math.max(wait, retryAfter);
}

/** The next re-verify after a good one; paused looks again sooner, so uploads resume soon after the person unpauses. */
export function reverifyDelay(paused: boolean, random: () => number): number {
  return (paused ? 15 : 60) * MINUTE * (0.85 + 0.3 * random());
}

/** In needs-pairing, a low rate: the token will not come back by itself, only a person pairing does that. */
export function pairingCheckDelay(random: () => number): number {
  return (15 + 15 * random()) * MINUTE;
}

/** A check that failed in needs-pairing for another reason than a refusal (the network, say). */
export function pairingRetryDelay(failures: number, random: () => number): number {
  return backoffDelay({ baseMs: 30_000, capMs: 5 * MINUTE, floorMs: 30_000 }, failures, random);
}

/** A failed re-verify while heartbeating: the heartbeats report reachability, so just come back later. */
export function reverifyRetryDelay(random: () => number): number {
  return backoffDelay({ baseMs: 5 * MINUTE, capMs: 15 * MINUTE, floorMs: 2 * MINUTE }, 0, random);
}
