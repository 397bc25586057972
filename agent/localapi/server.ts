// The local API's server: HTTP/1.1 (node:http) on the unix socket
// `<runtime-dir>/api.sock`, answering from the one handler map
// (handlers.ts). Only the agent's user and its group may connect: the socket
// is made 0660 (under a umask, so it is never more open, not even for the
// moment between bind and chmod) in a runtime dir of 0750.
//
// One client must never cost the daemon more than its share (lib/timing.ts
// LOCAL_API): a cap on connections (the oldest idle one makes room for a
// newcomer), timeouts for a head, a request and an idle connection, a body
// cap (413), a header cap (431), garbage refused with 400, and an events
// reader that stops reading is given a bounded buffer, then its last line,
// then dropped. Nothing here waits on a client: writes are queued, never
// awaited, so the heartbeat loop runs whatever a client does.
import { promises as fs } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../lib/logger.js';
import { LOCAL_API } from '../lib/timing.js';
import { oneLine } from '../lib/text.js';
import { scrub } from '../lib/secrets.js';
import { ApiError, type Answer, type HandlerMap, type StreamSink } from './handlers.js';

export const API_SOCKET = 'api.sock';
export const SOCKET_MODE = 0o660;
/** An error message's most characters (a path the client sent may be kilobytes). */
const MAX_MESSAGE = 300;
/** A body refused by its declared length is read away before the answer when it is at most this many times the cap. */
const DRAIN_FACTOR = 8;
/** sockaddr_un's sun_path holds 108 bytes, the last a NUL. */
export const MAX_SOCKET_PATH_BYTES = 107;

export interface LocalApiServerOptions {
  socketPath: string;
  routes: HandlerMap;
  logger?: Logger;
  /** Tests lower them; the defaults are LOCAL_API's. */
  limits?: Partial<Record<keyof typeof LOCAL_API, number>>;
}

interface Conn {
  /** Requests read and not yet answered. */
  busy: number;
  /** Holds a stream open (GET /v1/events): never idle, never timed out. */
  streaming: boolean;
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 413: 'Payload Too Large', 431: 'Request Header Fields Too Large', 503: 'Service Unavailable' };

/**
 * JSON as it leaves the socket: every string scrubbed of the secrets the
 * agent registered (lib/secrets.ts), the last line of defence the logs and the
 * CLI's output have too, so an error message that echoed a URL or a server's
 * body never hands a token to a UI.
 */
function wireJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' ? scrub(v) : v));
}

/** A whole HTTP/1.1 error answer, for a socket that has no ServerResponse (a head that did not parse, a connection over the cap). */
function rawError(status: number, kind: string, message: string): string {
  const body = wireJson({ error: { kind, message } });
  return `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

export class LocalApiServer {
  private server: http.Server | undefined;
  private readonly conns = new Map<Socket, Conn>();
  private stopping = false;
  private readonly sinks = new Set<{ end(last?: unknown): void }>();

  constructor(private readonly o: LocalApiServerOptions) {}

  private get limits(): Record<keyof typeof LOCAL_API, number> {
    return { ...LOCAL_API, ...this.o.limits };
  }

  /** Listens on the socket; call only while holding the run lock (a socket left there is then a dead daemon's). */
  async start(): Promise<void> {
    const { socketPath } = this.o;
    // libuv cuts a longer path short without a word and binds *there*: a socket somewhere else, with other permissions around it.
    if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
      throw new Error(`the socket path ${socketPath} is ${Buffer.byteLength(socketPath)} bytes, over the ${MAX_SOCKET_PATH_BYTES} a unix socket takes; use a shorter --runtime-dir`);
    }
    await removeStaleSocket(socketPath);
    const l = this.limits;
    const server = http.createServer({
      maxHeaderSize: l.maxHeaderBytes,
      headersTimeout: l.headersTimeoutMs,
      requestTimeout: l.requestTimeoutMs,
      keepAliveTimeout: l.idleTimeoutMs,
      // node checks heads and requests against their timeouts on this interval, connections or not: every
      // second would wake an idle camera every second; a head is dropped within twice its timeout instead.
      connectionsCheckingInterval: l.headersTimeoutMs,
    });
    this.server = server;
    // Inactivity on any socket that is not a stream: a connection that sends nothing is dropped.
    server.setTimeout(l.idleTimeoutMs, (socket: Socket) => {
      if (!this.conns.get(socket)?.streaming) socket.destroy();
    });
    server.on('connection', (socket: Socket) => this.admit(socket));
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => this.clientError(err, socket));
    server.on('request', (req: IncomingMessage, res: ServerResponse) => void this.serve(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // bind() creates the socket file with the process's umask: never more open than 0660.
      const old = process.umask(0o117);
      try {
        server.listen(socketPath, () => {
          server.off('error', reject);
          resolve();
        });
      } finally {
        process.umask(old);
      }
    });
    server.on('error', (err) => this.o.logger?.error({ err: String(err) }, 'local API: the server failed'));
    try {
      await fs.chmod(socketPath, SOCKET_MODE);
    } catch (err) {
      // Not served at all rather than served with modes nobody chose.
      await this.stop();
      throw err;
    }
  }

  /** Stops taking connections, ends every stream, drops every connection, removes the socket. */
  async stop(): Promise<void> {
    this.stopping = true;
    const server = this.server;
    if (server === undefined) return;
    this.server = undefined;
    for (const s of [...this.sinks]) s.end({ type: 'bye', at: new Date().toISOString(), reason: 'the daemon is stopping' });
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    // Whatever is left (a stream's last line not taken, a slow request) goes now: stop must not wait on a client.
    setTimeout(() => {
      for (const s of this.conns.keys()) s.destroy();
    }, 200).unref();
    await closed;
    await fs.unlink(this.o.socketPath).catch(() => undefined);
  }

  /** Connections open now (for tests and the status of the API itself). */
  get connections(): number {
    return this.conns.size;
  }

  private admit(socket: Socket): void {
    if (this.conns.size >= this.limits.maxConnections) {
      // Make room by dropping the oldest connection that is waiting for nothing (a Map keeps insertion order):
      // first one that never sent a byte, so a flood of empty connections cannot push out a client whose
      // request is already on its way but not yet parsed.
      const waiting = [...this.conns.entries()].filter(([, c]) => c.busy === 0 && !c.streaming).map(([s]) => s);
      const idle = waiting.find((s) => s.bytesRead === 0) ?? waiting[0];
      if (idle !== undefined) idle.destroy();
      else {
        socket.end(rawError(503, 'unavailable', `too many connections to the local API (${this.limits.maxConnections} busy); try again`));
        socket.destroySoon?.();
        return;
      }
    }
    this.conns.set(socket, { busy: 0, streaming: false });
    socket.on('close', () => this.conns.delete(socket));
    socket.on('error', () => undefined);
  }

  private clientError(err: NodeJS.ErrnoException, socket: Socket): void {
    // An answer already under way on this socket (pipelined requests) must not get an error head in its middle.
    const answering = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (err.code === 'ECONNRESET' || !socket.writable || answering) {
      socket.destroy();
      return;
    }
    const [status, kind, message] =
      err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'too-large', `request head over ${this.limits.maxHeaderBytes} bytes`]
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'timeout', 'the request did not arrive in time']
      : [400, 'bad-request', `not an HTTP/1.1 request (${err.code ?? 'parse error'})`];
    this.o.logger?.debug({ code: err.code }, 'local API: refused a request that did not parse');
    socket.end(rawError(status, kind, message));
    socket.destroySoon?.();
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const conn = this.conns.get(req.socket);
    if (conn) conn.busy++;
    res.on('close', () => {
      if (conn) conn.busy = Math.max(0, conn.busy - 1);
    });
    try {
      const url = new URL(req.url ?? '/', 'http://local');
      const method = req.method ?? 'GET';
      const match = this.o.routes.match(method, url.pathname);
      if (match.kind === 'no-path') throw new ApiError(404, 'not-found', `no such endpoint: ${url.pathname}`);
      if (match.kind === 'no-method') {
        res.setHeader('allow', match.allowed.join(', '));
        throw new ApiError(405, 'method-not-allowed', `${method} is not served on ${url.pathname} (allowed: ${match.allowed.join(', ')})`);
      }
      if (match.access === 'write' && this.stopping) throw new ApiError(503, 'unavailable', 'the daemon is stopping');
      const body = await this.readBody(req);
      const answer = await match.handler({ method, path: url.pathname, params: match.params, query: url.searchParams, body });
      if (match.access === 'write') this.o.logger?.info({ method, path: url.pathname, status: 'status' in answer ? answer.status : 200 }, 'local API: request');
      this.answer(req, res, answer, conn);
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(500, 'internal', `the daemon failed to answer: ${err instanceof Error ? err.message : String(err)}`);
      if (!(err instanceof ApiError)) this.o.logger?.error({ err: String(err), path: req.url }, 'local API: a handler failed (a bug)');
      // A body left unread (far too large, or cut off as it passed the cap) must not be parsed as the next request: the connection ends with the answer.
      if (e.status === 413 && !req.complete) res.setHeader('connection', 'close');
      // One line, and not the whole of a 5 KB path the client sent.
      sendJson(res, e.status, { error: { kind: e.kind, message: oneLine(e.message, MAX_MESSAGE) } });
    }
  }

  /** The body as JSON, within the cap; nothing read for a body the head already says is too large. */
  private async readBody(req: IncomingMessage): Promise<unknown> {
    const max = this.limits.maxBodyBytes;
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > max) {
      const refusal = new ApiError(413, 'too-large', `request body of ${declared} bytes is over the local API's cap of ${max}`);
      // Not much over: read it away first, so a client still sending gets the answer rather than a reset (the
      // connection may close right after the answer). Far over: answered at once, the connection closed.
      if (declared <= DRAIN_FACTOR * max) {
        try {
          for await (const _ of req as AsyncIterable<Buffer>) {
            // dropped
          }
        } catch {
          // gone: nobody to answer
        }
      }
      throw refusal;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of req as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > max) throw new ApiError(413, 'too-large', `request body is over the local API's cap of ${max} bytes`);
        chunks.push(chunk);
      }
    } catch (err) {
      if (err instanceof ApiError) throw err;
      // The client went away mid-body (or sent less than it said): nobody is left to answer, and it is no bug of ours.
      throw new ApiError(400, 'bad-request', 'the request body ended before its length');
    }
    if (size === 0) return undefined;
    try {
      return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    } catch {
      throw new ApiError(400, 'bad-request', 'the request body is not JSON');
    }
  }

  private answer(req: IncomingMessage, res: ServerResponse, answer: Answer, conn: Conn | undefined): void {
    if ('status' in answer) return sendJson(res, answer.status, answer.body);
    if (conn) conn.streaming = true;
    const socket = req.socket;
    socket.setTimeout(0);
    // A stream that ended on a connection kept alive: an ordinary connection again, with its idle time.
    res.on('close', () => {
      if (conn) conn.streaming = false;
      if (!socket.destroyed) socket.setTimeout(this.limits.idleTimeoutMs);
    });
    res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
    res.flushHeaders();
    answer.stream(this.sink(res));
  }

  /** A stream's writer: one line per send, never awaited; a reader too far behind gets one last line and is dropped. */
  private sink(res: ServerResponse): StreamSink {
    const cap = this.limits.eventsBufferBytes;
    const goodbyeMs = this.limits.eventsGoodbyeMs;
    const closers: Array<() => void> = [];
    let open = true;
    const close = (): void => {
      if (!open) return;
      open = false;
      this.sinks.delete(sink);
      for (const fn of closers.splice(0)) fn();
    };
    const sink: StreamSink = {
      send: (obj) => {
        if (!open) return false;
        if (res.writableLength > cap) {
          sink.end({ type: 'overflow', at: new Date().toISOString(), message: `this reader fell more than ${cap} bytes behind; reconnect and read GET /v1/status first` });
          return false;
        }
        res.write(`${wireJson(obj)}\n`);
        return true;
      },
      end: (last) => {
        if (!open) return;
        close();
        res.end(last === undefined ? undefined : `${wireJson(last)}\n`);
        // A reader that takes nothing more would keep the line and the socket forever.
        setTimeout(() => res.destroy(), goodbyeMs).unref();
      },
      get buffered() {
        return res.writableLength;
      },
      onClose: (fn) => {
        if (open) closers.push(fn);
        else fn();
      },
    };
    this.sinks.add(sink);
    res.on('close', close);
    return sink;
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = wireJson(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * A socket file left by a daemon that died: ours to remove, since the caller
 * holds the run lock. Anything else at that path (a file, a folder) is not
 * ours, and listening fails with a clear error instead of deleting it.
 */
async function removeStaleSocket(socketPath: string): Promise<void> {
  let st;
  try {
    st = await fs.lstat(socketPath);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (!st.isSocket()) throw new Error(`${socketPath} exists and is not a socket; remove it so the local API can listen there`);
  await fs.unlink(socketPath);
}
