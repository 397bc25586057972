// The client for presigned storage URLs (media chunk PUTs). Deliberately not
// the service transport: storage must never see the bearer token or
// x-client-version, the URL is absolute and signed, bodies are streamed and
// far above the API's 1 MiB cap, and an upload that takes minutes over a slow
// uplink is normal, so there is no total time cap, only stall limits.
import http from 'node:http';
import { Readable, pipeline } from 'node:stream';
import { got, type Got, type Request } from 'got';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { AgentError } from '../lib/errors.js';
import { oneLine, quote } from '../lib/text.js';
import { CONNECT_TIMEOUT_MS, LOOKUP_TIMEOUT_MS, REQUEST_TIMEOUT_MS } from '../lib/timing.js';
import { networkError, refuseInterim, refuseUpgrade } from './http-errors.js';
import { DEFAULT_RETRY_AFTER_MS, header, parseRetryAfter, type HeaderBag } from './rate-limit.js';
import { IDLE_SOCKET_MS } from './transport.js';
import { dropIdleSockets, dropSocketsOn, probeWhileWaiting } from './sockets.js';
import { clientAgents, GOT_RULES, type ExtraCas } from './trust.js';
import { BufferPool, SliceReadError, exactLength, isFileSlice, readFileSlice, type FileSlice, type FileSliceReader } from './storage-body.js';
import type { Wire } from './wire.js';

export type { FileSlice };

/** Storage errors are a few hundred bytes of XML; more than this is not read. */
export const MAX_ERROR_BODY_BYTES = 4096;

// Resolving and connecting are as quick for storage as for the API; the
// same bounds as the service transport.

export interface StorageClientOptions {
  clock: Clock;
  logger?: Logger;
  /** How long a kept-alive socket may sit unused before it is closed, real ms (default IDLE_SOCKET_MS). */
  idleSocketMs?: number;
  /** Longest time without a byte moving either way on a live upload, agent ms (default REQUEST_TIMEOUT_MS). */
  inactivityMs?: number;
  /** Longest wait for the answer once the whole body was sent, agent ms (default REQUEST_TIMEOUT_MS). */
  responseMs?: number;
  userAgent?: string;
  /** CAs trusted besides the system's (the caFile setting). */
  extraCas?: ExtraCas | undefined;
  /**
   * Replaces the HTTP exchange, as the transport's does (wire.ts; the daemon
   * in-process with the fake cloud): the body read whole, then one PUT whose
   * path is the URL's path and query. Production never sets it.
   */
  wire?: Wire;
}

export interface ChunkPut {
  /** Absolute presigned URL: https, or http on a loopback host (tests, the fake cloud). */
  url: string;
  /**
   * A slice of a file open at a descriptor the caller checked, read through
   * a reused buffer (what uploads use: no path is opened again, and no
   * garbage per read); or a stream, piped as it is read and destroyed when the
   * PUT fails; or bytes in memory.
   */
  body: FileSlice | NodeJS.ReadableStream | Buffer;
  /** Exact byte count, sent as Content-Length; a body of another size fails the PUT. */
  length: number;
  /** The asset's MIME type, sent as Content-Type (it is part of the signature). */
  contentType: string;
  signal?: AbortSignal;
  /** Bytes handed to the socket so far; ends at `length` on success. */
  onProgress?: (bytesSent: number) => void;
}

export interface StorageClient {
  /** PUT one chunk with Content-Type and `x-amz-acl: private`; resolves on 2xx with { status, etag? }, rejects with a typed AgentError otherwise. */
  put(chunk: ChunkPut): Promise<{ status: number; etag?: string }>;
  /** Drops kept-alive sockets. */
  close(): void;
  /** Closes the connections (in flight too) bound to these local addresses; how many it closed. */
  dropConnectionsOn(gone: ReadonlySet<string>): number;
}

/** Visible ASCII and spaces, as a header value must be. */
const HEADER_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

const LOOPBACK = /^(?:localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/** "PUT host/path" without the query: the query holds the signature. */
const describe = (url: URL): string => `PUT ${url.host}${url.pathname}`;

function parseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AgentError('protocol', 'storage PUT: the upload URL is not an absolute URL', { source: 'storage' });
  }
  const what = describe(url);
  // Plain http would put the signature on the wire in clear, and userinfo
  // would make the HTTP stack send an Authorization header.
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.test(url.hostname))) {
    throw new AgentError('protocol', oneLine(`${what}: the upload URL must be https (got ${url.protocol})`), { source: what });
  }
  if (url.username !== '' || url.password !== '') {
    throw new AgentError('protocol', oneLine(`${what}: the upload URL must not carry credentials`), { source: what });
  }
  return url;
}

/** Drops every query value from server text: some storage errors echo the signed request. */
function withoutQuery(text: string, url: URL): string {
  let out = text;
  for (const value of url.searchParams.values()) {
    if (value.length >= 8) for (const form of [value, encodeURIComponent(value)]) out = out.split(form).join('…');
  }
  return out;
}

const xmlField = (xml: string, name: string): string | undefined => {
  const m = new RegExp(`<${name}>([^<]{1,300})</${name}>`).exec(xml);
  return m?.[1]?.trim() || undefined;
};

const HINT: Record<number, string> = {
  403: 'storage refused the presigned URL: it expired or its signature does not match; the upload must be created again',
  404: 'storage does not know this upload; the upload must be created again',
};

/** The typed error for a storage answer that is not 2xx. */
export function storageError(url: URL, status: number, headers: HeaderBag, body: Buffer, localWallMs: number): AgentError {
  const what = describe(url);
  const xml = body.toString('utf8');
  const code = xmlField(xml, 'Code');
  const text = xmlField(xml, 'Message');
  const retryAfterMs = parseRetryAfter(headers, localWallMs);
  const details: ConstructorParameters<typeof AgentError>[2] = { status, source: what };
  if (code !== undefined) details.code = oneLine(code, 60);
  let kind: AgentError['kind'];
  if (status === 429 || (status === 503 && retryAfterMs !== undefined)) {
    kind = 'rate-limited';
    details.retryAfterMs = retryAfterMs ?? DEFAULT_RETRY_AFTER_MS;
  } else if (status >= 500 && status <= 599) kind = 'server';
  else if (status === 403) kind = 'forbidden';
  else if (status === 404) kind = 'not-found';
  else kind = 'protocol';
  const said = [code, text].filter((s) => s !== undefined).join(': ');
  const hint = HINT[status] ?? (kind === 'server' || kind === 'rate-limited' ? 'storage failed; retry later' : undefined);
  const message = `${what}: HTTP ${status}${said ? ` ${withoutQuery(said, url)}` : ''}${hint ? ` (${hint})` : ''}`;
  return new AgentError(kind, oneLine(message, 400), details);
}

const isStream = (body: ChunkPut['body']): body is NodeJS.ReadableStream & Partial<Readable> => !Buffer.isBuffer(body) && !isFileSlice(body);

export function createStorageClient(options: StorageClientOptions): StorageClient {
  const { clock, logger } = options;
  const inactivityMs = options.inactivityMs ?? REQUEST_TIMEOUT_MS;
  const responseMs = options.responseMs ?? REQUEST_TIMEOUT_MS;
  const idle = options.idleSocketMs ?? IDLE_SOCKET_MS;
  const real = (ms: number): number => Math.max(1, Math.round(ms / clock.scale));
  // Agent ms per got timeout phase, for messages. No `request` (total) and no
  // `send` (connect to last byte written) phase: both would cap the upload's
  // duration, which only the uplink decides.
  const phases: Record<string, number> = {
    lookup: LOOKUP_TIMEOUT_MS,
    connect: CONNECT_TIMEOUT_MS,
    secureConnect: CONNECT_TIMEOUT_MS,
    socket: inactivityMs,
    response: responseMs,
    read: responseMs,
  };
  const buffers = new BufferPool();
  const agents = clientAgents(options.extraCas, idle);
  const instance: Got = got.extend({
    headers: { 'user-agent': options.userAgent ?? 'c2c-agent' },
    ...GOT_RULES,
    timeout: Object.fromEntries(Object.entries(phases).map(([k, ms]) => [k, real(ms)])),
    agent: agents,
  });

  /** Throws when the PUT cannot be sent as asked; nothing has touched the network yet. */
  function check(chunk: ChunkPut): URL {
    const url = parseUrl(chunk.url);
    const what = describe(url);
    const { length, signal } = chunk;
    if (!Number.isSafeInteger(length) || length < 0) throw new AgentError('internal', `${what}: invalid length ${length}`, { source: what });
    if (Buffer.isBuffer(chunk.body) && chunk.body.length !== length) {
      throw new AgentError('internal', `${what}: the body has ${chunk.body.length} bytes, ${length} declared`, { source: what });
    }
    // Node would refuse it deep in the request with an error that reads like a network fault.
    if (!HEADER_VALUE.test(chunk.contentType)) {
      throw new AgentError('internal', oneLine(`${what}: content type ${quote(chunk.contentType)} is not a valid header value`), { source: what });
    }
    if (signal?.aborted) throw signal.reason;
    return url;
  }

  /** The chunk's bytes, whole: a slice read through the pool (each buffer copied), a stream to its end, checked against the length. */
  async function wholeBody(chunk: ChunkPut, what: string): Promise<Buffer> {
    const { length } = chunk;
    if (Buffer.isBuffer(chunk.body)) return chunk.body;
    const parts: Buffer[] = [];
    let seen = 0;
    try {
      const source: AsyncIterable<Buffer | string> = isFileSlice(chunk.body) ? readFileSlice(chunk.body, length, buffers) : (chunk.body as AsyncIterable<Buffer | string>);
      for await (const b of source) {
        const copy = Buffer.from(b);
        seen += copy.length;
        if (seen > length) throw new AgentError('internal', oneLine(`${what}: the body is longer than the ${length} bytes declared`), { source: what });
        parts.push(copy);
      }
    } catch (err) {
      if (isStream(chunk.body)) chunk.body.destroy?.();
      if (err instanceof AgentError) throw err;
      const message = err instanceof SliceReadError ? err.message : `reading the chunk failed (${String((err as { code?: unknown }).code ?? err)})`;
      throw new AgentError('internal', oneLine(`${what}: ${message}`), { source: what });
    }
    if (seen !== length) throw new AgentError('internal', oneLine(`${what}: the body ended after ${seen} of the ${length} bytes declared`), { source: what });
    return Buffer.concat(parts, length);
  }

  /** One PUT over the wire: the same checks of the answer, no sockets. */
  async function putOverWire(wire: Wire, url: URL, chunk: ChunkPut): Promise<{ status: number; etag?: string }> {
    const what = describe(url);
    const { length, signal } = chunk;
    const body = await wholeBody(chunk, what);
    if (signal?.aborted) throw signal.reason;
    const exchange = wire({
      method: 'PUT',
      path: `${url.pathname}${url.search}`,
      headers: { 'user-agent': options.userAgent ?? 'c2c-agent', 'content-type': chunk.contentType, 'content-length': String(length), 'x-amz-acl': 'private' },
      body,
      timeoutMs: responseMs,
      ...(signal !== undefined && { signal }),
    });
    // Handed over whole: every byte is on its way.
    chunk.onProgress?.(length);
    let res;
    try {
      res = await exchange;
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw networkError(what, err, responseMs, clock.wallNow());
    }
    if (res.status >= 200 && res.status <= 299) {
      const etag = header(res.headers, 'etag');
      return { status: res.status, ...(etag !== undefined ? { etag } : {}) };
    }
    throw storageError(url, res.status, res.headers, res.body.subarray(0, MAX_ERROR_BODY_BYTES), clock.wallNow());
  }

  async function put(chunk: ChunkPut): Promise<{ status: number; etag?: string }> {
    let url: URL;
    try {
      url = check(chunk);
    } catch (err) {
      // The caller handed over the stream (an open file): it is ours to close.
      if (isStream(chunk.body)) chunk.body.destroy?.();
      throw err;
    }
    if (options.wire !== undefined) return putOverWire(options.wire, url, chunk);
    const what = describe(url);
    const { length, signal } = chunk;
    let bodyFault: AgentError | undefined;
    const fault = (m: string): void => void (bodyFault ??= new AgentError('internal', oneLine(`${what}: ${m}`), { source: what }));
    let body: Readable | Buffer | FileSliceReader;
    let slice: FileSliceReader | undefined;
    if (Buffer.isBuffer(chunk.body)) body = chunk.body;
    else if (isFileSlice(chunk.body)) {
      // got writes each buffer and waits for the write's callback before asking for the next.
      body = slice = readFileSlice(chunk.body, length, buffers);
    } else {
      // pipeline also tears the source down (closing a file) when got
      // destroys what it was given; got reports the errors itself.
      body = pipeline(chunk.body, exactLength(length, fault), () => undefined);
    }
    const started = clock.now();
    const log = { host: url.host, path: url.pathname, bytes: length };
    const stream: Request = instance.stream.put(url, {
      body,
      headers: { 'content-type': chunk.contentType, 'content-length': String(length), 'x-amz-acl': 'private' },
    });
    let sent = -1;
    stream.on('uploadProgress', (p: { transferred: number }) => {
      if (p.transferred > sent) {
        sent = p.transferred;
        chunk.onProgress?.(sent);
      }
    });

    // The signal is not handed to got: got drops its abort listener only when
    // it destroys the request, which a finished exchange has no reason to do
    // (the socket goes back to the pool), and one signal may serve thousands
    // of chunks.
    return new Promise((resolve, reject) => {
      let settled = false;
      const onAbort = (): void => fail(signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      const elapsed = (): number => Math.round(clock.now() - started);
      const settle = (): boolean => {
        if (settled) return false;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        return true;
      };
      // The slice ends now (no more reads of the caller's descriptor): a write that died with the socket may never call back to got.
      const drop = (): void => void (stream.destroy(), slice?.return().catch(() => undefined));
      const ok = (value: { status: number; etag?: string }, whole: boolean): void => {
        if (!settle()) return;
        // A 2xx body we stopped reading leaves the socket unusable. Otherwise got's response
        // timer, armed at the last write even when the answer came first, would hold the whole
        // exchange for its full length: destroyed once all is sent (the socket is pooled by then).
        if (!whole) drop();
        else if (stream.writableFinished) stream.destroy();
        else stream.once('finish', () => stream.destroy());
        logger?.debug({ ...log, status: value.status, durationMs: elapsed() }, 'storage put');
        resolve(value);
      };
      const fail = (err: unknown): void => {
        if (!settle()) return;
        // A storage error can come before the whole body went out: stop sending,
        // and close the caller's stream now rather than when pipeline gets to it.
        drop();
        if (isStream(chunk.body)) chunk.body.destroy?.();
        const d = err instanceof AgentError ? err.details : {};
        logger?.debug({ ...log, status: d.status, code: d.code, sent: Math.max(0, sent), durationMs: elapsed() }, 'storage put failed');
        reject(err);
      };
      // Stays attached: got may still report an error (EPIPE from a body
      // the server stopped reading) after the answer settled the PUT.
      stream.on('error', (err: unknown) => {
        if (signal?.aborted) return fail(signal.reason);
        if (bodyFault) return fail(bodyFault);
        const e = err as { name?: unknown; event?: unknown; cause?: { code?: unknown; message?: unknown } };
        if (e.cause instanceof SliceReadError) return fail(new AgentError('internal', oneLine(`${what}: ${e.cause.message}`), { source: what }));
        if (e.name === 'UploadError') {
          const code = typeof e.cause?.code === 'string' ? e.cause.code : String(e.cause?.message ?? 'error');
          return fail(new AgentError('internal', oneLine(`${what}: reading the chunk failed (${code})`), { source: what }));
        }
        dropIdleSockets([agents.http, agents.https]);
        fail(networkError(what, err, (typeof e.event === 'string' ? phases[e.event] : undefined) ?? inactivityMs, clock.wallNow()));
      });
      // A 101 is no storage answer: without this, got would never settle the PUT.
      refuseUpgrade(stream, what, fail);
      stream.once('request', (req: http.ClientRequest) => {
        probeWhileWaiting(req);
        refuseInterim(req, what, fail);
      });
      stream.once('response', (res: http.IncomingMessage & { headers: HeaderBag }) => {
        const status = res.statusCode ?? 0;
        const parts: Buffer[] = [];
        let size = 0;
        const done = (whole: boolean): void => {
          if (status >= 200 && status <= 299) {
            const etag = header(res.headers, 'etag');
            ok({ status, ...(etag !== undefined ? { etag } : {}) }, whole);
          } else {
            fail(storageError(url, status, res.headers, Buffer.concat(parts), clock.wallNow()));
          }
        };
        stream.on('data', (b: Buffer) => {
          const room = MAX_ERROR_BODY_BYTES - size;
          if (room <= 0) return;
          parts.push(b.subarray(0, room));
          size += Math.min(b.length, room);
          if (size >= MAX_ERROR_BODY_BYTES) done(false);
        });
        stream.once('end', () => done(true));
      });
    });
  }

  return {
    put,
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
    dropConnectionsOn: (gone) => dropSocketsOn([agents.http, agents.https], gone),
  };
}
