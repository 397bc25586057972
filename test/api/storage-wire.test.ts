// The storage client over a wire (agent/api/storage.ts's seam, as the
// transport's): what the daemon in-process (test/e2e/) sends the fake cloud's
// storage. The same request and the same reading of the answer as over a
// socket; the body read whole first, from a slice of a descriptor, a stream or
// bytes in memory.
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from '@jest/globals';
import { createStorageClient } from '../../agent/api/storage.js';
import type { Wire, WireRequest, WireResponse } from '../../agent/api/wire.js';
import { AgentError } from '../../agent/lib/errors.js';
import { FakeClock } from '../support/fake-clock.js';

const URL_ = 'http://127.0.0.1/_storage/asset-1/part-1?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=0123456789abcdef0123';
const dir = mkdtempSync(join(tmpdir(), 'c2c-storage-wire-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A wire that records each request and answers with `answer` (or fails as `answer` throws). */
function recording(answer: (req: WireRequest) => WireResponse | Promise<WireResponse>): { wire: Wire; seen: WireRequest[] } {
  const seen: WireRequest[] = [];
  return { seen, wire: async (req) => (seen.push(req), answer(req)) };
}

const ok = (headers: Record<string, string> = {}): WireResponse => ({ status: 200, headers, body: Buffer.alloc(0) });

describe('storage PUTs over a wire', () => {
  it('sends the path and query, the signed headers and the bytes of a file slice; progress is the whole chunk; the etag comes back', async () => {
    const file = join(dir, 'clip.mp4');
    const data = Buffer.from(Array.from({ length: 3000 }, (_, i) => i % 251));
    writeFileSync(file, data);
    const fd = openSync(file, 'r');
    const { wire, seen } = recording(() => ok({ etag: '"abc"' }));
    const client = createStorageClient({ clock: new FakeClock(), wire });
    const progress: number[] = [];
    const read: number[] = [];
    try {
      const r = await client.put({ url: URL_, body: { fd, start: 1000, onRead: (b) => void read.push(b.length) }, length: 1500, contentType: 'video/mp4', onProgress: (n) => void progress.push(n) });
      expect(r).toEqual({ status: 200, etag: '"abc"' });
    } finally {
      closeSync(fd);
    }
    expect(seen).toHaveLength(1);
    const req = seen[0]!;
    expect(req.method).toBe('PUT');
    expect(req.path).toBe(URL_.slice('http://127.0.0.1'.length));
    expect(req.headers).toMatchObject({ 'content-type': 'video/mp4', 'content-length': '1500', 'x-amz-acl': 'private' });
    expect(Object.keys(req.headers).map((k) => k.toLowerCase())).not.toContain('authorization');
    expect(req.body?.equals(data.subarray(1000, 2500))).toBe(true);
    expect(read.reduce((a, b) => a + b, 0)).toBe(1500);
    expect(progress).toEqual([1500]);
  });

  it('a stream and bytes in memory go whole; a stream of another length is refused before anything is sent', async () => {
    const { wire, seen } = recording(() => ok());
    const client = createStorageClient({ clock: new FakeClock(), wire });
    await client.put({ url: URL_, body: Readable.from([Buffer.from('abc'), Buffer.from('def')]), length: 6, contentType: 'video/mp4' });
    await client.put({ url: URL_, body: Buffer.from('xyz'), length: 3, contentType: 'video/mp4' });
    expect(seen.map((r) => r.body?.toString())).toEqual(['abcdef', 'xyz']);
    await expect(client.put({ url: URL_, body: Readable.from([Buffer.from('abc')]), length: 6, contentType: 'video/mp4' })).rejects.toMatchObject({ kind: 'internal', message: expect.stringContaining('ended after 3 of the 6 bytes') });
    await expect(client.put({ url: URL_, body: Readable.from([Buffer.from('abcdefgh')]), length: 6, contentType: 'video/mp4' })).rejects.toMatchObject({ kind: 'internal', message: expect.stringContaining('longer than the 6 bytes') });
    expect(seen).toHaveLength(2);
  });

  it("storage's refusal is read as over a socket: kind, code, the hint, no signature in the message", async () => {
    const xml = '<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>Request has expired for 0123456789abcdef0123</Message></Error>';
    const { wire } = recording(() => ({ status: 403, headers: { 'content-type': 'application/xml' }, body: Buffer.from(xml) }));
    const client = createStorageClient({ clock: new FakeClock(), wire });
    const err = (await client.put({ url: URL_, body: Buffer.from('abc'), length: 3, contentType: 'video/mp4' }).catch((e: unknown) => e)) as AgentError;
    expect(err).toBeInstanceOf(AgentError);
    expect(err).toMatchObject({ kind: 'forbidden', details: { status: 403, code: 'AccessDenied' } });
    expect(err.message).toContain('storage refused the presigned URL');
    expect(err.message).not.toContain('0123456789abcdef0123');
  });

  it('a reset or a timeout on the wire is a network error; an abort rejects with its reason', async () => {
    const reset = createStorageClient({ clock: new FakeClock(), wire: async () => Promise.reject(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })) });
    await expect(reset.put({ url: URL_, body: Buffer.from('abc'), length: 3, contentType: 'video/mp4' })).rejects.toMatchObject({ kind: 'network', details: { code: 'ECONNRESET' } });
    const slow = createStorageClient({ clock: new FakeClock(), wire: async () => Promise.reject(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT', name: 'TimeoutError' })) });
    await expect(slow.put({ url: URL_, body: Buffer.from('abc'), length: 3, contentType: 'video/mp4' })).rejects.toMatchObject({ kind: 'network', details: { code: 'ETIMEDOUT' } });
    const ac = new AbortController();
    const why = new Error('cancelled');
    const held = createStorageClient({
      clock: new FakeClock(),
      wire: (req) => new Promise((_, reject) => req.signal?.addEventListener('abort', () => reject(req.signal?.reason))),
    });
    const p = held.put({ url: URL_, body: Buffer.from('abc'), length: 3, contentType: 'video/mp4', signal: ac.signal });
    ac.abort(why);
    await expect(p).rejects.toBe(why);
  });
});
