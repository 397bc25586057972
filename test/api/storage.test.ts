// The presigned-storage client against a bare node:http server (and once
// against the fake cloud's S3-like URLs): what goes on the wire, that bodies
// stream, how answers and failures are typed, and its time limits.
import { describe, expect, it, beforeAll, beforeEach, afterAll } from '@jest/globals';
import { createHash, randomBytes } from 'node:crypto';
import { getEventListeners } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { createStorageClient, type StorageClient, type StorageClientOptions } from '../../agent/api/storage.js';
import { SystemClock } from '../../agent/lib/clock.js';
import { AgentError, type ErrorKind } from '../../agent/lib/errors.js';
import { garbageCollector } from '../../agent/lib/heap-trim.js';
import { createLogger } from '../../agent/lib/logger.js';
import { DEFAULT_RETRY_AFTER_MS } from '../../agent/api/rate-limit.js';
import { startFakeCloud } from '../fake-cloud/index.js';
import { until } from '../support/until.js';

const MiB = 1024 * 1024;
const SIGNATURE = 'f00dfacecafebabe0123456789abcdef';

interface Seen { headers: http.IncomingHttpHeaders; bytes: number; sha256: string; port?: number }

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: Promise<Seen>) => void;

let server: http.Server;
let base: string;
let handler: Handler;
let lastSeen: Promise<Seen> | undefined;
/** Body bytes the server has read, over all requests. */
let received = 0;
let dir: string;
const clients: StorageClient[] = [];

/** Answers 200 with an ETag once the whole body arrived: what storage does. */
const accept: Handler = (_req, res, body) => void body.then((seen) => res.writeHead(200, { etag: `"${seen.sha256.slice(0, 32)}"` }).end());

async function listen(s: net.Server): Promise<number> {
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return (s.address() as net.AddressInfo).port;
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'storage-test-'));
  server = http.createServer((req, res) => {
    const hash = createHash('sha256');
    let bytes = 0;
    req.on('data', (c: Buffer) => {
      bytes += c.length;
      received += c.length;
      hash.update(c);
    });
    const port = req.socket.remotePort;
    lastSeen = new Promise<Seen>((resolve) => req.on('end', () => resolve({ headers: req.headers, bytes, sha256: hash.digest('hex'), port })));
    req.on('error', () => undefined);
    handler(req, res, lastSeen);
  });
  base = `http://127.0.0.1:${await listen(server)}`;
});

beforeEach(() => {
  handler = accept;
});

afterAll(async () => {
  for (const c of clients) c.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  fs.rmSync(dir, { recursive: true, force: true });
});

function client(scale = 1, more: Partial<StorageClientOptions> = {}): StorageClient {
  const c = createStorageClient({ clock: new SystemClock(scale), ...more });
  clients.push(c);
  return c;
}

const signed = (p = '/bucket/clip.mp4', host = base): string => `${host}${p}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=${SIGNATURE}`;

/** `total` bytes in fresh 64 KiB buffers, made only as the reader asks. */
const generated = (total: number): Readable =>
  Readable.from((function* () {
    for (let sent = 0; sent < total; sent += 65536) yield randomBytes(Math.min(65536, total - sent));
  })(), { objectMode: false });

/**
 * `pieces` of `size` bytes, one every `everyMs` real ms: an uplink that is slow but moving. Real time
 * because what it is measured against is: the socket's inactivity limit and the pool's idle limit are
 * node's own timers.
 */
const trickle = (pieces: number, size: number, everyMs: number): Readable =>
  Readable.from((async function* () {
    for (let i = 0; i < pieces; i++) yield await sleep(everyMs, Buffer.alloc(size, 1)); // real time: node's socket timers are what is tested
  })(), { objectMode: false });

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** The AgentError `p` rejects with, checked to be of `kind`. */
async function failure(p: Promise<unknown>, kind: ErrorKind): Promise<AgentError> {
  const err: unknown = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(AgentError);
  expect((err as AgentError).kind).toBe(kind);
  return err as AgentError;
}

describe('what goes on the wire', () => {
  it('sends a file range byte for byte, with Content-Type, x-amz-acl: private and Content-Length, and no authorization or x-client-version', async () => {
    const file = path.join(dir, 'clip.bin');
    const data = randomBytes(3 * MiB + 17);
    fs.writeFileSync(file, data);
    const [start, end] = [MiB + 5, 2 * MiB + 100]; // inclusive, like createReadStream
    const res = await client().put({ url: signed(), body: fs.createReadStream(file, { start, end }), length: end - start + 1, contentType: 'video/mp4' });
    const seen = await lastSeen!;
    expect(seen).toMatchObject({ bytes: end - start + 1, sha256: sha256(data.subarray(start, end + 1)) });
    expect(res).toEqual({ status: 200, etag: `"${seen.sha256.slice(0, 32)}"` });
    expect(seen.headers).toMatchObject({ 'content-type': 'video/mp4', 'x-amz-acl': 'private', 'content-length': String(end - start + 1) });
    for (const name of ['authorization', 'x-client-version', 'transfer-encoding']) expect(seen.headers).not.toHaveProperty(name);
  });

  it('sends a 5 MiB body (no 1 MiB cap on what is sent) and reports progress up to its length', async () => {
    const progress: number[] = [];
    const length = 5 * MiB;
    await client().put({ url: signed(), body: generated(length), length, contentType: 'video/mp4', onProgress: (n) => progress.push(n) });
    expect((await lastSeen!).bytes).toBe(length);
    expect(progress.at(-1)).toBe(length);
    expect(progress.length).toBeGreaterThan(2);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
  });

  it('streams: 64 MiB from a generator never sit in memory', async () => {
    const length = 64 * MiB;
    // Measured after a full collection at every 8 MiB sent: what the client holds, not garbage
    // the GC has yet to reach (that depends on load). Twice: V8 frees dead ArrayBuffers on a
    // background thread after a collection, and the next collection first waits for that.
    const gc = await garbageCollector();
    const used = (): number => {
      gc();
      gc();
      const m = process.memoryUsage();
      return m.arrayBuffers + m.heapUsed;
    };
    const before = used();
    let peak = 0;
    let next = 8 * MiB;
    const onProgress = (sent: number): void => {
      if (sent < next) return;
      next += 8 * MiB;
      peak = Math.max(peak, used() - before);
    };
    await client().put({ url: signed(), body: generated(length), length, contentType: 'video/mp4', onProgress });
    expect((await lastSeen!).bytes).toBe(length);
    expect(peak).toBeLessThan(32 * MiB);
    expect(next).toBeGreaterThan(length); // every milestone was measured
  });

  it('refuses plain http off loopback and URLs with credentials, without naming the query, and closes the body', async () => {
    const c = client();
    for (const url of [signed('/b/k', 'http://storage.example.com'), signed('/b/k', 'https://user:pw@storage.example.com')]) {
      const body = generated(1);
      const err = await failure(c.put({ url, body, length: 1, contentType: 'video/mp4' }), 'protocol');
      expect(err.message).toContain('PUT storage.example.com/b/k');
      expect(err.message).not.toContain(SIGNATURE);
      expect(body.destroyed).toBe(true);
    }
    const bad = await failure(c.put({ url: signed(), body: Buffer.alloc(1), length: 1, contentType: 'video/mp4\r\nx-evil: 1' }), 'internal');
    expect(bad.message).not.toMatch(/[\r\n]/);
  });

  it('fails a body of another length than declared instead of hanging, and one that cannot be read', async () => {
    const c = client();
    for (const size of [100, 300]) {
      const err = await failure(c.put({ url: signed(), body: generated(size), length: 200, contentType: 'video/mp4' }), 'internal');
      expect(err.message).toMatch(/200 bytes declared/);
    }
    const missing = await failure(c.put({ url: signed(), body: fs.createReadStream(path.join(dir, 'none')), length: 10, contentType: 'video/mp4' }), 'internal');
    expect(missing.message).toMatch(/ENOENT/);
  });

  it('reuses one connection and leaves no listener on a signal shared by many chunks', async () => {
    const c = client();
    const { signal } = new AbortController();
    const ports = new Set<number | undefined>();
    for (let i = 0; i < 5; i++) {
      await c.put({ url: signed(), body: generated(1000), length: 1000, contentType: 'video/mp4', signal });
      ports.add((await lastSeen!).port);
    }
    expect(ports.size).toBe(1);
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });
});

describe('answers and failures', () => {
  const xml = (code: string, message: string): string => `<?xml version="1.0"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`;
  // Padded to 1 MiB: the client must stop reading an error body after a few KB and still type it.
  const answer = (status: number, headers: Record<string, string> = {}, body = xml('Err', 'Something.')): Handler => (_req, res) =>
    res.writeHead(status, { 'content-type': 'application/xml', ...headers }).end(body + ' '.repeat(MiB));
  const put = (c = client()): Promise<unknown> => c.put({ url: signed(), body: generated(2 * MiB), length: 2 * MiB, contentType: 'video/mp4' });

  it.each<{ status: number; retryAfter: string; kind: ErrorKind; retryAfterMs?: number }>([
    { status: 500, retryAfter: '', kind: 'server' },
    { status: 503, retryAfter: '', kind: 'server' },
    { status: 503, retryAfter: '7', kind: 'rate-limited', retryAfterMs: 7000 },
    { status: 429, retryAfter: '', kind: 'rate-limited', retryAfterMs: DEFAULT_RETRY_AFTER_MS },
    { status: 404, retryAfter: '', kind: 'not-found' },
    { status: 400, retryAfter: '', kind: 'protocol' },
  ])("types HTTP $status (Retry-After '$retryAfter') as $kind", async ({ status, retryAfter, kind, retryAfterMs }) => {
    handler = answer(status, retryAfter ? { 'retry-after': retryAfter } : {});
    const err = await failure(put(), kind);
    expect(err.status).toBe(status);
    expect(err.details.retryAfterMs).toBe(retryAfterMs);
    expect(err.message).toMatch(new RegExp(`^PUT 127\\.0\\.0\\.1:\\d+/bucket/clip\\.mp4: HTTP ${status} Err: Something\\.`));
  });

  it('types 403 as forbidden, says the presigned URL was refused, and keeps the signature out', async () => {
    // Answered before the body is read, as storage does for a bad signature.
    handler = answer(403, {}, xml('SignatureDoesNotMatch', `The request signature we calculated does not match ${SIGNATURE}`));
    const err = await failure(put(), 'forbidden');
    expect(err.message).toMatch(/presigned URL.*created again/);
    expect(err.message).not.toMatch(/X-Amz|\?|\n/);
    expect(err.message).not.toContain(SIGNATURE);
  });

  it('types a refused connection as network', async () => {
    const closed = net.createServer();
    const port = await listen(closed);
    await new Promise((r) => closed.close(r));
    const err = await failure(client().put({ url: signed('/b/k', `http://127.0.0.1:${port}`), body: generated(10), length: 10, contentType: 'video/mp4' }), 'network');
    expect(err.details.code).toBe('ECONNREFUSED');
    expect(err.message).not.toContain(SIGNATURE);
  });

  it('rejects promptly when aborted and closes the body source', async () => {
    // A body the test feeds: after its first KiB nothing more comes, so only the abort can end the call
    // (the 30 s limits at scale 1 outlast this test's timeout).
    const body = new PassThrough();
    const controller = new AbortController();
    const from = received;
    const call = client().put({ url: signed(), body, length: 1000 * 1024, contentType: 'video/mp4', signal: controller.signal });
    body.write(Buffer.alloc(1024, 1));
    await until('the first KiB at the server', () => received - from >= 1024);
    controller.abort();
    await expect(call).rejects.toBe(controller.signal.reason);
    expect(body.destroyed).toBe(true);
  }, 10_000);

  it('logs host, path, status and bytes, never the query string', async () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (c: Buffer, _e, done) => (lines.push(c.toString()), done()) });
    const c = client(1, { logger: createLogger('debug', sink) });
    await c.put({ url: signed(), body: Buffer.alloc(10), length: 10, contentType: 'video/mp4' });
    handler = answer(403);
    await failure(c.put({ url: signed(), body: Buffer.alloc(10), length: 10, contentType: 'video/mp4' }), 'forbidden');
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[0]!)).toMatchObject({ host: expect.stringMatching(/^127\.0\.0\.1:/), path: '/bucket/clip.mp4', status: 200, bytes: 10 });
    expect(JSON.parse(lines[1]!)).toMatchObject({ status: 403 });
    expect(lines.join('')).not.toMatch(/X-Amz|\?/);
  });
});

describe('time limits (agent time, divided by the clock scale)', () => {
  it('gives up on a server that accepts but never reads, or reads but never answers (30 s agent = 30 ms real)', async () => {
    const held: net.Socket[] = [];
    const silent = net.createServer((s) => held.push(s)); // never reads: the upload stalls
    const url = signed('/b/k', `http://127.0.0.1:${await listen(silent)}`);
    // Not judged in real time: a limit not divided by the scale (30 real s) outlasts the test's timeout.
    const put = client(1000).put({ url, body: generated(32 * MiB), length: 32 * MiB, contentType: 'video/mp4' });
    const err = await failure(put, 'network').finally(() => (held.forEach((s) => s.destroy()), silent.close()));
    expect(err.details.code).toBe('ETIMEDOUT');
    expect(err.message).toMatch(/within 30 s/);
    handler = () => undefined; // reads the whole body, never answers
    const late = await failure(client(1000).put({ url: signed(), body: Buffer.alloc(100), length: 100, contentType: 'video/mp4' }), 'network');
    expect(late.message).toMatch(/within 30 s \((socket|response) phase\)/); // both start at the last byte sent
  }, 10_000);

  it("has no total cap, and the pool's idle limit does not cut a live upload", async () => {
    // Scale 40: 30 s of agent inactivity is 750 ms real, far longer than a 100 ms gap between pieces even
    // when a loaded machine stretches one; 10 pieces 100 ms apart take ~40 s of agent time, past 30 s,
    // each gap longer than the 30 ms (real) a kept-alive socket may sit unused in the pool.
    const c = client(40, { idleSocketMs: 30 });
    const res = await c.put({ url: signed(), body: trickle(10, 1024, 100), length: 10 * 1024, contentType: 'video/mp4' });
    expect(res.status).toBe(200);
    expect((await lastSeen!).bytes).toBe(10 * 1024);
  });
});

describe('against the fake cloud', () => {
  it('uploads every part of an asset to its presigned URLs, which the fake accepts', async () => {
    const cloud = await startFakeCloud({ devices: 1, uploadPartBytes: MiB });
    try {
      const file = path.join(dir, 'asset.mp4');
      const data = randomBytes(2 * MiB + 1234);
      fs.writeFileSync(file, data);
      const headers = { authorization: `Bearer ${cloud.devices[0]!.accessToken}`, 'x-client-version': '1.0.0', 'content-type': 'application/json' };
      const body = JSON.stringify({ name: 'asset.mp4', filetype: 'video/mp4', filesize: data.length, offset: 0 });
      const asset = (await (await fetch(`${cloud.url}/v2/devices/assets`, { method: 'POST', headers, body })).json()) as { id: string; upload_urls: string[] };
      expect(asset.upload_urls).toHaveLength(3);
      const chunk = Math.ceil(data.length / 3); // the fake's split: even parts, the last to EOF
      const ranges = asset.upload_urls.map((_, i) => [i * chunk, Math.min(data.length, (i + 1) * chunk) - 1] as const);
      const c = client();
      for (const [i, url] of asset.upload_urls.entries()) {
        const [start, end] = ranges[i]!;
        const res = await c.put({ url, body: fs.createReadStream(file, { start, end }), length: end - start + 1, contentType: 'video/mp4' });
        expect(res).toEqual({ status: 200, etag: expect.stringMatching(/^"[0-9a-f]{32}"$/) });
      }
      const view = cloud.asset(asset.id)!;
      expect(view.complete).toBe(true);
      expect(view.parts.map((p) => p.sha256)).toEqual(ranges.map(([start, end]) => sha256(data.subarray(start, end + 1))));
      // A wrong Content-Type breaks the signature: the fake refuses it like storage would.
      const err = await failure(c.put({ url: asset.upload_urls[0]!, body: Buffer.alloc(chunk), length: chunk, contentType: 'image/jpeg' }), 'forbidden');
      expect(err.details.code).toBe('SignatureDoesNotMatch');
      expect(err.message).not.toContain('X-Amz-Signature');
    } finally {
      await cloud.close();
    }
  });
});
