// The settings that are numbers, booleans or pairs rather than plain text or
// paths: each read from its text (option, environment or config file alike),
// checked, and refused with one line naming the value and its source.
import { isIP } from 'node:net';
import { validate as isCronExpression } from 'node-cron';
import { configError } from '../lib/errors.js';
import { OUTBOX_DEFAULTS } from '../outbox/types.js';
import { quote } from '../lib/text.js';
import type { Found } from './setting-table.js';
import type { Settings, WebSettings } from './types.js';

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

/**
 * webListen (`HOST:PORT`, `[IPv6]:PORT`, or `off`) with webCertFile and
 * webKeyFile (both or neither, and only with webListen): the camera's web
 * page (docs/web-page.md). Unset or `off`: undefined, the page is off. The
 * files are paths here; the page reads them when it starts.
 */
export function resolveWeb(listen: Found | undefined, tls: { cert: { found: Found; path: string } | undefined; key: { found: Found; path: string } | undefined }, sources: Record<string, string>): WebSettings | undefined {
  sources.webListen = listen?.source ?? 'default';
  const off = listen === undefined || listen.value.trim().toLowerCase() === 'off';
  const given = tls.cert ?? tls.key;
  if (given !== undefined && (tls.cert === undefined || tls.key === undefined)) {
    throw configError(`the web page's HTTPS needs both webCertFile and webKeyFile; only one was given (${given.found.source})`, given.found.source);
  }
  if (off) {
    if (given !== undefined) throw configError(`webCertFile and webKeyFile (${given.found.source}) are for the web page, which is off: set webListen too, or remove them`, given.found.source);
    return undefined;
  }
  const bad = (why: string): Error => configError(`web page address ${quote(listen.value)} from ${listen.source} ${why}`, listen.source);
  const m = /^(?:\[([^\]]*)\]|([^:[\]]*)):(\d{1,5})$/.exec(listen.value.trim());
  if (m === null) {
    if (/^[^[]*:.*:/.test(listen.value)) throw bad('must put an IPv6 address in brackets: [::]:8080');
    throw bad('must be HOST:PORT, such as 0.0.0.0:8080 (every address) or 192.168.1.20:8080, or off');
  }
  const host = (m[1] ?? m[2] ?? '').toLowerCase();
  const port = Number(m[3]);
  if (host === '') throw bad('has no host: 0.0.0.0:8080 listens on every address');
  if (m[1] !== undefined && isIP(host) !== 6) throw bad('holds no IPv6 address between its brackets');
  if (m[1] === undefined && isIP(host) === 0 && !/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(host)) throw bad('has a host that is neither an address nor a name');
  if (!(port >= 1 && port <= 65535)) throw bad('must have a port from 1 to 65535');
  const web: WebSettings = { listen: listen.value.trim(), host, port, source: listen.source };
  if (tls.cert !== undefined && tls.key !== undefined) {
    web.tls = { certFile: tls.cert.path, keyFile: tls.key.path };
    sources.webCertFile = tls.cert.found.source;
    sources.webKeyFile = tls.key.found.source;
  }
  return web;
}
