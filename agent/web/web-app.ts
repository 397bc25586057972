// The camera's web page, served: loaded on the first request to the web
// server (web-server.ts), never while the page is off. A thin client of the
// local API: the page's `/api/v1/...` requests are answered by the local
// API's own handler map, in-process (the same handlers, the same answers,
// the same events lines as GET /v1/events), behind this page's rules
// (security.ts): the camera's Host only, a session from the PIN, the
// session's CSRF token on every write, and only the routes the page uses.
//
//   GET  /, /app.js, /app.css      the page (page/, built into page-assets.ts)
//   GET  /session                  { signedIn, csrf, inputs } or { signedIn: false, pausedSeconds }
//   POST /session {"pin"}          signs in: the cookie, and { csrf, inputs }
//   DELETE /session                signs out
//   GET  /qr.svg?text=URL          the QR code of a pairing link (signed in)
//   *    /api/v1/...               the local API's /v1/..., for the routes in PAGE_ROUTES
//
// GET /api/v1/events is a server-sent events stream of the events lines
// (one `data:` line each); EventSource reconnects by itself, and every
// connection starts with the status document.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock, Timer } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { redactObject } from '../lib/secrets.js';
import { oneLine } from '../lib/text.js';
import { WEB_PAGE } from '../lib/timing.js';
import { parseJsonBody } from '../localapi/body.js';
import { ApiError, HandlerMap, type StreamSink } from '../localapi/handlers.js';
import { PAGE_CSS, PAGE_HTML, PAGE_JS } from './page-assets.js';
import { QR_MAX_TEXT, qrSvg } from './qr.js';
import { cameraNames, clearedCookie, cookieName, cookieValue, csrfOk, hostAllowed, PinLimiter, sameOrigin, SECURITY_HEADERS, sessionCookie, Sessions, type CameraNames } from './security.js';

/** A button of the page: a profile input (profile channel `inputs`), pressed with POST /v1/inputs/{channel}/{index}. */
export interface PageInput {
  channel: string;
  index: number;
  name: string;
}

export interface WebAppDeps {
  clock: Clock;
  logger?: Logger;
  /** The local API's one handler map. */
  routes: Pick<HandlerMap, 'match'>;
  /** The PIN in force. */
  pin: () => string;
  https: boolean;
  /** The listen address (webListen's host): one of the camera's own. */
  listenHost: string;
  /** What the camera answers to; default its interfaces' addresses and its names (security.ts cameraNames). */
  camera?: CameraNames;
  inputs: () => readonly PageInput[];
  limits?: Partial<Record<keyof typeof WEB_PAGE, number>>;
}

/**
 * The local API routes the page may use, and nothing else: GET /v1/web (the
 * PIN, for the camera's own UI), unpairing and queueing files by path stay
 * on the socket.
 */
export const PAGE_ROUTES: ReadonlyArray<readonly [string, string]> = [
  ['GET', '/v1/status'],
  ['GET', '/v1/events'],
  ['GET', '/v1/uploads'],
  ['DELETE', '/v1/uploads'],
  ['DELETE', '/v1/uploads/{id}'],
  ['GET', '/v1/prefs'],
  ['PATCH', '/v1/prefs'],
  ['POST', '/v1/pair'],
  ['DELETE', '/v1/pair'],
  ['POST', '/v1/inputs/{channel}/{index}'],
];

const ASSETS: Record<string, { type: string; body: string }> = {
  '/': { type: 'text/html; charset=utf-8', body: PAGE_HTML },
  '/index.html': { type: 'text/html; charset=utf-8', body: PAGE_HTML },
  '/app.js': { type: 'text/javascript; charset=utf-8', body: PAGE_JS },
  '/app.css': { type: 'text/css; charset=utf-8', body: PAGE_CSS },
};

const READS = new Set(['GET', 'HEAD']);

/** A refusal of the page's own: a status and `{"error":{"kind","message"}}`. */
const refuse = (status: number, kind: string, message: string, extra: Record<string, unknown> = {}): ApiError & { extra: Record<string, unknown> } => Object.assign(new ApiError(status, kind, message), { extra });

/** JSON for the page: secret keys and registered secrets out, as every output of the agent (lib/secrets.ts). */
const pageJson = (value: unknown): string => JSON.stringify(redactObject(value));

interface Stream {
  session: string;
  sink: StreamSink;
}

export class WebApp {
  private readonly sessions: Sessions;
  private readonly limiter: PinLimiter;
  private readonly allowed = new HandlerMap();
  private readonly streams = new Set<Stream>();
  private readonly limits: Record<keyof typeof WEB_PAGE, number>;
  private readonly camera: CameraNames;

  constructor(private readonly d: WebAppDeps) {
    this.camera = d.camera ?? cameraNames(d.listenHost);
    this.limits = { ...WEB_PAGE, ...d.limits };
    this.sessions = new Sessions(d.clock, this.limits);
    this.limiter = new PinLimiter(d.clock, this.limits);
    for (const [method, path] of PAGE_ROUTES) this.allowed.add(method, path, READS.has(method) ? 'read' : 'write', () => ({ status: 204, body: null }));
    this.sessions.onEnd((id) => {
      for (const s of [...this.streams]) if (s.session === id) s.sink.end({ type: 'signed-out', at: this.iso() });
    });
  }

  /** Ends every live-update stream and session (the server stops). */
  stop(): void {
    for (const s of [...this.streams]) s.sink.end({ type: 'bye', at: this.iso(), reason: 'the daemon is stopping' });
    this.sessions.endAll();
  }

  get streamCount(): number {
    return this.streams.size;
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    void this.serve(req, res).catch((err: unknown) => {
      const e = err instanceof ApiError ? err : new ApiError(500, 'internal', 'the camera failed to answer');
      if (!(err instanceof ApiError)) this.d.logger?.error({ err: String(err), path: pathOnly(req.url) }, 'web page: a request failed (a bug)');
      this.json(res, e.status, { error: { kind: e.kind, message: oneLine(e.message, 300) }, ...(err as { extra?: object }).extra }, e.status === 429 ? { 'retry-after': String((err as { extra?: { pausedSeconds?: number } }).extra?.pausedSeconds ?? 1) } : {});
    });
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    // DNS rebinding: another site's name pointed at the camera sends that name.
    if (!hostAllowed(req.headers.host, this.camera)) {
      this.d.logger?.debug({ path: pathOnly(req.url) }, 'web page: refused a request for another host');
      throw refuse(421, 'wrong-host', "this page answers only at the camera's own address or name: open it by the address the camera shows");
    }
    const method = req.method ?? 'GET';
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://camera');
    } catch {
      throw refuse(400, 'bad-request', 'the request target is not a path');
    }
    const path = url.pathname;
    const asset = ASSETS[path];
    if (asset !== undefined) {
      if (!READS.has(method)) throw refuse(405, 'method-not-allowed', `${method} is not served on ${path}`);
      res.writeHead(200, { 'content-type': asset.type, 'content-length': Buffer.byteLength(asset.body) });
      res.end(method === 'HEAD' ? undefined : asset.body);
      return;
    }
    if (path === '/favicon.ico') {
      res.writeHead(204);
      res.end();
      return;
    }
    if (path === '/session') return this.session(req, res, method);
    const signedIn = this.sessions.find(cookieValue(req.headers.cookie, cookieName(this.d.https)));
    if (signedIn === undefined) throw refuse(401, 'signed-out', 'sign in with the PIN first');
    if (!READS.has(method)) this.checkWrite(req, signedIn.session);
    if (path === '/qr.svg' && READS.has(method)) return this.qr(res, url.searchParams.get('text') ?? '');
    if (!path.startsWith('/api/v1/')) throw refuse(404, 'not-found', `no such page: ${oneLine(path, 100)}`);
    await this.api(req, res, method, path.slice('/api'.length), url.searchParams, signedIn.id);
  }

  /** A write from the page: same origin as far as the browser says, and its session's CSRF token. */
  private checkWrite(req: IncomingMessage, session: { csrf: string }): void {
    if (!sameOrigin(req.headers)) throw refuse(403, 'cross-origin', 'a write must come from the page itself');
    if (!csrfOk(session, req.headers['x-csrf-token'])) throw refuse(403, 'csrf', 'this write lacks the session\'s CSRF token: reload the page');
  }

  private async session(req: IncomingMessage, res: ServerResponse, method: string): Promise<void> {
    const cookie = cookieValue(req.headers.cookie, cookieName(this.d.https));
    if (method === 'GET') {
      const s = this.sessions.find(cookie);
      if (s !== undefined) return this.json(res, 200, { signedIn: true, csrf: s.session.csrf, inputs: this.d.inputs() });
      const paused = this.limiter.pausedFor();
      return this.json(res, 200, { signedIn: false, ...(paused > 0 && { pausedSeconds: Math.ceil(paused / 1000) }) });
    }
    if (method === 'DELETE') {
      const s = this.sessions.find(cookie);
      if (s !== undefined) {
        this.checkWrite(req, s.session);
        this.sessions.end(s.id);
      }
      return this.json(res, 200, { signedIn: false }, { 'set-cookie': clearedCookie(this.d.https) });
    }
    if (method !== 'POST') throw refuse(405, 'method-not-allowed', `${method} is not served on /session`);
    // No session yet, so no CSRF token: a form of another site cannot send JSON, nor a same-origin Origin.
    if (!sameOrigin(req.headers) || !/^application\/json\b/i.test(req.headers['content-type'] ?? '')) throw refuse(403, 'cross-origin', 'sign in from the page itself');
    const body = await this.body(req);
    const typed = typeof body === 'object' && body !== null && typeof (body as { pin?: unknown }).pin === 'string' ? (body as { pin: string }).pin : '';
    const verdict = this.limiter.attempt(typed.slice(0, 128), this.d.pin());
    if (verdict.kind === 'paused') {
      const s = Math.ceil(verdict.retryInMs / 1000);
      throw refuse(429, 'paused', `Too many wrong PINs: signing in is paused for ${s} s more.`, { pausedSeconds: s });
    }
    if (verdict.kind === 'wrong') {
      if (verdict.pausedMs !== undefined) {
        const s = Math.ceil(verdict.pausedMs / 1000);
        this.d.logger?.warn({ pausedSeconds: s }, 'web page: too many wrong PINs; signing in is paused');
        throw refuse(429, 'paused', `Wrong PIN. Too many wrong PINs: signing in is paused for ${s} s.`, { pausedSeconds: s });
      }
      this.d.logger?.info({ triesLeft: verdict.triesLeft }, 'web page: a wrong PIN');
      throw refuse(401, 'wrong-pin', `Wrong PIN. ${verdict.triesLeft} ${verdict.triesLeft === 1 ? 'try' : 'tries'} left before a pause.`, { triesLeft: verdict.triesLeft });
    }
    const made = this.sessions.create();
    this.d.logger?.info({ sessions: this.sessions.size }, 'web page: signed in');
    this.json(res, 200, { signedIn: true, csrf: made.session.csrf, inputs: this.d.inputs() }, { 'set-cookie': sessionCookie(made.token, this.d.https) });
  }

  private qr(res: ServerResponse, text: string): void {
    if (text.length > QR_MAX_TEXT || !/^https?:\/\/[^\s]+$/i.test(text)) throw refuse(400, 'bad-request', 'text must be an http(s) link of at most 1024 characters');
    const svg = qrSvg(text);
    if (svg === undefined) throw refuse(400, 'bad-request', 'the link does not fit in a QR code');
    res.writeHead(200, { 'content-type': 'image/svg+xml', 'content-length': Buffer.byteLength(svg) });
    res.end(svg);
  }

  /** One local API request, answered by its own handler. */
  private async api(req: IncomingMessage, res: ServerResponse, method: string, path: string, query: URLSearchParams, session: string): Promise<void> {
    const allowed = this.allowed.match(method, path);
    if (allowed.kind !== 'found') throw refuse(allowed.kind === 'no-method' ? 405 : 404, allowed.kind === 'no-method' ? 'method-not-allowed' : 'not-found', `the page does not use ${method} ${oneLine(path, 100)}`);
    const match = this.d.routes.match(method, path);
    if (match.kind !== 'found') throw refuse(404, 'not-found', `no such endpoint: ${oneLine(path, 100)}`);
    const body = await this.body(req);
    const answer = await match.handler({ method, path, params: match.params, query, body });
    if (match.access === 'write') this.d.logger?.info({ method, path, status: 'status' in answer ? answer.status : 200 }, 'web page: request');
    if ('status' in answer) return this.json(res, answer.status, answer.body);
    this.stream(req, res, session, (sink) => answer.stream(sink));
  }

  /** The body as JSON (the local API's parser), within the page's cap. */
  private async body(req: IncomingMessage): Promise<unknown> {
    const max = this.limits.maxBodyBytes;
    if (Number(req.headers['content-length'] ?? 0) > max) throw refuse(413, 'too-large', `request body over ${max} bytes`);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > max) throw refuse(413, 'too-large', `request body over ${max} bytes`);
      chunks.push(chunk);
    }
    return parseJsonBody(Buffer.concat(chunks).toString('utf8'));
  }

  /**
   * A server-sent events stream of the events lines. Never waited on: a
   * reader more than eventsBufferBytes behind is ended (its EventSource
   * reconnects and starts again from the status); a comment line after
   * eventsKeepAliveMs of silence finds a reader that is gone.
   */
  private stream(req: IncomingMessage, res: ServerResponse, session: string, attach: (sink: StreamSink) => void): void {
    const { clock } = this.d;
    const l = this.limits;
    // The oldest stream makes room: a phone that slept left its stream behind.
    if (this.streams.size >= l.maxStreams) [...this.streams][0]?.sink.end({ type: 'overflow', at: this.iso(), message: 'too many pages open' });
    const closers: Array<() => void> = [];
    let open = true;
    let ticker: Timer | undefined;
    let lastSent = clock.now();
    const close = (): void => {
      if (!open) return;
      open = false;
      ticker?.cancel();
      this.streams.delete(entry);
      for (const fn of closers.splice(0)) fn();
    };
    const write = (text: string): void => {
      lastSent = clock.now();
      res.write(text);
    };
    const keepAlive = l.eventsKeepAliveMs * clock.scale;
    const tick = (): void => {
      if (!open) return;
      if (clock.now() - lastSent >= keepAlive) write(': keepalive\n\n');
      ticker = clock.setTimer(tick, keepAlive);
    };
    const sink: StreamSink = {
      send: (obj) => {
        if (!open) return false;
        if (res.writableLength > l.eventsBufferBytes) {
          sink.end({ type: 'overflow', at: this.iso(), message: 'this page fell behind; it reconnects' });
          return false;
        }
        write(`data: ${pageJson(obj)}\n\n`);
        return true;
      },
      end: (last) => {
        if (!open) return;
        close();
        res.end(last === undefined ? undefined : `data: ${pageJson(last)}\n\n`);
      },
      get buffered() {
        return res.writableLength;
      },
      onClose: (fn) => {
        if (open) closers.push(fn);
        else fn();
      },
    };
    const entry: Stream = { session, sink };
    this.streams.add(entry);
    res.on('close', close);
    req.socket.setTimeout(0);
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
    res.write('retry: 2000\n\n');
    ticker = clock.setTimer(tick, keepAlive);
    attach(sink);
  }

  private json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const text = pageJson(body);
    res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  private iso(): string {
    return new Date(this.d.clock.wallNow()).toISOString();
  }
}

const pathOnly = (url: string | undefined): string => oneLine((url ?? '/').split('?')[0] ?? '/', 100);
