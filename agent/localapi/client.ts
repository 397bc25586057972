// A small client of the local API for the CLI and the tests: one JSON
// request over the unix socket, or the events stream as parsed lines. It
// speaks plain node:http (no got: the socket is local, and got is for the
// service). A failure to reach the daemon is a LocalApiUnreachable whose
// `code` says why (ENOENT or ECONNREFUSED: no daemon serves it; EACCES: this
// user may not connect; ETIMEDOUT: no answer in time).
import { formatBytes } from '../lib/byte-size.js';
import { socketPathTooLong } from '../lib/socket-path.js';
import http from 'node:http';

export interface ApiReply<T = unknown> {
  status: number;
  body: T;
}

export interface ApiRequestOptions {
  /** Real ms for the whole exchange (default 10 s). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export class LocalApiUnreachable extends Error {
  constructor(
    readonly code: string,
    readonly socketPath: string,
    message: string,
  ) {
    super(message);
  }
}

/** The most of an answer the client reads: the API's answers are small; a larger one is not the daemon's. */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

function unreachable(err: NodeJS.ErrnoException, socketPath: string): LocalApiUnreachable {
  const code = err.code ?? 'EIO';
  return new LocalApiUnreachable(code, socketPath, `cannot reach the daemon's API at ${socketPath} (${code})`);
}

/** A path libuv would shorten, connecting to someone else's socket perhaps (lib/socket-path.ts). */
function tooLong(socketPath: string): LocalApiUnreachable | undefined {
  const why = socketPathTooLong(socketPath);
  return why === undefined ? undefined : new LocalApiUnreachable('ENAMETOOLONG', socketPath, `the daemon's API: ${why}`);
}

/** One request with an optional JSON body; resolves with the status and the parsed JSON answer (a non-JSON answer is kept as text). */
export function apiRequest<T = unknown>(socketPath: string, method: string, path: string, body?: unknown, o: ApiRequestOptions = {}): Promise<ApiReply<T>> {
  return new Promise((resolve, reject) => {
    const long = tooLong(socketPath);
    if (long) return reject(long);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request({
      socketPath,
      method,
      path,
      headers: { accept: 'application/json', ...(payload && { 'content-type': 'application/json', 'content-length': payload.length }) },
      timeout: o.timeoutMs ?? 10_000,
      ...(o.signal && { signal: o.signal }),
    });
    let connected = false;
    // A kept-alive socket is connected already, and never emits 'connect' again: a listener on it would stay for good, one per request.
    req.on('socket', (s) => {
      if (s.connecting) s.once('connect', () => (connected = true));
      else connected = true;
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    req.on('error', (err: NodeJS.ErrnoException) => reject(connected && err.code !== 'ETIMEDOUT' ? err : unreachable(err, socketPath)));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_ANSWER_BYTES) req.destroy(new Error(`the daemon's answer is over ${formatBytes(MAX_ANSWER_BYTES)}`));
        else chunks.push(c);
      });
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = text === '' ? undefined : JSON.parse(text);
        } catch {
          // kept as text
        }
        resolve({ status: res.statusCode ?? 0, body: parsed as T });
      });
    });
    req.end(payload);
  });
}

export interface EventsOptions {
  signal?: AbortSignal;
  /** Real ms to wait for the answer's head (default 10 s); the stream itself has no time limit. */
  connectTimeoutMs?: number;
}

/**
 * Reads GET /v1/events until the daemon ends it or `signal` aborts: each
 * line parsed and given to `onEvent` as it arrives. Resolves when the
 * stream ends (an abort included); rejects when the daemon cannot be reached.
 */
export function apiEvents(socketPath: string, onEvent: (event: Record<string, unknown>) => void, o: EventsOptions = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const long = tooLong(socketPath);
    if (long) return reject(long);
    const req = http.request({ socketPath, method: 'GET', path: '/v1/events', headers: { accept: 'application/x-ndjson' } });
    let started = false;
    const head = setTimeout(() => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })), o.connectTimeoutMs ?? 10_000);
    const onAbort = (): void => {
      req.destroy();
      resolve();
    };
    o.signal?.addEventListener('abort', onAbort, { once: true });
    const done = (): void => {
      clearTimeout(head);
      o.signal?.removeEventListener('abort', onAbort);
    };
    req.on('error', (err: NodeJS.ErrnoException) => {
      done();
      if (o.signal?.aborted || started) resolve();
      else reject(unreachable(err, socketPath));
    });
    req.on('response', (res) => {
      started = true;
      clearTimeout(head);
      if (res.statusCode !== 200) {
        res.resume();
        done();
        reject(new Error(`GET /v1/events answered ${res.statusCode}`));
        return;
      }
      let rest = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        rest += chunk;
        let nl: number;
        while ((nl = rest.indexOf('\n')) >= 0) {
          const line = rest.slice(0, nl);
          rest = rest.slice(nl + 1);
          if (line.trim() === '') continue;
          try {
            onEvent(JSON.parse(line) as Record<string, unknown>);
          } catch {
            // a line that is not JSON is not the daemon's: skipped
          }
        }
      });
      res.on('close', () => {
        done();
        resolve();
      });
    });
    req.end();
  });
}
