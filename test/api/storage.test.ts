// The presigned-storage client against a bare node:http server (and once
// against the fake cloud's S3-like URLs): what goes on the wire, that bodies
// stream, how answers and failures are typed, and its time limits.
import { describe, expect, it, beforeAll, beforeEach, afterAll } from '@jest/globals';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Readable, Writable } from 'node:stream';
import { createStorageClient, type StorageClient, type StorageClientOptions } from '../../agent/api/storage.js';
import { SystemClock } from '../../agent/lib/clock.js';
import { AgentError } from '../../agent/lib/errors.js';
import { createLogger } from '../../agent/lib/logger.js';
import { DEFAULT_RETRY_AFTER_MS } from '../../agent/api/rate-limit.js';
import { startFakeCloud } from '../fake-cloud/index.js';

const MiB = 1024 * 1024;
const SIGNATURE = 'f00dfacecafebabe0123456789abcdef';

interface Seen { headers: http.IncomingHttpHeaders; bytes: number; sha256: string }

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: Promise<Seen>) => void;

let server: http.Server;
let base: string;
let handler: Handler;
let lastSeen: Promise<Seen> | undefined;
let dir: string;
const clients: StorageClient[] = [];

/** Answers 200 with an ETag once the whole body arrived: what storage does. */
const accept: Handler = (_req, res, body) => {
  void body.then((seen) => {
    res.writeHead(200, { etag: `"${seen.sha256.slice(0, 32)}"` });
    res.end();
  });
};

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'storage-test-'));
  server = http.createServer((req, res) => {
    const hash = createHash('sha256');
    let bytes = 0;
    lastSeen = new Promise<Seen>((resolve) => {
      req.on('data', (c: Buffer) => {
        bytes += c.length;
        hash.update(c);
      });
      req.on('end', () => resolve({ headers: req.headers, bytes, sha256: hash.digest('hex') }));
    });
    req.on('error', () => undefined);
    handler(req, res, lastSeen);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
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
function generated(total: number): Readable {
  return Readable.from(
    (function* () {
      for (let sent = 0; sent < total; sent += 65536) yield randomBytes(Math.min(65536, total - sent));
    })(),
    { objectMode: false },
  );
}

/** `pieces` of `size` bytes, one every `everyMs` real ms: an uplink that is slow but moving. */
function trickle(pieces: number, size: number, everyMs: number): Readable {
  return new Readable({
    read() {
      setTimeout(() => this.push(pieces-- > 0 ? Buffer.alloc(size, 1) : null), everyMs);
    },
  });
}

async function failure(p: Promise<unknown>): Promise<AgentError> {
  const err: unknown = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(AgentError);
  return err as AgentError;
}

describe('what goes on the wire', () => {
  it('sends Content-Type, x-amz-acl: private and Content-Length, and no authorization or x-client-version', async () => {
    const body = randomBytes(1000);
    const res = await client().put({ url: signed(), body, length: body.length, contentType: 'video/mp4' });
    const seen = await lastSeen!;
    expect(res.status).toBe(200);
    expect(res.etag).toBe(`"${seen.sha256.slice(0, 32)}"`);
    expect(seen.headers['content-type']).toBe('video/mp4');
    expect(seen.headers['x-amz-acl']).toBe('private');
    expect(seen.headers['content-length']).toBe('1000');
    expect(seen.headers).not.toHaveProperty('authorization');
    expect(seen.headers).not.toHaveProperty('x-client-version');
    expect(seen.headers).not.toHaveProperty('transfer-encoding');
  });

  it('delivers a file range byte for byte', async () => {
    const file = path.join(dir, 'clip.bin');
    const data = randomBytes(3 * MiB + 17);
    fs.writeFileSync(file, data);
    const [start, end] = [MiB + 5, 2 * MiB + 100]; // inclusive, like createReadStream
    const source = fs.createReadStream(file, { start, end });
    await client().put({ url: signed(), body: source, length: end - start + 1, contentType: 'video/mp4' });
    const seen = await lastSeen!;
    expect(seen.bytes).toBe(end - start + 1);
    expect(seen.sha256).toBe(createHash('sha256').update(data.subarray(start, end + 1)).digest('hex'));
    expect(seen.headers['content-length']).toBe(String(end - start + 1));
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
    // Measured after a full collection at every 8 MiB sent: what the client
    // holds, not garbage the GC has yet to reach (that depends on load).
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const used = (): number => {
      // Twice: V8 frees dead ArrayBuffers on a background thread after a
      // collection, and the next collection first waits for that to finish.
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
      const err = await failure(c.put({ url, body, length: 1, contentType: 'video/mp4' }));
      expect(err.kind).toBe('protocol');
      expect(err.message).toContain('PUT storage.example.com/b/k');
      expect(err.message).not.toContain(SIGNATURE);
      expect(body.destroyed).toBe(true);
    }
    const bad = await failure(c.put({ url: signed(), body: Buffer.alloc(1), length: 1, contentType: 'video/mp4\r\nx-evil: 1' }));
    expect(bad.kind).toBe('internal');
    expect(bad.message).not.toMatch(/[\r\n]/);
  });

  it('fails a body of another length than declared instead of hanging', async () => {
    const c = client();
    for (const size of [100, 300]) {
      const err = await failure(c.put({ url: signed(), body: generated(size), length: 200, contentType: 'video/mp4' }));
      expect(err.kind).toBe('internal');
      expect(err.message).toMatch(/200 bytes declared/);
    }
  });
});

describe('answers and failures', () => {
  const xml = (code: string, message: string): string => `<?xml version="1.0"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`;
  const answer =
    (status: number, headers: Record<string, string> = {}, body = xml('Err', 'Something.')): Handler =>
    (_req, res) => {
      res.writeHead(status, { 'content-type': 'application/xml', ...headers });
      res.end(body);
    };
  const put = (c = client()): Promise<unknown> => c.put({ url: signed(), body: generated(2 * MiB), length: 2 * MiB, contentType: 'video/mp4' });

  it.each([
    { status: 500, kind: 'server' },
    { status: 503, kind: 'server' },
    { status: 503, retryAfter: '7', kind: 'rate-limited', retryAfterMs: 7000 },
    { status: 429, kind: 'rate-limited', retryAfterMs: DEFAULT_RETRY_AFTER_MS },
    { status: 404, kind: 'not-found' },
    { status: 400, kind: 'protocol' },
  ])('types HTTP $status (Retry-After $retryAfter) as $kind', async ({ status, retryAfter, kind, retryAfterMs }) => {
    handler = answer(status, retryAfter ? { 'retry-after': retryAfter } : {});
    const err = await failure(put());
    expect(err.kind).toBe(kind);
    expect(err.status).toBe(status);
    expect(err.details.retryAfterMs).toBe(retryAfterMs);
    expect(err.message).toMatch(new RegExp(`^PUT 127\\.0\\.0\\.1:\\d+/bucket/clip\\.mp4: HTTP ${status} Err: Something\\.`));
  });

  it('types 403 as forbidden, says the presigned URL was refused, and keeps the signature out', async () => {
    // Answered before the body is read, as storage does for a bad signature.
    handler = answer(403, {}, xml('SignatureDoesNotMatch', `The request signature we calculated does not match ${SIGNATURE}`));
    const err = await failure(put());
    expect(err.kind).toBe('forbidden');
    expect(err.message).toMatch(/presigned URL.*created again/);
    expect(err.message).not.toMatch(/X-Amz|\?|\n/);
    expect(err.message).not.toContain(SIGNATURE);
  });

  it('reads only the start of a huge error body', async () => {
    handler = answer(500, {}, xml('InternalError', 'x'.repeat(100)) + ' '.repeat(8 * MiB));
    const err = await failure(put());
    expect(err.kind).toBe('server');
    expect(err.message).toMatch(/InternalError/);
  });

  it('types a refused connection as network', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const err = await failure(client().put({ url: signed('/b/k', `http://127.0.0.1:${port}`), body: generated(10), length: 10, contentType: 'video/mp4' }));
    expect(err.kind).toBe('network');
    expect(err.details.code).toBe('ECONNREFUSED');
    expect(err.message).not.toContain(SIGNATURE);
  });

  it('rejects promptly when aborted and closes the body source', async () => {
    const body = trickle(1000, 1024, 20);
    const controller = new AbortController();
    const call = client().put({ url: signed(), body, length: 1000 * 1024, contentType: 'video/mp4', signal: controller.signal });
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    controller.abort();
    await expect(call).rejects.toBe(controller.signal.reason);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(body.destroyed).toBe(true);
  });

  it('logs host, path, status and bytes, never the query string', async () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (c: Buffer, _e, done) => (lines.push(c.toString()), done()) });
    const c = client(1, { logger: createLogger('debug', sink) });
    await c.put({ url: signed(), body: Buffer.alloc(10), length: 10, contentType: 'video/mp4' });
    handler = answer(403);
    await failure(c.put({ url: signed(), body: Buffer.alloc(10), length: 10, contentType: 'video/mp4' }));
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[0]!)).toMatchObject({ host: expect.stringMatching(/^127\.0\.0\.1:/), path: '/bucket/clip.mp4', status: 200, bytes: 10 });
    expect(JSON.parse(lines[1]!)).toMatchObject({ status: 403 });
    expect(lines.join('')).not.toMatch(/X-Amz|\?/);
  });
});

describe('time limits (agent time, divided by the clock scale)', () => {
  it('gives up on a server that accepts but never reads or answers (30 s agent = 30 ms real)', async () => {
    const held: net.Socket[] = [];
    const silent = net.createServer((s) => held.push(s)); // never reads: the upload stalls
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const url = signed('/b/k', `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}`);
    try {
      const t0 = Date.now();
      const err = await failure(client(1000).put({ url, body: generated(32 * MiB), length: 32 * MiB, contentType: 'video/mp4' }));
      expect(err.kind).toBe('network');
      expect(err.details.code).toBe('ETIMEDOUT');
      expect(err.message).toMatch(/within 30 s/);
      expect(Date.now() - t0).toBeLessThan(5000);
    } finally {
      for (const s of held) s.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  it('gives up waiting for the answer once the body was sent', async () => {
    handler = () => undefined; // reads the body, never answers
    const err = await failure(client(1000).put({ url: signed(), body: Buffer.alloc(100), length: 100, contentType: 'video/mp4' }));
    expect(err.kind).toBe('network');
    expect(err.details.code).toBe('ETIMEDOUT');
  });

  it('has no total cap: a steady upload far longer than the inactivity limit succeeds', async () => {
    // Scale 100: 30 s of agent inactivity is 300 ms real; 40 pieces 20 ms apart take ~80 s of agent time.
    const res = await client(100).put({ url: signed(), body: trickle(40, 1024, 20), length: 40 * 1024, contentType: 'video/mp4' });
    expect(res.status).toBe(200);
    expect((await lastSeen!).bytes).toBe(40 * 1024);
  });

  it("the connection pool's short idle limit does not cut a live upload", async () => {
    const c = client(1, { idleSocketMs: 30 }); // real ms, as for the service transport
    expect((await c.put({ url: signed(), body: trickle(5, 10, 100), length: 50, contentType: 'video/mp4' })).status).toBe(200);
  });
});

describe('against the fake cloud', () => {
  it('uploads every part of an asset to its presigned URLs, which the fake accepts', async () => {
    const cloud = await startFakeCloud({ devices: 1, uploadPartBytes: MiB });
    try {
      const file = path.join(dir, 'asset.mp4');
      const data = randomBytes(2 * MiB + 1234);
      fs.writeFileSync(file, data);
      const r = await fetch(`${cloud.url}/v2/devices/assets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${cloud.devices[0]!.accessToken}`, 'x-client-version': '1.0.0', 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'asset.mp4', filetype: 'video/mp4', filesize: data.length, offset: 0 }),
      });
      const asset = (await r.json()) as { id: string; upload_urls: string[] };
      const n = asset.upload_urls.length;
      const chunk = Math.ceil(data.length / n);
      const c = client();
      for (const [i, url] of asset.upload_urls.entries()) {
        const start = i * chunk;
        const end = Math.min(data.length, start + chunk) - 1;
        const res = await c.put({ url, body: fs.createReadStream(file, { start, end }), length: end - start + 1, contentType: 'video/mp4' });
        expect(res.status).toBe(200);
        expect(res.etag).toMatch(/^"[0-9a-f]{32}"$/);
      }
      expect(n).toBe(3);
      const view = cloud.asset(asset.id)!;
      expect(view.complete).toBe(true);
      expect(view.parts.map((p) => p.sha256)).toEqual(
        asset.upload_urls.map((_, i) => createHash('sha256').update(data.subarray(i * chunk, Math.min(data.length, (i + 1) * chunk))).digest('hex')),
      );
      // A wrong Content-Type breaks the signature: the fake refuses it like storage would.
      const err = await failure(c.put({ url: asset.upload_urls[0]!, body: Buffer.alloc(chunk), length: chunk, contentType: 'image/jpeg' }));
      expect(err.kind).toBe('forbidden');
      expect(err.details.code).toBe('SignatureDoesNotMatch');
      expect(err.message).not.toContain('X-Amz-Signature');
    } finally {
      await cloud.close();
    }
  });
});
