// File slices as storage bodies: the bytes of the range, read from the
// caller's descriptor (never a path, which a swapped folder could send
// elsewhere) through one pooled buffer (no buffer made per read), the
// descriptor left to the caller however the slice ends, and the storage
// client sending them, failing a short file, and stopping on abort.
import { describe, expect, it, beforeAll, afterAll } from '@jest/globals';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { BufferPool, SliceReadError, readFileSlice } from '../../agent/api/storage-body.js';
import { createStorageClient, type StorageClient } from '../../agent/api/storage.js';
import { SystemClock } from '../../agent/lib/clock.js';
import { AgentError } from '../../agent/lib/errors.js';
import { garbageCollector } from '../../agent/lib/heap-trim.js';

const KiB = 1024;
let dir: string;
let file: string;
let data: Buffer;
/** The test file, open: what slices read from. */
let fd: number;

/** How many descriptors of this process are open on files in the test dir. */
const openFds = (): number =>
  fs.readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir);
    } catch {
      return false; // closed meanwhile (readdir's own)
    }
  }).length;
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
/** Closing a file takes a few event-loop turns after the PUT settles; no clock involved. */
async function closed(fds: number): Promise<void> {
  for (let i = 0; i < 10_000 && openFds() > fds; i++) await turn();
  expect(openFds()).toBe(fds);
}
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'storage-body-test-'));
  file = path.join(dir, 'clip.bin');
  data = randomBytes(200 * KiB + 123);
  fs.writeFileSync(file, data);
  fd = fs.openSync(file, 'r');
});

afterAll(() => {
  fs.closeSync(fd);
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Copies every yielded buffer as it comes (the next one may overwrite it) and notes which memory it lives in. */
async function drain(slice: AsyncIterable<Buffer>): Promise<{ bytes: Buffer; memory: Set<ArrayBufferLike> }> {
  const parts: Buffer[] = [];
  const memory = new Set<ArrayBufferLike>();
  for await (const b of slice) {
    parts.push(Buffer.from(b));
    memory.add(b.buffer);
  }
  return { bytes: Buffer.concat(parts), memory };
}

describe('readFileSlice', () => {
  it('yields the bytes of the range through one buffer, which goes back to the pool for the next slice', async () => {
    const pool = new BufferPool(16 * KiB);
    const [start, length] = [5 * KiB + 7, 150 * KiB + 3]; // ten reads, the last one short
    const first = await drain(readFileSlice({ fd, start }, length, pool));
    expect(first.bytes.equals(data.subarray(start, start + length))).toBe(true);
    expect(first.memory.size).toBe(1);
    expect(pool.size).toBe(1);
    const second = await drain(readFileSlice({ fd, start: 0 }, data.length, pool));
    expect(second.bytes.equals(data)).toBe(true);
    expect(second.memory).toEqual(first.memory);
  });

  it('fails a file that ends before the range does, and a descriptor that cannot be read, opening nothing and closing nothing', async () => {
    const fds = openFds();
    const pool = new BufferPool(16 * KiB);
    const short = drain(readFileSlice({ fd, start: data.length - 100 }, 1000, pool));
    await expect(short).rejects.toThrow(SliceReadError);
    await expect(short).rejects.toThrow(/ended after 100 of the 1000 bytes declared/);
    const closedFd = fs.openSync(file, 'r');
    fs.closeSync(closedFd);
    await expect(drain(readFileSlice({ fd: closedFd, start: 0 }, 10, pool))).rejects.toThrow(/reading the chunk failed \(EBADF\)/);
    expect(openFds()).toBe(fds);
    expect(fs.fstatSync(fd).size).toBe(data.length);
  });

  it('returned early: the descriptor stays the caller\'s, and the buffers it gave out are kept from the pool', async () => {
    const fds = openFds();
    const pool = new BufferPool(16 * KiB);
    const slice = readFileSlice({ fd, start: 0 }, data.length, pool);
    const first = await slice.next();
    expect(first.value?.length).toBe(16 * KiB);
    expect(openFds()).toBe(fds);
    await slice.return();
    expect(openFds()).toBe(fds);
    expect(fs.fstatSync(fd).size).toBe(data.length);
    expect(pool.size).toBe(0); // the consumer may still be sending the buffer it holds
  });

  it('reads the descriptor, not the path: a folder on the way swapped for one whose file is a link elsewhere sends nothing of that file', async () => {
    const real = path.join(dir, 'real');
    fs.mkdirSync(real);
    const clip = path.join(real, 'clip.bin');
    fs.writeFileSync(clip, data);
    const secret = path.join(dir, 'secret.json');
    fs.writeFileSync(secret, Buffer.alloc(data.length, 'S'));
    const clipFd = fs.openSync(clip, 'r');
    try {
      // The swap of the hostile run: real/ moved aside, and a folder whose clip.bin leads to the secret put in its place.
      fs.renameSync(real, path.join(dir, 'real.orig'));
      fs.mkdirSync(real);
      fs.symlinkSync(secret, clip);
      const { bytes } = await drain(readFileSlice({ fd: clipFd, start: 0 }, data.length, new BufferPool(16 * KiB)));
      expect(sha256(bytes)).toBe(sha256(data));
    } finally {
      fs.closeSync(clipFd);
    }
  });

  it('reads its descriptor (the path renamed meanwhile), leaves it open, and shows each buffer to onRead first', async () => {
    const moving = path.join(dir, 'moving.bin.part');
    fs.writeFileSync(moving, data);
    const movingFd = fs.openSync(moving, 'r');
    try {
      fs.renameSync(moving, path.join(dir, 'moving.bin'));
      const seen = createHash('sha256');
      const before = openFds();
      const { bytes } = await drain(readFileSlice({ fd: movingFd, start: 1000, onRead: (b) => void seen.update(b) }, 150 * KiB, new BufferPool()));
      expect(sha256(bytes)).toBe(sha256(data.subarray(1000, 1000 + 150 * KiB)));
      expect(seen.digest('hex')).toBe(sha256(bytes));
      expect(openFds()).toBe(before);
      expect(fs.fstatSync(movingFd).size).toBe(data.length);
    } finally {
      fs.closeSync(movingFd);
    }
  });

  it('yields nothing and reads nothing for an empty range', async () => {
    const pool = new BufferPool(16 * KiB);
    expect((await drain(readFileSlice({ fd: -1, start: 0 }, 0, pool))).bytes.length).toBe(0);
  });
});

describe('a storage PUT of a file slice', () => {
  let server: http.Server;
  let base: string;
  let client: StorageClient;
  let onRequest: (req: http.IncomingMessage, res: http.ServerResponse) => void;

  beforeAll(async () => {
    server = http.createServer((req, res) => onRequest(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    client = createStorageClient({ clock: new SystemClock(1) });
  });

  afterAll(async () => {
    client.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('sends the range byte for byte with its Content-Length', async () => {
    let seen: { length?: string; sha256: string } | undefined;
    onRequest = (req, res) => {
      const hash = createHash('sha256');
      req.on('data', (c: Buffer) => hash.update(c));
      req.on('end', () => ((seen = { length: req.headers['content-length'], sha256: hash.digest('hex') }), res.writeHead(200).end()));
    };
    const [start, length] = [3 * KiB, 190 * KiB];
    const res = await client.put({ url: `${base}/b/k`, body: { fd, start }, length, contentType: 'video/mp4' });
    expect(res.status).toBe(200);
    expect(seen).toEqual({ length: String(length), sha256: sha256(data.subarray(start, start + length)) });
  });

  it('fails as internal, not as a network fault, when the file is shorter than declared, and leaves the descriptor to the caller', async () => {
    onRequest = (req, res) => req.resume().on('end', () => res.writeHead(200).end());
    const fds = openFds();
    const err = await client.put({ url: `${base}/b/k`, body: { fd, start: data.length - 10 }, length: 100, contentType: 'video/mp4' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentError);
    expect((err as AgentError).kind).toBe('internal');
    expect((err as AgentError).message).toMatch(/^PUT 127\.0\.0\.1:\d+\/b\/k: the body ended after 10 of the 100 bytes declared/);
    await closed(fds);
    expect(fs.fstatSync(fd).size).toBe(data.length);
  });

  it('sends the whole body and then leaves nothing holding the exchange, even when storage answers before the last byte left', async () => {
    // got arms its response timer when the body's last write completes; an answer that came
    // first would leave that timer (the full response timeout) holding the whole exchange.
    let received: number | undefined;
    onRequest = (req, res) => {
      res.writeHead(200).end();
      let n = 0;
      req.on('data', (c: Buffer) => (n += c.length)).on('end', () => (received = n));
    };
    // Made in a function of its own so that nothing here holds the body but the WeakRef.
    const send = (): { held: WeakRef<object>; sent: Promise<unknown> } => {
      const body = { fd, start: 0 };
      return { held: new WeakRef(body), sent: client.put({ url: `${base}/b/k`, body, length: data.length, contentType: 'video/mp4' }) };
    };
    const gc = await garbageCollector();
    const { held, sent } = send();
    await sent;
    for (let i = 0; i < 2000 && held.deref() !== undefined; i++) {
      await turn();
      if (i % 50 === 0) gc();
    }
    expect(held.deref()).toBeUndefined();
    // The rest of the body still went: the kept-alive connection is fit for the next PUT.
    while (received === undefined) await turn();
    expect(received).toBe(data.length);
  });

  it('stops when the PUT is aborted while the server holds back, leaving the descriptor to the caller', async () => {
    const held: http.ServerResponse[] = [];
    onRequest = (req, res) => {
      req.pause(); // nothing read: the upload stalls once the socket buffers are full
      held.push(res);
    };
    fs.writeFileSync(path.join(dir, 'big.bin'), Buffer.alloc(32 * 1024 * KiB));
    const bigFd = fs.openSync(path.join(dir, 'big.bin'), 'r');
    try {
      const fds = openFds();
      const controller = new AbortController();
      const put = client.put({ url: `${base}/b/k`, body: { fd: bigFd, start: 0 }, length: 32 * 1024 * KiB, contentType: 'video/mp4', signal: controller.signal });
      while (held.length === 0) await turn();
      controller.abort();
      await expect(put).rejects.toBe(controller.signal.reason);
      await closed(fds);
      expect(fs.fstatSync(bigFd).size).toBe(32 * 1024 * KiB);
    } finally {
      fs.closeSync(bigFd);
    }
    for (const r of held) r.destroy();
  });
});
