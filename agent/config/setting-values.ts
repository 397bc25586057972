// The settings that are numbers, booleans or pairs rather than plain text or
// paths: each read from its text (option, environment or config file alike),
// checked, and refused with one line naming the value and its source.
import { validate as isCronExpression } from 'node-cron';
import { configError } from '../lib/errors.js';
import { OUTBOX_DEFAULTS } from '../outbox/types.js';
import { quote } from '../lib/text.js';
import type { Found } from './setting-table.js';
import type { Settings } from './types.js';

/** The outbox's flash budget: the default (outbox/types.ts) suits an SD card; below 64 KiB a single upload job would not fit. */
export const DEFAULT_QUEUE_MAX_BYTES = OUTBOX_DEFAULTS.capBytes;
const MIN_QUEUE_MAX_BYTES = 64 * 1024;

export function resolveQueueMax(found: Found | undefined, sources: Record<string, string>): number {
  sources.queueMaxBytes = found?.source ?? 'default';
  if (found === undefined) return DEFAULT_QUEUE_MAX_BYTES;
  const n = /^\s*\d+\s*$/.test(found.value) ? Number(found.value) : NaN;
  if (!Number.isSafeInteger(n) || n < MIN_QUEUE_MAX_BYTES) {
    throw configError(`queue size ${quote(found.value)} from ${found.source} must be a whole number of bytes, at least ${MIN_QUEUE_MAX_BYTES}`, found.source);
  }
  return n;
}

/** How long a clip must hold still before it is taken (agent seconds). */
export const DEFAULT_MEDIA_SETTLE_SECONDS = 10;

export function resolveSettle(found: Found | undefined, sources: Record<string, string>): number {
  sources.mediaSettleSeconds = found?.source ?? 'default';
  if (found === undefined) return DEFAULT_MEDIA_SETTLE_SECONDS;
  const n = /^\s*\d+(\.\d+)?\s*$/.test(found.value) ? Number(found.value) : NaN;
  if (!(n >= 0 && n <= 3600)) throw configError(`media settle time ${quote(found.value)} from ${found.source} must be a number of seconds from 0 to 3600`, found.source);
  return n;
}

/** Both or neither: a cron without a length (or the other way round) is a mistake, not a default. */
export function resolveWindow(cron: Found | undefined, minutes: Found | undefined, sources: Record<string, string>): Settings['uploadWindow'] {
  if (cron === undefined && minutes === undefined) return undefined;
  if (cron === undefined || minutes === undefined) {
    const given = (cron ?? minutes) as Found;
    throw configError(`the upload window needs both uploadWindowCron and uploadWindowMinutes; only one was given (${given.source})`, given.source);
  }
  // node-cron's own parser, here, so every command refuses what `run` would
  // (in the bundle node-cron is expanded on this first call: lib/cold-module.ts).
  if (!isCronExpression(cron.value)) throw configError(`upload window ${quote(cron.value)} from ${cron.source} is not a cron expression (minute hour day month weekday)`, cron.source);
  const n = /^\s*\d+\s*$/.test(minutes.value) ? Number(minutes.value) : NaN;
  if (!(n >= 1 && n <= 24 * 60)) throw configError(`upload window length ${quote(minutes.value)} from ${minutes.source} must be whole minutes from 1 to 1440`, minutes.source);
  sources.uploadWindow = cron.source;
  return { cron: cron.value, minutes: n, source: cron.source };
}

export function resolveBoolean(found: Found | undefined, key: string, sources: Record<string, string>): boolean {
  sources[key] = found?.source ?? 'default';
  if (found === undefined) return false;
  if (found.value === 'true') return true;
  if (found.value === 'false') return false;
  throw configError(`${key} ${quote(found.value)} from ${found.source} must be true or false`, found.source);
}
