// The heartbeat timing rules as pure functions of agent-monotonic times, so
// the invariants can be read (and tested) in one place:
//   - attempts >= 60 s apart at the service, whatever happened;
//   - while the service answers, successes <= 300 s apart at the service.
// The service sees a request somewhere between our send and the end of our
// wait for it, so spacing is measured from the END of the previous attempt
// and the 300 s ceiling from the START of the previous success.
import { backoffDelay } from '../lib/backoff.js';

export const MIN_SPACING_MS = 60_000;
/** Timer lateness and clock-rate skew between us and the service. */
export const SPACING_MARGIN_MS = 2_000;
export const MAX_SUCCESS_GAP_MS = 300_000;
/** The client's own request timeout (contract: requests give up at 30 s). */
export const REQUEST_TIMEOUT_MS = 30_000;
/** Our hard stop on a request, in case the client's timeout does not fire. */
export const ATTEMPT_GUARD_MS = REQUEST_TIMEOUT_MS + 5_000;
/** Room for send latency and timer lateness (at --time-scale 60 a real ms is 60 agent ms). */
export const LATE_MARGIN_MS = 10_000;
/** Latest start of the next attempt after a success started, so even a slow answer lands inside 300 s. */
export const MAX_AFTER_SUCCESS_MS = MAX_SUCCESS_GAP_MS - ATTEMPT_GUARD_MS - LATE_MARGIN_MS;
/** A Retry-After longer than this is treated as this (a bad header must not silence a camera for days). */
export const MAX_RETRY_AFTER_MS = 3_600_000;
export const RATE_LIMIT_CAP_MS = 300_000;
export const FAILURE_CAP_MS = 300_000;

/** Agent-monotonic time at boot (see lastEndOf). */
export const BOOT = 0;

export const DEFAULT_BOUNDS = { minSeconds: 60, maxSeconds: 270 } as const;

export interface Bounds {
  minMs: number;
  maxMs: number;
}

/** Profile bounds clamped into the service's 60..300 s window. */
export function clampBounds(b: { minSeconds: number; maxSeconds: number } | undefined): Bounds {
  const src = b ?? DEFAULT_BOUNDS;
  const clamp = (s: number, lo: number): number => Math.min(300, Math.max(lo, Number.isFinite(s) ? s : lo));
  const min = clamp(src.minSeconds, 60);
  const max = clamp(src.maxSeconds, min);
  return { minMs: min * 1000, maxMs: max * 1000 };
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
 * reboot waits until 62 agent-s after boot, and costs nothing otherwise.
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

/** After a success: random within the bounds, then clamped by both invariants (spacing wins). */
export function nextAfterSuccess(bounds: Bounds, startedAt: number, endedAt: number, random: () => number): number {
  const drawn = startedAt + bounds.minMs + random() * (bounds.maxMs - bounds.minMs);
  return Math.max(Math.min(drawn, startedAt + MAX_AFTER_SUCCESS_MS), earliestNext(endedAt));
}

/** After a network error, timeout, 5xx or unreadable answer: jittered exponential backoff. */
export function nextAfterFailure(failures: number, endedAt: number, random: () => number): number {
  const wait = backoffDelay({ baseMs: 30_000, capMs: FAILURE_CAP_MS, floorMs: MIN_SPACING_MS }, failures, random);
  return Math.max(endedAt + wait, earliestNext(endedAt));
}

/**
 * After the n-th 429 in a row: the longest of Retry-After (or the window
 * hint the client derived), an exponential wait with jitter, and the spacing.
 */
export function nextAfterRateLimit(n: number, endedAt: number, retryAfterMs: number | undefined, random: () => number): number {
  const expo = Math.min(RATE_LIMIT_CAP_MS, 30_000 * 2 ** Math.min(n, 20));
  const jittered = expo / 2 + (random() * expo) / 2;
  const honoured = Math.min(Math.max(0, retryAfterMs ?? 0), MAX_RETRY_AFTER_MS);
  return Math.max(endedAt + jittered, endedAt + honoured, earliestNext(endedAt));
}

/**
 * Failures where no connection to the service was made: the network or DNS
 * is down, so a cheap GET /health may notice it return long before the
 * backoff would. Anything after connect (ECONNRESET, a truncated body, a
 * proxy resetting one path) or a timeout can fail the same way again while
 * /health answers fine, so those get plain backoff. ECONNABORTED is left out:
 * the stack reports it both before and after connect.
 */
export const CONNECT_FAILURES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ENETDOWN', 'EHOSTDOWN']);

/** Worth a /health probe: the failure was at connect level (see CONNECT_FAILURES). */
export function unreachable(e: { kind: string; details: { code?: string | undefined } } | undefined): boolean {
  return e?.kind === 'network' && e.details.code !== undefined && CONNECT_FAILURES.has(e.details.code);
}

/** How often to ask GET /health while unreachable, so reconnection is noticed within seconds. */
export function probeDelay(probes: number, random: () => number): number {
  return backoffDelay({ baseMs: 10_000, capMs: 30_000, floorMs: 5_000 }, probes, random);
}
