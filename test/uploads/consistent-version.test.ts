// One upload sends one version of a file (issue 18, cause 1; and cause 8's
// unreadable clip): the worker against a fake service and a fake storage
// that keeps each part's bytes as they arrived. A file rewritten in place
// (same size), grown, or changed where its metadata cannot tell (a FAT
// card's coarse times, an mtime set back) after the first part landed never
// ends as a complete object: the last part's final bytes are held until the
// whole file checks out, the item is dead-lettered with what changed, and
// the file is handed back (a settle request in incoming/) to go again as a
// new asset. A file that cannot be read, or is a FIFO, gets no asset.
import { afterEach, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { appendFileSync, closeSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, utimesSync, writeFileSync, writeSync, type Stats } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ChunkPut } from '../../agent/api/storage.js';
import { isFileSlice } from '../../agent/api/storage-body.js';
import { AgentError } from '../../agent/lib/errors.js';
import { createLogger } from '../../agent/lib/logger.js';
import type { OutboxItem } from '../../agent/outbox/types.js';
import { UploadWorker } from '../../agent/uploads/upload-worker.js';
import { readUploadRequest, INCOMING_DIR } from '../../agent/uploads/upload-request.js';
import type { UploadPayload, UploadProgress } from '../../agent/uploads/upload-item.js';
import { nodeUploadFiles, type UploadFiles } from '../../agent/uploads/version-check.js';
import { FakeClock } from '../support/fake-clock.js';

const PART = 64 * 1024;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface RigOptions {
  size?: number;
  /** Runs once the PUT of part `i` has been stored (the file can be changed here). */
  afterPut?: (i: number) => void | Promise<void>;
  /** Fails the PUT of part `i` before it is stored. */
  failPut?: (i: number) => AgentError | undefined;
  files?: UploadFiles;
}

async function bodyOf(chunk: ChunkPut): Promise<Buffer> {
  if (Buffer.isBuffer(chunk.body)) return chunk.body;
  if (isFileSlice(chunk.body)) {
    // The worker's descriptor, as the storage client reads it.
    const b = Buffer.alloc(chunk.length);
    return b.subarray(0, readSync(chunk.body.fd, b, 0, chunk.length, chunk.body.start));
  }
  // A stream: read to its end; one that fails is a PUT that never delivered its length.
  const parts: Buffer[] = [];
  for await (const c of chunk.body as AsyncIterable<Buffer>) parts.push(Buffer.from(c));
  return Buffer.concat(parts);
}

function rig(o: RigOptions = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'c2c-version-'));
  dirs.push(dir);
  const file = path.join(dir, 'clip.mp4');
  const size = o.size ?? 10 * PART + 1234;
  const data = randomBytes(size);
  writeFileSync(file, data);
  // Old enough that any rewrite gets a later mtime.
  utimesSync(file, new Date(Date.now() - 3600_000), new Date(Date.now() - 3600_000));
  const st = statSync(file);
  const payload: UploadPayload = { path: file, name: 'clip.mp4', filetype: 'video/mp4', extension: '.mp4', size, mtimeMs: st.mtimeMs, ino: st.ino, dev: st.dev };
  const clock = new FakeClock();
  /** What storage holds: part bytes by `<asset>/<part>`, stored only when the whole declared length arrived. */
  const stored = new Map<string, Buffer>();
  const creates: number[] = [];
  let progress: UploadProgress | null | undefined;
  const urlFiles = new Map<string, string[]>();
  const indexed = new Set<string>();
  const lines: Array<Record<string, unknown>> = [];
  const queueDir = path.join(dir, 'queue');
  const worker = new UploadWorker({
    assets: {
      create: async (req) => {
        creates.push(req.filesize);
        const id = `asset-${creates.length}`;
        const n = Math.max(1, Math.ceil(req.filesize / PART));
        return { value: { id, uploadUrls: Array.from({ length: n }, (_, i) => `http://127.0.0.1/_storage/${id}/${i}`) }, meta: {} } as never;
      },
    },
    storage: {
      put: async (chunk) => {
        const key = chunk.url.split('/_storage/')[1]!;
        const i = Number(key.split('/')[1]);
        const fault = o.failPut?.(i);
        if (fault) throw fault;
        let body: Buffer;
        try {
          body = await bodyOf(chunk);
        } catch {
          throw new AgentError('internal', `PUT ${key}: reading the chunk failed`);
        }
        if (body.length !== chunk.length) throw new AgentError('internal', `PUT ${key}: the body ended short`);
        stored.set(key, body);
        await o.afterPut?.(i);
        return { status: 200 };
      },
    },
    outbox: {
      progress: async (_id, d) => void (progress = d as UploadProgress | null),
      flush: async () => undefined,
    },
    urls: {
      save: async (id, urls) => void urlFiles.set(id, urls),
      load: async (id) => urlFiles.get(id),
      remove: async (id) => void urlFiles.delete(id),
    },
    clock,
    serverNow: () => clock.wallNow(),
    channelId: async () => undefined,
    index: { has: (f) => indexed.has(`${f.ino}:${f.size}:${f.mtimeMs}`), add: async (f) => void indexed.add(`${f.ino}:${f.size}:${f.mtimeMs}`) },
    deleteAfterUpload: false,
    queueDir,
    ...(o.files && { files: o.files }),
    logger: createLogger('debug', { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) }),
  });
  const item = (prog?: UploadProgress | null): OutboxItem => ({ id: 'b:1', kind: 'upload', priority: 0, payload, createdAt: '', bytes: 0, state: 'pending', progress: prog ?? undefined });
  const run = () => worker.run(item(progress), new AbortController().signal);
  /** The object storage would assemble for an asset, when every part arrived. */
  const object = (asset: string): Buffer | undefined => {
    const n = Math.max(1, Math.ceil(size / PART));
    const parts = Array.from({ length: n }, (_, i) => stored.get(`${asset}/${i}`));
    return parts.every((p) => p !== undefined) ? Buffer.concat(parts as Buffer[]) : undefined;
  };
  const handedBack = async (): Promise<UploadPayload[]> => {
    let names: string[];
    try {
      names = readdirSync(path.join(queueDir, INCOMING_DIR));
    } catch {
      return [];
    }
    const out: UploadPayload[] = [];
    for (const n of names) {
      const r = await readUploadRequest(path.join(queueDir, INCOMING_DIR, n));
      if (r.kind === 'ok' && r.settle) out.push(...r.files);
    }
    return out;
  };
  const rewrite = (bytes: Buffer): void => {
    const fd = openSync(file, 'r+');
    writeSync(fd, bytes, 0, bytes.length, 0);
    closeSync(fd);
  };
  return { file, data, size, payload, stored, creates, lines, run, object, handedBack, rewrite, progress: () => progress, indexed };
}

/** A file system whose stat answers never change: a FAT card's 2 s times and an mtime set back hide a rewrite from them. */
function frozenStats(): UploadFiles {
  const first = new Map<string, Stats>();
  const keep = (file: string, st: Stats): Stats => {
    if (!first.has(file)) first.set(file, st);
    return first.get(file)!;
  };
  return {
    async open(file) {
      const h = await nodeUploadFiles.open(file);
      return { fd: h.fd, read: (b, off, len, pos) => h.read(b, off, len, pos), close: () => h.close(), stat: async () => keep(file, (await h.stat()) as Stats) };
    },
    stat: async (file) => keep(file, (await nodeUploadFiles.stat(file)) as Stats),
    lstat: async (file) => keep(`${file} (lstat)`, (await nodeUploadFiles.lstat(file)) as Stats),
  };
}

describe('one upload, one version', () => {
  it('a file that holds still: every part stored, the object is the file, nothing handed back', async () => {
    const r = rig();
    expect(await r.run()).toEqual({ result: 'done' });
    expect(r.object('asset-1')?.equals(r.data)).toBe(true);
    expect(await r.handedBack()).toEqual([]);
    expect(r.progress()).toMatchObject({ ctimeMs: expect.any(Number), check: { seed: expect.any(Number), sent: expect.stringMatching(/^[0-9a-f]{16}$/) } });
  });

  it('rewritten in place (same size) after the first part landed: no complete object, dead with what changed, handed back to go again', async () => {
    const fresh = randomBytes(10 * PART + 1234);
    const r = rig({ afterPut: (i) => void (i === 0 && r.rewrite(fresh)) });
    const out = await r.run();
    expect(out).toMatchObject({ result: 'dead', reason: expect.stringMatching(/changed while it uploaded.*clip\.mp4.*asset-1 is left unfinished/) });
    expect(r.object('asset-1')).toBeUndefined();
    expect(r.lines.filter((l) => l.level === 40 && /upload stopped: 'clip\.mp4' changed while it uploaded/.test(String(l.msg)))).toHaveLength(1);
    expect(r.lines.some((l) => /upload finished/.test(String(l.msg)))).toBe(false);
    expect(await r.handedBack()).toEqual([r.payload]);
    expect(r.indexed.size).toBe(0);
  });

  it('the same rewrite where stat cannot see it (FAT times, mtime set back): the samples catch it before the last bytes go', async () => {
    const fresh = randomBytes(10 * PART + 1234);
    const r = rig({ files: frozenStats(), afterPut: (i) => void (i === 0 && r.rewrite(fresh)) });
    const out = await r.run();
    expect(out).toMatchObject({ result: 'dead', reason: expect.stringMatching(/a sample of its bytes differs from what was sent/) });
    expect(r.object('asset-1')).toBeUndefined();
    // Every part but the last reached storage: the held-back final buffer is what kept the object from completing.
    expect(r.stored.size).toBe(10);
  });

  it('grown after the first part landed: no complete object, dead naming the new size', async () => {
    const r = rig({ afterPut: (i) => void (i === 0 && appendFileSync(r.file, randomBytes(5000))) });
    const out = await r.run();
    expect(out).toMatchObject({ result: 'dead', reason: expect.stringMatching(/size changed from 656594 to 661594 bytes/) });
    expect(r.object('asset-1')).toBeUndefined();
    expect(await r.handedBack()).toHaveLength(1);
  });

  it('a one-part file rewritten while its only part streams: never stored', async () => {
    let reads = 0;
    const fresh = randomBytes(40_000);
    const base = nodeUploadFiles;
    const files: UploadFiles = {
      stat: base.stat,
      lstat: base.lstat,
      async open(file) {
        const h = await base.open(file);
        return {
          fd: h.fd,
          stat: () => h.stat(),
          close: () => h.close(),
          // The rewrite lands between the sample and the read of the last part's bytes.
          read: async (b, off, len, pos) => {
            if (++reads === 4) r.rewrite(fresh);
            return h.read(b, off, len, pos);
          },
        };
      },
    };
    const r = rig({ size: 40_000, files });
    expect(await r.run()).toMatchObject({ result: 'dead', reason: expect.stringMatching(/changed while it uploaded/) });
    expect(r.object('asset-1')).toBeUndefined();
  });

  it('resumed after a failed attempt: the parts sent before count in the check; a stat-hidden rewrite between attempts is caught', async () => {
    let fail = true;
    const fresh = randomBytes(10 * PART + 1234);
    const r = rig({ files: frozenStats(), failPut: (i) => (fail && i === 4 ? new AgentError('network', 'reset') : undefined) });
    expect(await r.run()).toMatchObject({ result: 'retry' });
    expect(r.progress()?.done.length).toBeGreaterThan(0);
    fail = false;
    r.rewrite(fresh);
    expect(await r.run()).toMatchObject({ result: 'dead', reason: expect.stringMatching(/a sample of its bytes differs/) });
    expect(r.object('asset-1')).toBeUndefined();
    expect(r.creates).toHaveLength(1);
  });

  it('resumed after a failed attempt with the file untouched: the same asset completes with the file', async () => {
    let fail = true;
    const r = rig({ failPut: (i) => (fail && i === 4 ? new AgentError('network', 'reset') : undefined) });
    expect(await r.run()).toMatchObject({ result: 'retry' });
    fail = false;
    expect(await r.run()).toEqual({ result: 'done' });
    expect(r.creates).toHaveLength(1);
    expect(r.object('asset-1')?.equals(r.data)).toBe(true);
  });

  it('written to between attempts (inode change time moved): the old asset is left, dead, handed back', async () => {
    let fail = true;
    const r = rig({ failPut: (i) => (fail && i === 4 ? new AgentError('network', 'reset') : undefined) });
    expect(await r.run()).toMatchObject({ result: 'retry' });
    fail = false;
    // Same bytes, same mtime: only the inode change time tells.
    const st = statSync(r.file);
    r.rewrite(readFileSync(r.file));
    utimesSync(r.file, st.atime, st.mtime);
    const before = r.stored.size;
    expect(await r.run()).toMatchObject({ result: 'dead', reason: expect.stringMatching(/inode change time/) });
    expect(r.stored.size).toBe(before);
    expect(await r.handedBack()).toHaveLength(1);
  });
});

describe('a clip that cannot be read gets no asset', () => {
  it('unreadable (EACCES at open): no create, dead with the reason', async () => {
    const files: UploadFiles = {
      stat: nodeUploadFiles.stat,
      lstat: nodeUploadFiles.lstat,
      open: async () => {
        throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES', errno: -13, syscall: 'open' });
      },
    };
    const r = rig({ files });
    expect(await r.run()).toMatchObject({ result: 'dead', reason: expect.stringMatching(/cannot read the file to upload '.*clip\.mp4'.*permission denied \(EACCES\)/) });
    expect(r.creates).toEqual([]);
  });

  it('a FIFO renamed over the clip after it was queued: no create, dead naming the FIFO', async () => {
    const r = rig();
    const fifo = path.join(path.dirname(r.file), 'fifo');
    execFileSync('mkfifo', [fifo]);
    renameSync(fifo, r.file);
    expect(await r.run()).toMatchObject({ result: 'dead', reason: expect.stringMatching(/clip\.mp4' is a FIFO \(named pipe\), not a regular file/) });
    expect(r.creates).toEqual([]);
  });

  it('a file changed after it was queued, before any asset: no create, dead, handed back to go once it holds still', async () => {
    const r = rig();
    appendFileSync(r.file, 'more');
    expect(await r.run()).toMatchObject({ result: 'dead', reason: expect.stringMatching(/changed after it was queued/) });
    expect(r.creates).toEqual([]);
    expect(await r.handedBack()).toEqual([r.payload]);
  });
});
