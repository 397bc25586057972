// The local API's server: HTTP/1.1 (node:http) on the unix socket
// `<runtime-dir>/api.sock`, answering from the one handler map
// (handlers.ts). Only the agent's user and its group may connect: the socket
// is made 0660 (under a umask, so it is never more open, not even for the
// moment between bind and chmod) in a runtime dir of 0750.
//
// One client must never cost the daemon more than its share (lib/timing.ts
// LOCAL_API): a cap on connections (the oldest idle one makes room for a
// newcomer) and a lower one on events streams (so readers never take the
// room GET /v1/status and the writes need), timeouts for a head, a request
// and an idle connection, a body cap (413), a header cap (431), a nesting cap
// (body.ts), garbage refused with 400, and an events reader that stops
// reading is given a bounded buffer, then its last line, then dropped; one
// that takes nothing on a quiet daemon is found out by keep-alive lines
// (event-stream.ts).
//
// The requests of one connection are answered one at a time, in the order
// they came, each once the one before it took effect and its answer was
// handed to the socket. While an answer is built or waits for the client to
// take it, the connection is not read: pipelined requests wait in the kernel,
// not as parsed requests and built answers in the heap. node parses a whole
// read at once (up to 64 KiB of requests), so what it parsed is bounded
// again (maxPipelined). Two requests of a connection never run in the same
// turn of the event loop, so one client's thousand requests cannot stall the
// others' answers or the heartbeat.
//
// Every answer is JSON, those node would give itself included (a request
// without Host, an Expect it does not know, CONNECT, a head that does not
// parse). Nothing here waits on a client: writes are queued, never awaited.
import { formatBytes } from '../lib/byte-size.js';
import * as fs from '../lib/fs-async.js';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { LOCAL_API } from '../lib/timing.js';
import { listenUnix, socketPathTooLong } from '../lib/socket-path.js';
import { oneLine } from '../lib/text.js';
import { parseJsonBody } from './body.js';
import { openEventStream } from './event-stream.js';
import { wireJson } from './wire-json.js';
import { ApiError, badRequest, type Answer, type HandlerMap, type StreamSink } from './handlers.js';
import { isoTime } from '../lib/iso-time.js';

export const API_SOCKET = 'api.sock';
export const SOCKET_MODE = 0o660;
/** An error message's most characters (a path the client sent may be kilobytes). */
const MAX_MESSAGE = 300;
/** A body refused by its declared length is read away before the answer when it is at most this many times the cap. */
const DRAIN_FACTOR = 8;

export interface LocalApiServerOptions {
  socketPath: string;
  routes: HandlerMap;
  /** The daemon's clock: events streams' keep-alive lines, stall checks and goodbyes (real ms, times its scale). */
  clock: Clock;
  logger?: Logger;
  /** Tests lower them; the defaults are LOCAL_API's. */
  limits?: Partial<Record<keyof typeof LOCAL_API, number>>;
}

/** One request read and waiting for its turn; `refusal` answers it instead of its handler. */
interface RequestTurn {
  kind: 'request';
  req: IncomingMessage;
  res: ServerResponse;
  refusal?: ApiError;
}

/** A whole answer for a socket node gave up parsing (a head that does not parse, CONNECT): written in its turn, then the connection ends. */
interface LastWords {
  kind: 'last-words';
  text: string;
}

interface Conn {
  /** Requests read and not yet answered, in the order they came; the first is the one being answered. */
  queue: Array<RequestTurn | LastWords>;
  /** Holds a stream open (GET /v1/events): never idle, never timed out. */
  streaming: boolean;
  /** Its last answer is queued: nothing read after it is served, and the connection ends after it. */
  closing: boolean;
  /** A request is being answered, or the turn after an answer is due: a request read meanwhile waits for it. */
  active: boolean;
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 405: 'Method Not Allowed', 408: 'Request Timeout', 413: 'Payload Too Large', 417: 'Expectation Failed', 431: 'Request Header Fields Too Large', 503: 'Service Unavailable' };
/** The methods the handler map serves: the `Allow` of a refused CONNECT. */
const SERVED_METHODS = 'GET, POST, PATCH, DELETE';

/**
 * node's http server's own mark on a connection it stopped reading
 * (_http_server.js sets it against a flood of pipelined requests and clears
 * it on drain). socket.pause() alone does not hold: node starts reading again
 * after every request it parses unless this is set. Clearing it also means
 * resuming node's parser, which it pauses at the end of a read under the mark.
 */
type HttpSocket = Socket & { _paused?: boolean; parser?: { resume(): void } | null };

/** Stop reading the connection: what the client sends next waits in the kernel. */
function holdReading(socket: Socket): void {
  const s = socket as HttpSocket;
  s._paused = true;
  s.pause();
}

function resumeReading(socket: Socket): void {
  const s = socket as HttpSocket;
  if (s.destroyed || s._paused !== true) return;
  s._paused = false;
  s.parser?.resume();
  s.resume();
}

/** A whole HTTP/1.1 error answer, for a socket that has no ServerResponse (a head that did not parse, a connection over the cap, CONNECT). */
function rawError(status: number, kind: string, message: string, extra = ''): string {
  const body = wireJson({ error: { kind, message } });
  return `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}connection: close\r\n\r\n${body}`;
}

export class LocalApiServer {
  private server: http.Server | undefined;
  private readonly conns = new Map<Socket, Conn>();
  private stopping = false;
  /** The events streams open now: each ends with a last line when the daemon stops. */
  private readonly sinks = new Set<StreamSink>();

  constructor(private readonly o: LocalApiServerOptions) {}

  private get limits(): Record<keyof typeof LOCAL_API, number> {
    return { ...LOCAL_API, ...this.o.limits };
  }

  /** Listens on the socket; call only while holding the run lock (a socket left there is then a dead daemon's). */
  async start(): Promise<void> {
    const { socketPath } = this.o;
    const tooLong = socketPathTooLong(socketPath);
    if (tooLong !== undefined) throw new Error(tooLong);
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
      // node would answer a request without Host itself, with an empty body: refused in serve(), as JSON.
      requireHostHeader: false,
    });
    this.server = server;
    // Inactivity on any socket that is not a stream: a connection that sends nothing is dropped.
    server.setTimeout(l.idleTimeoutMs, (socket: Socket) => {
      if (!this.conns.get(socket)?.streaming) socket.destroy();
    });
    server.on('connection', (socket: Socket) => this.admit(socket));
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => this.clientError(err, socket));
    server.on('request', (req: IncomingMessage, res: ServerResponse) => this.take(req, res));
    // An Expect node does not know: it would answer 417 with no body.
    server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) =>
      this.take(req, res, new ApiError(417, 'bad-request', `Expect: ${oneLine(String(req.headers.expect), 100)} is not served (only 100-continue is)`)),
    );
    // Without a listener node drops a CONNECT with no answer; the parser has let go of the socket either way.
    server.on('connect', (_req: IncomingMessage, socket: Socket) =>
      this.lastWords(socket, rawError(405, 'method-not-allowed', `CONNECT is not served: the local API is no proxy (allowed: ${SERVED_METHODS})`, `allow: ${SERVED_METHODS}\r\n`)),
    );
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // bind() creates the socket file with the process's umask: never more open than 0660.
      const old = process.umask(0o117);
      try {
        listenUnix(server, socketPath, () => {
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
    for (const s of [...this.sinks]) s.end({ type: 'bye', at: this.wallIso(), reason: 'the daemon is stopping' });
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
      const waiting = [...this.conns.entries()].filter(([, c]) => c.queue.length === 0 && !c.streaming).map(([s]) => s);
      const idle = waiting.find((s) => s.bytesRead === 0) ?? waiting[0];
      if (idle !== undefined) idle.destroy();
      else {
        socket.end(rawError(503, 'unavailable', `too many connections to the local API (${this.limits.maxConnections} busy); try again`));
        socket.destroySoon?.();
        return;
      }
    }
    this.conns.set(socket, { queue: [], streaming: false, closing: false, active: false });
    socket.on('close', () => this.conns.delete(socket));
    socket.on('error', () => undefined);
  }

  private clientError(err: NodeJS.ErrnoException, socket: Socket): void {
    // An answer already under way on this socket must not get an error head in its middle.
    const answering = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (err.code === 'ECONNRESET' || !socket.writable || (answering && (this.conns.get(socket)?.queue.length ?? 0) === 0)) {
      socket.destroy();
      return;
    }
    const [status, kind, message] =
      err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'too-large', `request head over ${formatBytes(this.limits.maxHeaderBytes)}`]
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'timeout', 'the request did not arrive in time']
      : [400, 'bad-request', `not an HTTP/1.1 request (${err.code ?? 'parse error'})`];
    this.o.logger?.debug({ code: err.code }, 'local API: refused a request that did not parse');
    // After the answers to the requests read before it, in their order.
    this.lastWords(socket, rawError(status, kind, message));
  }

  /** The last answer of a connection node no longer parses: written once the requests before it are answered, then the connection ends. */
  private lastWords(socket: Socket, text: string): void {
    const conn = this.conns.get(socket);
    if (conn === undefined) {
      socket.destroy();
      return;
    }
    holdReading(socket);
    // node no longer watches this socket's time (CONNECT) or will not (a parse error): a client that never takes its answers goes too.
    socket.setTimeout(this.limits.idleTimeoutMs, () => socket.destroy());
    // Its last answer is queued already (the backlog's 503): the connection ends with that one.
    if (conn.closing) return;
    conn.closing = true;
    conn.queue.push({ kind: 'last-words', text });
    if (!conn.active) this.turn(socket, conn);
  }

  /** A request parsed: queued behind those of its connection, each answered in its turn. */
  private take(req: IncomingMessage, res: ServerResponse, refusal?: ApiError): void {
    // No Date header: no client of this socket needs one, and node formats it with
    // toUTCString, which sets up V8's date cache (ICU's time zone data: 0.9 MiB of RSS).
    res.sendDate = false;
    const socket = req.socket;
    const conn = this.conns.get(socket);
    // A connection refused over the cap (its 503 on the way), or one whose last answer is queued: nothing more is served on it.
    if (conn === undefined || conn.closing) return;
    // Nothing more is read until this one is answered (serve() reads on for a body still on its way).
    holdReading(socket);
    if (conn.queue.length > this.limits.maxPipelined) {
      conn.closing = true;
      res.setHeader('connection', 'close');
      refusal = new ApiError(503, 'unavailable', `more than ${this.limits.maxPipelined} requests wait on this connection; this one and those after it were not served: send them again once the earlier ones are answered`);
    }
    conn.queue.push({ kind: 'request', req, res, ...(refusal && { refusal }) });
    if (!conn.active) this.turn(socket, conn);
  }

  /** Serves the first request of a connection's queue; the next one in a later turn of the event loop, once this answer was handed to the socket. */
  private turn(socket: Socket, conn: Conn): void {
    const head = conn.queue[0];
    if (head === undefined) {
      conn.active = false;
      if (!conn.closing) resumeReading(socket);
      return;
    }
    conn.active = true;
    if (head.kind === 'last-words') {
      socket.end(head.text);
      socket.destroySoon?.();
      return;
    }
    // 'close' follows 'finish' (the answer handed to the socket: the client took what came before) or the socket's end.
    head.res.once('close', () => {
      conn.queue.shift();
      if (socket.destroyed) return;
      // Other connections, the heartbeat and the bus get their turn between two answers of this one.
      setImmediate(() => this.turn(socket, conn));
    });
    void this.serve(head, conn);
  }

  private async serve(turn: RequestTurn, conn: Conn): Promise<void> {
    const { req, res } = turn;
    try {
      if (turn.refusal !== undefined) throw turn.refusal;
      // RFC 9112 3.2: a 1.1 request without Host is a 400 (node's own would have no body).
      if (req.httpVersion === '1.1' && req.headers.host === undefined) throw badRequest('an HTTP/1.1 request needs a Host header (any value will do: the socket is local)');
      let url: URL;
      try {
        url = new URL(req.url ?? '/', 'http://local');
      } catch {
        throw badRequest('the request target is not a path');
      }
      const method = req.method ?? 'GET';
      const match = this.o.routes.match(method, url.pathname);
      if (match.kind === 'no-path') throw new ApiError(404, 'not-found', `no such endpoint: ${url.pathname}`);
      if (match.kind === 'no-method') {
        res.setHeader('allow', match.allowed.join(', '));
        throw new ApiError(405, 'method-not-allowed', `${method} is not served on ${url.pathname} (allowed: ${match.allowed.join(', ')})`);
      }
      if (match.access === 'write' && this.stopping) throw new ApiError(503, 'unavailable', 'the daemon is stopping');
      // A body still on its way is read; what comes after it waits again while the answer is built.
      if (!req.complete) resumeReading(req.socket);
      const body = await this.readBody(req);
      holdReading(req.socket);
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

  /** The body as JSON (body.ts), within the cap; nothing read for a body the head already says is too large. */
  private async readBody(req: IncomingMessage): Promise<unknown> {
    const max = this.limits.maxBodyBytes;
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > max) {
      const refusal = new ApiError(413, 'too-large', `request body of ${formatBytes(declared)} is over the local API's cap of ${formatBytes(max)}`);
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
        if (size > max) throw new ApiError(413, 'too-large', `request body is over the local API's cap of ${formatBytes(max)}`);
        chunks.push(chunk);
      }
    } catch (err) {
      if (err instanceof ApiError) throw err;
      // The client went away mid-body (or sent less than it said): nobody is left to answer, and it is no bug of ours.
      throw new ApiError(400, 'bad-request', 'the request body ended before its length');
    }
    return parseJsonBody(Buffer.concat(chunks).toString('utf8'), this.limits.maxBodyDepth);
  }

  private answer(req: IncomingMessage, res: ServerResponse, answer: Answer, conn: Conn): void {
    if ('status' in answer) return sendJson(res, answer.status, answer.body);
    const streams = [...this.conns.values()].filter((c) => c.streaming).length;
    // Readers never go idle: without a cap of their own they could hold every connection.
    if (streams >= this.limits.maxStreams) {
      return sendJson(res, 503, { error: { kind: 'unavailable', message: `${streams} events streams are open, the most the local API keeps; close one, or try again later` } });
    }
    conn.streaming = true;
    const socket = req.socket;
    socket.setTimeout(0);
    // A stream that ended on a connection kept alive: an ordinary connection again, with its idle time.
    res.on('close', () => {
      conn.streaming = false;
      if (!socket.destroyed) socket.setTimeout(this.limits.idleTimeoutMs);
    });
    // Read on while nothing waits behind the stream, so a reader that hangs up is seen at once.
    if (conn.queue.length === 1) resumeReading(socket);
    res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
    res.flushHeaders();
    answer.stream(openEventStream(res, {
      clock: this.o.clock,
      limits: this.limits,
      wallIso: () => this.wallIso(),
      open: this.sinks,
      ...(this.o.logger !== undefined && { logger: this.o.logger }),
    }));
  }

  private wallIso(): string {
    return isoTime(this.o.clock.wallNow());
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
