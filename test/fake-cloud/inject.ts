// The in-process entry: one request handed to the same pipeline the HTTP
// server runs (router, rate limits, faults, referee, journal), without a
// socket. The pipeline reads a request and writes a response through a few
// members of IncomingMessage and ServerResponse; this file provides exactly
// those, so both paths share every line of request handling.
import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface InjectRequest {
  method: string;
  /** Path, optionally with a query string. */
  path: string;
  headers: Record<string, string>;
  body?: Buffer | string;
}

export interface InjectResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** A network-level failure, as a socket would report it. */
export function socketError(code: 'ECONNREFUSED' | 'ECONNRESET', message: string): Error {
  return Object.assign(new Error(message), { code });
}

/** Collects what the pipeline writes; a destroyed "socket" is a reset. */
class ResponseSink extends EventEmitter {
  destroyed = false;
  headersSent = false;
  private status = 0;
  private headers: Record<string, string> = {};
  private readonly chunks: Buffer[] = [];

  constructor(
    private readonly date: () => string,
    private readonly done: (r: InjectResponse) => void,
    private readonly fail: (e: Error) => void,
  ) {
    super();
  }

  writeHead(status: number, headers: Record<string, string | number> = {}): this {
    this.status = status;
    this.headers = { date: this.date() };
    for (const [k, v] of Object.entries(headers)) this.headers[k.toLowerCase()] = String(v);
    this.headersSent = true;
    return this;
  }

  write(chunk: Buffer | string, cb?: () => void): boolean {
    if (!this.destroyed) this.chunks.push(Buffer.from(chunk));
    if (cb) queueMicrotask(cb);
    return true;
  }

  end(chunk?: Buffer | string): this {
    if (this.destroyed) return this;
    if (chunk !== undefined) this.chunks.push(Buffer.from(chunk));
    this.destroyed = true;
    this.done({ status: this.status, headers: this.headers, body: Buffer.concat(this.chunks) });
    return this;
  }

  destroy(): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    this.fail(socketError('ECONNRESET', 'socket hang up'));
    return this;
  }
}

/** Runs `handle` (the pipeline's) on one request; resolves with its response or rejects with ECONNRESET. */
export function injectInto(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  request: InjectRequest,
  date: () => string,
): Promise<InjectResponse> {
  return new Promise((resolve, reject) => {
    const res = new ResponseSink(date, resolve, reject);
    const headers: Record<string, string> = { host: '127.0.0.1' };
    for (const [k, v] of Object.entries(request.headers)) headers[k.toLowerCase()] = v;
    // A body is read as a stream; without one (most requests) nothing reads it, so no stream is made.
    const hasBody = request.body !== undefined && request.body.length > 0;
    const stream = hasBody ? new PassThrough() : new EventEmitter();
    const req = Object.assign(stream, {
      method: request.method,
      url: request.path,
      headers,
      socket: { destroy: () => res.destroy() },
    });
    if (stream instanceof PassThrough) stream.end(request.body);
    handle(req as unknown as IncomingMessage, res as unknown as ServerResponse);
  });
}
