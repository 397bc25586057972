// The heartbeat timing rules as pure functions of agent-monotonic times, so
// the invariants can be read (and tested) in one place:
//   - attempts >= 60 s apart at the service, whatever happened;
//   - while the service answers, successes <= 300 s apart at the service.
// The service sees a request somewhere between our send and the end of our
// wait for it, so spacing is measured from the END of the previous attempt
// and the 300 s ceiling from the START of the previous success.
import type { BackoffOptions } from '../../lib/backoff.js';
import { ATTEMPT_GUARD_MS, HEARTBEAT_WINDOW_SECONDS, MAX_AFTER_SUCCESS_MS, MIN_SPACING_MS, SPACING_MARGIN_MS } from '../../lib/timing.js';

const RATE_LIMIT_CAP_MS = 300_000;
const FAILURE_CAP_MS = 300_000;

/** Agent-monotonic time at boot (see lastEndOf). */
export const BOOT = 0;

export interface Bounds {
  minMs: number;
  maxMs: number;
}

/**
 * A profile's heartbeat bounds in agent ms, exactly as written. The profile
 * loader refuses bounds outside HEARTBEAT_WINDOW_SECONDS, so nothing here
 * needs to change them; a caller that skipped the loader gets an error, not
 * a silently different schedule.
 */
export function boundsOf(b: { minSeconds: number; maxSeconds: number }): Bounds {
  const { min, max } = HEARTBEAT_WINDOW_SECONDS;
  if (!(b.minSeconds >= min && b.minSeconds <= b.maxSeconds && b.maxSeconds <= max)) {
    throw new RangeError(`heartbeat bounds ${b.minSeconds}..${b.maxSeconds} s are outside the ${min}..${max} s window`);
  }
  return { minMs: b.minSeconds * 1000, maxMs: b.maxSeconds * 1000 };
}

export interface AttemptRecord {
  /** Agent-monotonic time the attempt was sent. */
  startedAt: number;
  /** When we stopped waiting for it; absent if the process died mid-request. */
  endedAt?: number;
}

/**
 * When the previous attempt may have reached the service at the latest. A
 * record without an end comes from a process that died mid-request: its
 * request cannot have arrived after that process died, i.e. before `now`.
 *
 * No record at all is not proof of no recent attempt: the record lives on
 * tmpfs, so a fast reboot (seconds, on a Pi) loses it while the service
 * still has the heartbeat sent just before. Agent time is CLOCK_MONOTONIC
 * (times the scale), which starts at 0 at boot, so boot is the latest an
 * attempt we have no record of can have ended: the first heartbeat after a
 * reboot waits until 62 agent-s after boot (and firstAttemptAt spreads it
 * further), and costs nothing otherwise.
 */
export function lastEndOf(rec: AttemptRecord | undefined, now: number): number {
  if (rec === undefined || !Number.isFinite(rec.startedAt)) return BOOT;
  // From the future (another boot, another time scale): trust nothing, wait a full spacing.
  if (rec.startedAt > now || (rec.endedAt !== undefined && rec.endedAt > now)) return now;
  if (rec.endedAt !== undefined && Number.isFinite(rec.endedAt)) return Math.max(rec.endedAt, rec.startedAt);
  return Math.min(rec.startedAt + ATTEMPT_GUARD_MS + 5_000, now);
}

export function earliestNext(lastEnd: number): number {
  return lastEnd + MIN_SPACING_MS + SPACING_MARGIN_MS;
}

/**
 * How long after boot a process without an attempt record counts as booting
 * with its fleet. A power cut reboots every camera on the site within a
 * minute or so, and every one of them finds its tmpfs record gone: if all
 * heartbeated 62 s after boot, the service would meet them within the same
 * minute (a thundering herd). A Pi starts the agent well inside two minutes
 * of boot. Past this, no record means a first start or a wiped runtime dir on
 * a machine already up, which is not part of a herd: a first heartbeat held
 * back then would only delay an installer or a freshly booted test machine.
 */
export const RECENT_BOOT_MS = 2 * 60_000;

/**
 * When a process's first heartbeat may go. With a record, or long after boot:
 * as soon as the spacing allows (a restart or a first start costs no wait).
 * Without a record shortly after boot, the wait past the earliest is drawn
 * as a unit in a steady fleet would find its next heartbeat from a random
 * instant: a uniform share of an interval drawn in proportion to its length
 * (intervals are uniform in [min, max]). So a fleet that boots together
 * reaches the service at about its usual rate rather than in one wave. Never
 * later than MAX_AFTER_SUCCESS_MS after now: the device check that precedes
 * the first heartbeat is the service's latest word from the unit.
 */
export function firstAttemptAt(rec: AttemptRecord | undefined, now: number, bounds: Bounds, random: () => number): number {
  const earliest = earliestNext(lastEndOf(rec, now));
  if (rec !== undefined || now - BOOT >= RECENT_BOOT_MS) return Math.max(now, earliest);
  const { minMs: a, maxMs: b } = bounds;
  const interval = Math.sqrt(a * a + random() * (b * b - a * a));
  const wait = random() * interval;
  return Math.max(now, earliest, Math.min(earliest + wait, now + MAX_AFTER_SUCCESS_MS));
}

/**
 * After a success: random within the bounds, then held to both invariants
 * (spacing wins). With bounds from boundsOf the ceiling never bites on the
 * draw; it still holds the 300 s promise when the previous answer was slow.
 */
export function nextAfterSuccess(bounds: Bounds, startedAt: number, endedAt: number, random: () => number): number {
  const drawn = startedAt + bounds.minMs + random() * (bounds.maxMs - bounds.minMs);
  return Math.max(Math.min(drawn, startedAt + MAX_AFTER_SUCCESS_MS), earliestNext(endedAt));
}

/**
 * The heartbeat's backoff (lib/backoff.ts, one object per scheduler): after
 * the n-th failure in a row (network, timeout, 5xx, an unreadable answer)
 * uniform in [60 s, min(5 min, 30 s * 2^n)]; after the n-th 429 in a row the
 * service's ladder from 60 s (60, 120, 240 s nominal, +-25 %, at most 5 min)
 * or the Retry-After (or the window hint the client derived) when longer.
 */
export const HEARTBEAT_BACKOFF: Pick<BackoffOptions, 'failure' | 'rateLimit'> = {
  failure: { baseMs: 30_000, capMs: FAILURE_CAP_MS, floorMs: MIN_SPACING_MS },
  rateLimit: { baseMs: MIN_SPACING_MS, capMs: RATE_LIMIT_CAP_MS },
};

/** After a failed attempt that ended at `endedAt`: the backoff's wait, never inside the spacing. */
export function nextAfterWait(endedAt: number, waitMs: number): number {
  return Math.max(endedAt + waitMs, earliestNext(endedAt));
}
