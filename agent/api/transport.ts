// The transport of the service's API: the one got instance every request to
// the service goes through, so x-client-version, User-Agent, timeouts, the
// size cap and error typing hold for all of them, auth calls included. got's
// own retries are off: callers own their loops. Endpoint groups (device.ts,
// oauth.ts, ...) build on it; presigned storage URLs never do (storage.ts).
import http from 'node:http';
import https from 'node:https';
import { got, type Got, type Response } from 'got';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { AgentError } from '../lib/errors.js';
import { registerSecret } from '../lib/secrets.js';
import { oneLine } from '../lib/text.js';
import { CLOCK_CHECK_REUSE_MS, CLOCK_CHECK_TIMEOUT_MS, CLOCK_WRONG_MS, CONNECT_TIMEOUT_MS, LOOKUP_TIMEOUT_MS, REQUEST_TIMEOUT_MS, SEND_TIMEOUT_MS } from '../lib/timing.js';
import { parseJsonBody } from './json-body.js';
import { CERT_DATE_CODES, certificateDatesError, clockError, errorForStatus, networkError, refuseInterim, resetOnPlainHttp, unexpectedAnswer } from './http-errors.js';
import { clockOffset, parseRateLimit, type HeaderBag } from './rate-limit.js';
import type { ResponseMeta } from './types.js';
import { wireRequest, type Wire, type WireResponse } from './wire.js';
import { dropIdleSockets, dropSocketsOn, probeWhileWaiting } from './sockets.js';
import { clientAgents, GOT_RULES, type ExtraCas } from './trust.js';

export type { Wire, WireRequest, WireResponse } from './wire.js';

/**
 * No answer the agent expects is anywhere near this: a 2xx body bigger is
 * refused unread (a protocol error); an error body bigger is dropped unread
 * and the status alone decides what the error is.
 */
export const MAX_RESPONSE_BYTES = 1024 * 1024;

export interface TransportOptions {
  baseUrl: string;
  /** A function lets a token refresh take effect without a new client. */
  token: string | (() => string | undefined);
  firmwareVersion: string;
  agentVersion: string;
  clock: Clock;
  /** Overall cap per request in agent ms (default and maximum 30 000). */
  timeoutMs?: number;
  logger?: Logger;
  /** How long a kept-alive socket may sit unused before it is closed, real ms (default IDLE_SOCKET_MS). */
  idleSocketMs?: number;
  /** CAs trusted besides the system's (the caFile setting). */
  extraCas?: ExtraCas | undefined;
  /**
   * Replaces only the HTTP exchange (got and its sockets): headers, error
   * typing, the size cap, rate-limit and clock-offset views and validation
   * all still run. For the fleet simulator, which plays many units in one
   * process on a virtual clock; production never sets it.
   */
  wire?: Wire;
}

/**
 * Back-to-back calls (GET me, then /health) reuse a connection, but a socket
 * idle for a heartbeat interval (60 to 300 s) would race the server's or a
 * load balancer's idle close (ALB ~60 s, nginx ~75 s) and fail the heartbeat
 * with ECONNRESET. Node's Agent applies `timeout` to free sockets and
 * destroys a free socket when it fires (it only shortens it for a server's
 * Keep-Alive hint), so anything kept longer than this opens a fresh connection.
 * A request in flight is not cut by it: Node only destroys free sockets on
 * timeout, and got's own timers govern live requests.
 */
export const IDLE_SOCKET_MS = 4_000;

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Path below the base URL, e.g. '/v2/devices/me'. */
  path: string;
  /** Send the bearer token (default true); auth endpoints pass false. */
  auth?: boolean;
  form?: Record<string, string>;
  json?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** A shorter cap than the client's, agent ms (a probe that must not double a wait). */
  timeoutMs?: number;
}

export interface RawResponse {
  /** "GET /v2/devices/me", for messages. */
  what: string;
  status: number;
  headers: HeaderBag;
  body: Buffer;
  meta: ResponseMeta;
}

export interface Transport {
  /** Any request; resolves with whatever status came back, rejects only when no answer was read. */
  request(spec: RequestSpec): Promise<RawResponse>;
  /** Form POST without the bearer token (pairing, refresh, revoke). */
  postForm(path: string, form: Record<string, string>, signal?: AbortSignal): Promise<RawResponse>;
  /** The body as JSON, or a protocol error when it is not JSON. */
  readJson(res: RawResponse): unknown;
  /** The typed error for a response whose status is not the expected one. */
  errorFor(res: RawResponse): AgentError;
  /** JSON from a 2xx answer, else the typed error; `timeoutMs` may shorten the limit. */
  getJson(path: string, opts?: { auth?: boolean; signal?: AbortSignal | undefined; timeoutMs?: number | undefined }): Promise<{ value: unknown; res: RawResponse }>;
  /** Validation errors thrown by `fn` get the response's status and meta attached. */
  validated<T>(res: RawResponse, fn: () => T): T;
  /** Meta of the most recent answer (rate limits, clock offset), for status reports. */
  readonly lastMeta: ResponseMeta | undefined;
  /** Drops kept-alive sockets. */
  close(): void;
  /** Closes the connections (in flight too) bound to these local addresses; how many it closed. */
  dropConnectionsOn(gone: ReadonlySet<string>): number;
}

const JSON_TYPE = /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i;

function phaseTimeouts(totalAgentMs: number, scale: number): Record<string, number> {
  const real = (ms: number): number => Math.max(1, Math.round(Math.min(ms, totalAgentMs) / scale));
  return {
    lookup: real(LOOKUP_TIMEOUT_MS),
    connect: real(CONNECT_TIMEOUT_MS),
    secureConnect: real(CONNECT_TIMEOUT_MS),
    send: real(SEND_TIMEOUT_MS),
    response: real(totalAgentMs),
    request: real(totalAgentMs),
  };
}

export function createTransport(options: TransportOptions): Transport {
  const { clock, logger } = options;
  const timeoutMs = Math.min(options.timeoutMs ?? REQUEST_TIMEOUT_MS, REQUEST_TIMEOUT_MS);
  const tokenOf = typeof options.token === 'function' ? options.token : (): string => options.token as string;
  const idle = options.idleSocketMs ?? IDLE_SOCKET_MS;
  const defaultHeaders: Record<string, string> = {
    'x-client-version': options.firmwareVersion,
    'user-agent': `c2c-agent/${options.agentVersion} firmware/${options.firmwareVersion} node/${process.versions.node}`,
    accept: 'application/json',
  };
  const wire = options.wire;
  const plainHttp = options.baseUrl.startsWith('http:');
  // A wire has no sockets: no agents, no got instance.
  const agents = wire ? undefined : clientAgents(options.extraCas, idle);
  const instance: Got | undefined = wire ? undefined : got.extend({
    prefixUrl: options.baseUrl,
    headers: defaultHeaders,
    ...GOT_RULES,
    responseType: 'buffer',
    timeout: phaseTimeouts(timeoutMs, clock.scale),
    agent: agents as { http: http.Agent; https: https.Agent },
  });
  let lastMeta: ResponseMeta | undefined;
  // The latest server-minus-local offset any answer carried: an answer
  // without Date (a proxy's 429) is still measured against server time.
  let knownOffsetMs: number | undefined;
  // The clock check's last answer (agent ms, offset), and whether a clock
  // problem was logged and not yet over: logged once per episode.
  let clockChecked: { at: number; offsetMs: number | undefined } | undefined;
  let clockEpisode = false;

  /**
   * How far this unit's clock is from the service's, when a certificate's
   * dates failed: one GET /health over a connection whose certificate is NOT
   * verified (it cannot be: that is the problem), so it sends no credential,
   * nothing but the path and a User-Agent, and only the answer's Date header
   * is read; the connection is dropped at the headers. undefined when no
   * Date came (the check failed too, or the answer had none).
   */
  function serviceClockOffset(): Promise<number | undefined> {
    if (clockChecked !== undefined && clock.now() - clockChecked.at < CLOCK_CHECK_REUSE_MS) return Promise.resolve(clockChecked.offsetMs);
    const url = new URL(`${options.baseUrl}/health`);
    return new Promise((resolve) => {
      let done = false;
      const finish = (offsetMs: number | undefined): void => {
        if (done) return;
        done = true;
        timer.cancel();
        req.destroy();
        clockChecked = { at: clock.now(), offsetMs };
        resolve(offsetMs);
      };
      const req = https.request(url, { method: 'GET', agent: false, rejectUnauthorized: false, headers: { 'user-agent': defaultHeaders['user-agent'] as string } }, (res) => {
        const offset = clockOffset(res.headers as HeaderBag, clock.wallNow());
        res.destroy();
        finish(offset);
      });
      const timer = clock.setTimer(() => finish(undefined), CLOCK_CHECK_TIMEOUT_MS);
      req.on('error', () => finish(undefined));
      req.end();
    });
  }

  /** A certificate-dates failure told apart: this unit's clock, or the certificate itself. */
  async function explainCertificateDates(e: AgentError, what: string): Promise<AgentError> {
    const code = e.details.code as string;
    const offset = await serviceClockOffset();
    if (offset === undefined) return e;
    // Not yet valid: the unit is behind (offset > 0); expired: the unit is ahead.
    const clockExplains = code === 'CERT_NOT_YET_VALID' ? offset > CLOCK_WRONG_MS : offset < -CLOCK_WRONG_MS;
    return clockExplains ? clockError(what, code, offset) : certificateDatesError(what, code, offset);
  }

  function noteClock(e: AgentError): void {
    if (e.kind !== 'clock' || clockEpisode) return;
    clockEpisode = true;
    logger?.warn({ clockOffsetMs: e.details.clockOffsetMs, code: e.details.code }, e.message);
  }

  function clockRight(): void {
    if (!clockEpisode) return;
    clockEpisode = false;
    clockChecked = undefined;
    logger?.info('certificates check out again: the clock problem is over');
  }

  function metaOf(status: number, headers: HeaderBag): ResponseMeta {
    const meta: ResponseMeta = { status, rateLimit: parseRateLimit(headers) };
    const offset = clockOffset(headers, clock.wallNow());
    if (offset !== undefined) meta.clockOffsetMs = offset;
    return meta;
  }

  async function request(spec: RequestSpec): Promise<RawResponse> {
    const what = `${spec.method} ${spec.path}`;
    const headers: Record<string, string> = { ...spec.headers };
    if (spec.auth !== false) {
      const token = tokenOf();
      if (!token) throw new AgentError('unauthorized', `${what}: no access token; run \`c2c-agent pair\``, { source: what });
      registerSecret(token, { rotating: 'tokens' });
      headers.authorization = `Bearer ${token}`;
    }
    const limitMs = Math.min(spec.timeoutMs ?? timeoutMs, timeoutMs);
    const started = clock.now();
    let res: Exchange;
    try {
      res = wire ? capped(await wire(wireRequest(spec, { ...defaultHeaders, ...headers }, limitMs)), what) : await viaGot(spec, what, headers, limitMs);
    } catch (err) {
      const durationMs = Math.round(clock.now() - started);
      if (err instanceof Refused) {
        logger?.debug({ method: spec.method, path: spec.path, status: err.error.details.status, durationMs, error: 'refused' }, 'http response refused');
        throw err.error;
      }
      if (spec.signal?.aborted) throw spec.signal.reason ?? err;
      let e = networkError(what, err, limitMs, clock.wallNow());
      if (!wire && CERT_DATE_CODES.has(e.details.code ?? '')) e = await explainCertificateDates(e, what);
      if (!wire && plainHttp) e = resetOnPlainHttp(e);
      if (spec.signal?.aborted) throw spec.signal.reason ?? err;
      noteClock(e);
      const dropped = agents ? dropIdleSockets([agents.http, agents.https]) : 0;
      logger?.debug({ method: spec.method, path: spec.path, durationMs, code: e.details.code, droppedIdleSockets: dropped }, 'http request failed');
      throw e;
    }
    clockRight();
    if (res.dropped !== undefined) {
      logger?.debug({ method: spec.method, path: spec.path, status: res.status, bytes: res.dropped }, 'http error body over the size cap dropped unread');
    }
    const meta = metaOf(res.status, res.headers);
    meta.rttMs = Math.round((clock.now() - started) / clock.scale);
    meta.receivedAt = clock.wallNow();
    lastMeta = meta;
    if (meta.clockOffsetMs !== undefined) knownOffsetMs = meta.clockOffsetMs;
    if (logger?.isLevelEnabled('trace')) {
      // Named headers only: the request's Authorization must never reach a log.
      const h = res.headers;
      logger.trace(
        {
          request: { method: spec.method, path: spec.path, auth: spec.auth === false ? 'none' : 'bearer', 'x-client-version': options.firmwareVersion },
          response: { status: res.status, date: h.date, 'content-type': h['content-type'], 'content-length': h['content-length'], 'retry-after': h['retry-after'] },
        },
        'http detail',
      );
    }
    logger?.debug(
      { method: spec.method, path: spec.path, status: res.status, durationMs: Math.round(clock.now() - started), rateLimit: meta.rateLimit, clockOffsetMs: meta.clockOffsetMs },
      'http',
    );
    return { what, status: res.status, headers: res.headers, body: res.body, meta };
  }

  /**
   * One exchange over got. got has no size limit; its progress events fire as
   * chunks arrive (the first one carries Content-Length), so a liar or an
   * endless body stops here. What stops depends on the status: a 2xx that big
   * is no answer the contract gives (refused); an error page that big (a
   * proxy's or a load balancer's) is dropped unread, socket and all, and its
   * status still says what happened, so a 503 stays retryable.
   */
  async function viaGot(spec: RequestSpec, what: string, headers: Record<string, string>, limitMs: number): Promise<Exchange> {
    const call = (instance as Got)(spec.path.replace(/^\/+/, ''), {
      method: spec.method,
      responseType: 'buffer',
      headers,
      ...(spec.form !== undefined ? { form: spec.form } : {}),
      ...(spec.json !== undefined ? { json: spec.json } : {}),
      ...(spec.signal !== undefined ? { signal: spec.signal } : {}),
      ...(limitMs < timeoutMs ? { timeout: phaseTimeouts(limitMs, clock.scale) } : {}),
    });
    let answer: http.IncomingMessage | undefined;
    let stopped: { refused: AgentError } | { dropped: number } | undefined;
    const stop = (why: NonNullable<typeof stopped>): void => {
      if (stopped !== undefined) return;
      stopped = why;
      call.cancel();
    };
    call.on('request', (req: http.ClientRequest) => {
      probeWhileWaiting(req);
      // Ahead of got's own listener, which reports the first progress before returning.
      req.prependListener('response', (r: http.IncomingMessage) => (answer = r));
      refuseInterim(req, what, (refused) => stop({ refused }));
    });
    call.on('downloadProgress', (p: { transferred: number; total?: number }) => {
      if (p.transferred <= MAX_RESPONSE_BYTES && (p.total ?? 0) <= MAX_RESPONSE_BYTES) return;
      if (answer !== undefined && !isSuccess(answer.statusCode ?? 0)) stop({ dropped: Math.max(p.transferred, p.total ?? 0) });
      else stop({ refused: tooLarge(what, answer?.statusCode) });
    });
    try {
      const res: Response<Buffer> = await call;
      return { status: res.statusCode, headers: res.headers as HeaderBag, body: res.body };
    } catch (err) {
      if (stopped === undefined) throw err;
      if ('refused' in stopped) throw new Refused(stopped.refused);
      const r = answer as http.IncomingMessage; // set: only an answer's progress drops a body
      return { status: r.statusCode ?? 0, headers: r.headers as HeaderBag, body: Buffer.alloc(0), dropped: stopped.dropped };
    }
  }

  function readJson(res: RawResponse): unknown {
    const type = (res.headers['content-type'] as string | undefined) ?? '';
    if (!JSON_TYPE.test(type)) {
      throw new AgentError('protocol', `${res.what}: answered with content-type '${oneLine(type, 60)}', expected JSON`, withMeta(res));
    }
    try {
      return parseJsonBody(res.body);
    } catch {
      throw new AgentError('protocol', `${res.what}: HTTP ${res.status} body is not valid JSON (${res.body.length} bytes)`, withMeta(res));
    }
  }

  function errorFor(res: RawResponse): AgentError {
    let body: unknown;
    try {
      body = parseJsonBody(res.body);
    } catch {
      body = undefined; // an HTML error page from a proxy: the status says enough
    }
    const ctx: Parameters<typeof errorForStatus>[0] = { what: res.what, status: res.status, headers: res.headers, body, rateLimit: res.meta.rateLimit, localWallMs: clock.wallNow() };
    if (res.meta.clockOffsetMs !== undefined) ctx.clockOffsetMs = res.meta.clockOffsetMs;
    if (knownOffsetMs !== undefined) ctx.knownClockOffsetMs = knownOffsetMs;
    return errorForStatus(ctx);
  }

  async function getJson(path: string, opts: { auth?: boolean; signal?: AbortSignal | undefined; timeoutMs?: number | undefined } = {}): Promise<{ value: unknown; res: RawResponse }> {
    const { auth = true, signal, timeoutMs: limitMs } = opts;
    const res = await request({ method: 'GET', path, auth, ...(signal ? { signal } : {}), ...(limitMs !== undefined ? { timeoutMs: limitMs } : {}) });
    if (res.status < 200 || res.status > 299) throw errorFor(res);
    return { value: readJson(res), res };
  }

  return {
    request,
    postForm: (path, form, signal) => request({ method: 'POST', path, auth: false, form, ...(signal ? { signal } : {}) }),
    readJson,
    errorFor,
    getJson,
    validated: withErrorMeta,
    get lastMeta() {
      return lastMeta;
    },
    close() {
      agents?.http.destroy();
      agents?.https.destroy();
    },
    dropConnectionsOn: (gone) => (agents ? dropSocketsOn([agents.http, agents.https], gone) : 0),
  };
}

const isSuccess = (status: number): boolean => status >= 200 && status <= 299;

/** What one exchange yields before the transport reads meta from it. */
interface Exchange extends WireResponse {
  /** Bytes of an error body over the size cap (at least), dropped unread; the body is empty then. */
  dropped?: number;
}

/** An answer turned down as it came in; carries the error the request rejects with. */
class Refused extends Error {
  constructor(readonly error: AgentError) {
    super(error.message);
  }
}

// With its status: a 2xx the agent cannot read is, for the daemon and the outbox, one more
// garbled answer to a request the service accepted (daemon/controller.ts, outbox/outcome.ts).
function tooLarge(what: string, status: number | undefined): AgentError {
  return new AgentError('protocol', `${what}: response larger than ${MAX_RESPONSE_BYTES} bytes refused`, { ...(status !== undefined && { status }), source: what });
}

/** The rules viaGot applies, for an answer a wire delivered whole. */
function capped(res: WireResponse, what: string): Exchange {
  // A wire hands over the final answer only: a 1xx there is a 101 or a broken wire.
  if (res.status < 200) throw new Refused(unexpectedAnswer(what, res.status));
  if (res.body.length <= MAX_RESPONSE_BYTES) return res;
  if (isSuccess(res.status)) throw new Refused(tooLarge(what, res.status));
  return { ...res, body: Buffer.alloc(0), dropped: res.body.length };
}

function withMeta(res: RawResponse): ConstructorParameters<typeof AgentError>[2] {
  const d: ConstructorParameters<typeof AgentError>[2] = { status: res.status, rateLimit: res.meta.rateLimit, source: res.what };
  if (res.meta.clockOffsetMs !== undefined) d.clockOffsetMs = res.meta.clockOffsetMs;
  return d;
}

/** Validation errors get the response's status and meta attached. */
function withErrorMeta<T>(res: RawResponse, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof AgentError && err.kind === 'protocol') throw new AgentError('protocol', err.message, withMeta(res));
    throw err;
  }
}
