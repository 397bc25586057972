// Turns an HTTP outcome into an AgentError. The legacy error body is
// {code, errors: [{code, detail, status, title}], message}, every part
// optional; servers, proxies and load balancers also answer with HTML, empty
// bodies or JSON of another shape, so nothing here trusts a field's type.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { AgentError, type ErrorKind, type RateLimitInfo } from '../lib/errors.js';
import { describeDuration, oneLine } from '../lib/text.js';
import { parseRetryAfter, retryDelayFromWindow, type HeaderBag } from './rate-limit.js';

const MAX_TEXT = 200;

export interface LegacyError {
  message?: string;
  title?: string;
  detail?: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? oneLine(v) : undefined);

/** Picks the human parts out of whatever the server sent; never throws. */
export function parseLegacyError(body: unknown): LegacyError {
  const out: LegacyError = {};
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return out;
  const rec = body as Record<string, unknown>;
  const message = str(rec.message) ?? str(rec.error_description) ?? str(rec.error);
  if (message !== undefined) out.message = message;
  const first = Array.isArray(rec.errors) ? rec.errors.find((e) => e !== null && typeof e === 'object' && !Array.isArray(e)) : undefined;
  if (first !== undefined) {
    const e = first as Record<string, unknown>;
    const title = str(e.title);
    const detail = str(e.detail);
    if (title !== undefined) out.title = title;
    if (detail !== undefined) out.detail = detail;
  }
  return out;
}

/** "Not Authorized: You are not allowed..." without repeating equal parts. */
export function describeLegacyError(e: LegacyError): string {
  const parts: string[] = [];
  for (const p of [e.title, e.message, e.detail]) {
    if (p !== undefined && !parts.some((q) => q.toLowerCase() === p.toLowerCase())) parts.push(p);
  }
  return oneLine(parts.join(': '), MAX_TEXT);
}

export function kindForStatus(status: number, legacy: LegacyError): ErrorKind {
  if (status === 401) return 'unauthorized';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'not-found';
  if (status === 409) {
    const paused = [legacy.title, legacy.message].some((t) => t !== undefined && /channel paused|device paused|\bpaused\b/i.test(t));
    return paused ? 'paused' : 'conflict';
  }
  if (status === 429) return 'rate-limited';
  // 5xx only: a status past 599 is no HTTP status, so no promise that a retry helps.
  if (status >= 500 && status <= 599) return 'server';
  return 'protocol';
}

const HINT: Partial<Record<ErrorKind, string>> = {
  unauthorized: 'the token was rejected; run `c2c-agent pair`',
  forbidden: 'the token lacks the scope for this call; re-pair the unit with the right project',
  'rate-limited': 'rate limited by the service; retry later',
  server: 'the service failed; retry later',
};

export interface StatusContext {
  what: string; // "GET /v2/devices/me"
  status: number;
  headers: HeaderBag;
  body: unknown;
  rateLimit: RateLimitInfo;
  clockOffsetMs?: number;
  /** Server minus local wall time learnt from an earlier answer, for an answer without Date. */
  knownClockOffsetMs?: number;
  localWallMs: number;
}

export function errorForStatus(ctx: StatusContext): AgentError {
  const legacy = parseLegacyError(ctx.body);
  const kind = kindForStatus(ctx.status, legacy);
  const text = describeLegacyError(legacy);
  const hint = HINT[kind];
  let message = `${ctx.what}: HTTP ${ctx.status}${text ? ` ${text}` : ''}`;
  if (hint) message += ` (${hint})`;
  const details: ConstructorParameters<typeof AgentError>[2] = { status: ctx.status, rateLimit: ctx.rateLimit, source: ctx.what };
  if (ctx.clockOffsetMs !== undefined) details.clockOffsetMs = ctx.clockOffsetMs;
  if (kind === 'rate-limited' || (kind === 'server' && ctx.status === 503)) {
    const retry = parseRetryAfter(ctx.headers, ctx.localWallMs, ctx.clockOffsetMs ?? ctx.knownClockOffsetMs);
    if (retry !== undefined) details.retryAfterMs = retry;
    else if (kind === 'rate-limited') details.retryAfterMs = retryDelayFromWindow(ctx.rateLimit);
  }
  return new AgentError(kind, oneLine(message, 400), details);
}

/**
 * A final answer no endpoint of the service or of storage gives: 101
 * Switching Protocols (a misconfigured proxy or a captive portal), or a 1xx a
 * wire hands over as the final answer. The agent says so at once (exit 76)
 * rather than wait out the request's time limit for an answer that may never
 * come.
 */
export function unexpectedAnswer(what: string, status: number): AgentError {
  return new AgentError('protocol', `${what}: answered HTTP ${status}, which neither the service nor storage sends (a proxy or captive portal in the way?); refused`, { status, source: what });
}

/**
 * Refuses a 101 on a request: Node's ClientRequest, or got's Request, which
 * re-emits the event. Node hands a 101's socket to whoever listens to
 * 'upgrade' and stops managing it; got always listens (to re-emit it) and then
 * never settles: no response, no error, its timers inert on a request Node
 * already marked destroyed. So the socket is destroyed here (nothing else
 * would close it) and the request fails at once.
 */
export function refuseUpgrade(req: NodeJS.EventEmitter, what: string, refuse: (e: AgentError) => void): void {
  req.on('upgrade', (res: IncomingMessage, socket: Duplex) => {
    socket.destroy();
    refuse(unexpectedAnswer(what, res.statusCode ?? 101));
  });
}

/**
 * The one rule for 1xx answers, for the service's transport and for storage,
 * set on Node's ClientRequest. A client must read past any number of interim
 * answers before the final one, even ones it did not ask for (RFC 9110,
 * 15.2): 100 Continue, 102 Processing, 103 Early Hints (its Link headers
 * unused) and any other 1xx are read past, as Node does by itself (it emits
 * 'information' for each and waits on). Refusing them made a proxy's 102
 * cost an answer the service gave (issue 27). A stream of them cannot hold a
 * request: the time limits run from before the first (the transport's total,
 * storage's wait for a response), and no 1xx ends them. Only 101 Switching
 * Protocols, which no request of the agent's asks for, is refused.
 */
export function refuseInterim(req: NodeJS.EventEmitter, what: string, refuse: (e: AgentError) => void): void {
  refuseUpgrade(req, what, refuse);
}

// Anything that kept us from reading an HTTP answer (refused, DNS, reset,
// timeout, TLS failure, a parser choking on garbage) counts as "could not
// talk to the service" (exit 69): the daemon retries those with backoff.
const EXPLAIN: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host name not found (DNS)',
  EAI_AGAIN: 'DNS lookup failed temporarily',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

/**
 * Certificates that do not lead to a CA this unit trusts: a private
 * deployment's CA not given, or something on the path (a proxy, a captive
 * portal) answering for the service.
 */
const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_CHAIN_TOO_LONG',
  'INVALID_CA',
  'CERT_REJECTED',
  'CERT_REVOKED',
  'INVALID_PURPOSE',
]);

/** Certificate dates: the certificate's, or this unit's clock, is wrong (the clock probe tells which). */
export const CERT_DATE_CODES: ReadonlySet<string> = new Set(['CERT_NOT_YET_VALID', 'CERT_HAS_EXPIRED']);

/** A TLS handshake met a server that speaks plain HTTP (OpenSSL's words for it vary by version). */
function plainHttpAnswer(code: string, message: string): boolean {
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG' || code === 'ERR_SSL_HTTP_REQUEST') return true;
  return code === 'EPROTO' && /wrong version number|packet length too long|http request/i.test(message);
}

const CA_ADVICE = 'if the service uses a private CA, give its certificate with caFile (or NODE_EXTRA_CA_CERTS); otherwise something on the network is answering for the service (a proxy or a captive portal)';

/**
 * A TLS failure in words, no OpenSSL internals: what is wrong and what to do.
 * undefined when the failure is not about TLS.
 */
export function tlsError(what: string, code: string, message: string, localWallMs: number): AgentError | undefined {
  const details = { code, source: what };
  if (UNTRUSTED.has(code)) {
    return new AgentError('tls', `${what}: the service's certificate is not signed by a CA this unit trusts; ${CA_ADVICE}`, details);
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return new AgentError('tls', `${what}: the service's certificate is for another host name than the API URL's; check the host name in the API URL`, details);
  }
  if (code === 'CERT_NOT_YET_VALID') {
    return new AgentError('clock', `${what}: the service's certificate is not valid yet by this unit's clock (${new Date(localWallMs).toISOString()}); set the time (NTP)`, details);
  }
  if (code === 'CERT_HAS_EXPIRED') {
    return new AgentError('tls', `${what}: the service's certificate has expired by this unit's clock (${new Date(localWallMs).toISOString()}); if that date is wrong set the time (NTP), else the service must renew its certificate`, details);
  }
  if (plainHttpAnswer(code, message)) {
    return new AgentError('tls', `${what}: the server answered in plain HTTP where HTTPS was expected; check the API URL's scheme and port (http:// is allowed on loopback only)`, details);
  }
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || code === 'EPROTO') {
    return new AgentError('tls', `${what}: the TLS handshake with the service failed (${code}); check the API URL, and whether something on the network intercepts HTTPS`, details);
  }
  return undefined;
}

/**
 * The clock check's verdict, from the service's Date read over an
 * unverified connection: the certificate's dates failed and this unit's
 * clock is off by more than CLOCK_WRONG_MS in the direction that explains
 * it. offsetMs is the service's time minus this unit's.
 */
export function clockError(what: string, code: string, offsetMs: number): AgentError {
  return new AgentError('clock', `${what}: ${clockProblem(offsetMs)}`, { code, source: what, clockOffsetMs: offsetMs });
}

/** "this unit's clock is 3 days behind the service; certificates cannot be checked until the time is set (NTP)" */
export function clockProblem(offsetMs: number): string {
  const side = offsetMs > 0 ? 'behind' : 'ahead of';
  return `this unit's clock is ${describeDuration(offsetMs)} ${side} the service; certificates cannot be checked until the time is set (NTP)`;
}

/** The certificate's dates are wrong while the clocks agree: the service's certificate itself is out of date. */
export function certificateDatesError(what: string, code: string, offsetMs: number): AgentError {
  const state = code === 'CERT_HAS_EXPIRED' ? 'has expired' : 'is not valid yet';
  return new AgentError('tls', `${what}: the service's certificate ${state} while this unit's clock agrees with the service's (${describeDuration(offsetMs)} apart); the service must fix its certificate`, {
    code,
    source: what,
    clockOffsetMs: offsetMs,
  });
}

/**
 * A reset on an http:// URL, before any answer: what a TLS server does with
 * plain HTTP (node's among them; nginx answers 400 instead). "Check the
 * network" would send a person the wrong way.
 */
export function resetOnPlainHttp(e: AgentError): AgentError {
  if (e.kind !== 'network' || e.details.code !== 'ECONNRESET') return e;
  return new AgentError(e.kind, e.message.replace(/; check the network and the API URL$/, '; this server may speak HTTPS (TLS): the API URL must then start with https://'), e.details);
}

/** A request that never produced a usable HTTP answer. `localWallMs`: this unit's wall time (the Clock's wallNow()), what a certificate's dates are held against. */
export function networkError(what: string, err: unknown, timeoutMs: number, localWallMs: number): AgentError {
  const e = (err ?? {}) as { code?: unknown; name?: unknown; event?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : 'ERR_NETWORK';
  const tls = tlsError(what, code, typeof e.message === 'string' ? e.message : '', localWallMs);
  if (tls !== undefined) return tls;
  if (e.name === 'TimeoutError' || code === 'ETIMEDOUT') {
    const phase = typeof e.event === 'string' ? ` (${e.event} phase)` : '';
    return new AgentError('network', `${what}: no answer within ${Math.round(timeoutMs / 100) / 10} s${phase}; check the network and the API URL`, {
      code: 'ETIMEDOUT',
      source: what,
    });
  }
  if (code === 'ERR_INVALID_CHAR' || code === 'ERR_INVALID_HTTP_TOKEN') {
    // A token or version with a newline in it: a broken credentials file, not a network fault.
    return new AgentError('config', `${what}: a request header holds characters HTTP does not allow; check the token and firmware version`, { code, source: what });
  }
  const reason = EXPLAIN[code] ?? (typeof e.message === 'string' ? oneLine(e.message, 120) : 'request failed');
  // No `cause`: got errors carry the request options, bearer header included.
  return new AgentError('network', oneLine(`${what}: ${reason} (${code}); check the network and the API URL`, 400), { code, source: what });
}
