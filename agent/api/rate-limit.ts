// The service's rate-limit headers and Date header, read defensively: a
// proxy or a misbehaving server may send nonsense, and a bad header must
// degrade to "unknown", never to an exception or a NaN wait.
import { dripMs } from '../lib/backoff.js';
import type { RateLimitInfo } from '../lib/errors.js';

export type HeaderBag = Record<string, string | string[] | undefined>;

/** The service's advice when a 429 carries nothing better: pause about one second (docs/service-api.md, "Rate limits"). */
export const DEFAULT_RETRY_AFTER_MS = 1000;

export function header(headers: HeaderBag, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function nonNegativeInt(text: string | undefined): number | undefined {
  if (text === undefined || !/^\s*\d{1,15}\s*$/.test(text)) return undefined;
  return Number(text.trim());
}

export function parseRateLimit(headers: HeaderBag): RateLimitInfo {
  const out: RateLimitInfo = {};
  const limit = nonNegativeInt(header(headers, 'x-ratelimit-limit'));
  const remaining = nonNegativeInt(header(headers, 'x-ratelimit-remaining'));
  const windowMs = nonNegativeInt(header(headers, 'x-ratelimit-window'));
  if (limit !== undefined) out.limit = limit;
  if (remaining !== undefined) out.remaining = remaining;
  if (windowMs !== undefined) out.windowMs = windowMs;
  return out;
}

/** Epoch ms of an HTTP-date, or undefined when absent or unparseable. */
export function parseHttpDate(text: string | undefined): number | undefined {
  if (text === undefined || !/[a-z]/i.test(text)) return undefined;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * Server Date minus local wall time at the response, ms. Date has whole
 * seconds (truncated), so the server's true time lies in [Date, Date + 1 s):
 * the midpoint halves the worst-case error.
 */
export function clockOffset(headers: HeaderBag, localWallMs: number): number | undefined {
  const server = parseHttpDate(header(headers, 'date'));
  return server === undefined ? undefined : server + 500 - localWallMs;
}

/**
 * The longest wait an HTTP-date Retry-After may ask for when there is no
 * server time to measure it against (no Date on this answer, no offset known
 * from an earlier one): the local wall clock may be hours off (a Pi without
 * RTC before NTP), so the date minus local time is anything from 0 to a day.
 * Five minutes keeps a misread date from silencing the unit for longer than
 * its slowest heartbeat; the caller's own backoff still grows on repeated 429s.
 */
export const UNANCHORED_RETRY_AFTER_CAP_MS = 300_000;

/**
 * Retry-After as a delay in ms: delta-seconds or an HTTP-date. An HTTP-date
 * is measured against the server's own Date when it sent one, else against
 * local wall time corrected by `knownOffsetMs` (server minus local, from an
 * earlier answer), so a device whose wall clock is off still waits right.
 * With neither, the delay is bounded by UNANCHORED_RETRY_AFTER_CAP_MS (how far
 * a misread date is trusted). The delay is what the server asked for: how
 * long the agent honours it (at most MAX_RETRY_AFTER_MS) is lib/backoff.ts's
 * rule, applied once, where the wait is chosen.
 */
export function parseRetryAfter(headers: HeaderBag, localWallMs: number, knownOffsetMs?: number): number | undefined {
  const raw = header(headers, 'retry-after');
  if (raw === undefined) return undefined;
  const seconds = raw.trim();
  if (/^\d{1,10}(\.\d+)?$/.test(seconds)) return Number(seconds) * 1000;
  const at = parseHttpDate(raw);
  if (at === undefined) return undefined;
  const serverDate = parseHttpDate(header(headers, 'date'));
  const delay = Math.max(0, at - (serverDate ?? localWallMs + (knownOffsetMs ?? 0)));
  const anchored = serverDate !== undefined || (knownOffsetMs !== undefined && Number.isFinite(knownOffsetMs));
  return anchored ? delay : Math.min(delay, UNANCHORED_RETRY_AFTER_CAP_MS);
}

/**
 * How long to wait after a 429 when Retry-After is absent: in a leaky bucket
 * one request's worth of allowance drips back every window/limit ms
 * (lib/backoff.ts `dripMs`, which the outbox also waits when the bucket is
 * empty), at least the service's second.
 */
export function retryDelayFromWindow(rl: RateLimitInfo): number {
  return Math.max(DEFAULT_RETRY_AFTER_MS, dripMs(rl) ?? DEFAULT_RETRY_AFTER_MS);
}
