// A cancel that comes while an upload's last part is on its way (issue 27,
// item 3). The hostile run cancelled during the last part and was told
// `cancelled` while the service completed the asset (5 of 8 timings).
//
// The daemon's own pieces in-process (the outbox on a temp dir, the
// dispatcher, the upload worker, the uploads unit, the local API's upload
// handlers) on a FakeClock, against a storage stub that holds the last PUT
// open after its whole body arrived. A body that arrived whole is a complete
// asset at storage, whatever the client does next: that is what a cancel
// cannot take back. The cancel is sent while the PUT is held, then the PUT is
// released; nothing depends on real time.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, readSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { isFileSlice } from '../../agent/api/storage-body.js';
import type { ChunkPut } from '../../agent/api/storage.js';
import { EventBus } from '../../agent/core/event-bus.js';
import type { DaemonSnapshot } from '../../agent/core/state.js';
import { ApiError, HandlerMap, type Answer } from '../../agent/localapi/handlers.js';
import { registerUploadHandlers } from '../../agent/uploads/upload-handlers.js';
import { AgentError } from '../../agent/lib/errors.js';
import { CANCEL_WAIT_MS } from '../../agent/lib/timing.js';
import { Dispatcher } from '../../agent/outbox/dispatcher.js';
import { OutboxUnit } from '../../agent/outbox/outbox-unit.js';
import { Outbox } from '../../agent/outbox/outbox.js';
import type { Outcome } from '../../agent/outbox/outcome.js';
import { LastParts } from '../../agent/uploads/last-part.js';
import { RealtimeWorker } from '../../agent/uploads/realtime-worker.js';
import { REALTIME_KIND, type RealtimePayload } from '../../agent/uploads/realtime-item.js';
import { uploadRows } from '../../agent/uploads/upload-rows.js';
import { UploadWorker } from '../../agent/uploads/upload-worker.js';
import { UploadsUnit } from '../../agent/uploads/uploads-unit.js';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';
import { realtimeDeps } from './realtime-stubs.js';

const PART = 16 * 1024;
const dirs: string[] = [];
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** How a held PUT ends: storage's answer, or nothing yet. */
type Release = (how: 'ok' | 'refused') => void;

async function bodyOf(chunk: ChunkPut): Promise<Buffer> {
  if (Buffer.isBuffer(chunk.body)) return chunk.body;
  if (isFileSlice(chunk.body)) {
    const slice = chunk.body as unknown as { fd?: number; file?: string; start: number; onRead?: (b: Buffer) => void };
    const b = Buffer.alloc(chunk.length);
    // This agent's slice carries a descriptor; an older one's a path (read as the storage client read it then).
    const fd = slice.fd ?? (await import('node:fs')).openSync(slice.file!, 'r');
    const n = readSync(fd, b, 0, chunk.length, slice.start);
    slice.onRead?.(b.subarray(0, n));
    return b.subarray(0, n);
  }
  const parts: Buffer[] = [];
  for await (const c of chunk.body as Readable) parts.push(Buffer.from(c as Buffer));
  return Buffer.concat(parts);
}

/**
 * Storage: keeps each part whose whole body arrived. A held PUT waits after
 * its body arrived, for the test's release or for the client's abort (a
 * client gone before the answer changes nothing at storage).
 */
function storage(holdWhen: (key: string) => boolean) {
  const stored = new Map<string, Buffer>();
  const held: Array<{ key: string; release: Release }> = [];
  return {
    stored,
    held,
    async put(chunk: ChunkPut): Promise<{ status: number }> {
      const key = chunk.url.split('/_storage/')[1]!;
      const body = await bodyOf(chunk);
      if (body.length !== chunk.length) throw new AgentError('internal', `PUT ${key}: the body ended short`);
      if (holdWhen(key)) {
        const how = await new Promise<'ok' | 'refused' | 'aborted'>((resolve) => {
          held.push({ key, release: resolve });
          chunk.signal?.addEventListener('abort', () => resolve('aborted'), { once: true });
        });
        // Storage had the whole body before the client gave up: the part is there all the same.
        if (how !== 'refused') stored.set(key, body);
        if (how === 'aborted') throw chunk.signal!.reason;
        if (how === 'refused') throw new AgentError('server', `PUT ${key}: HTTP 500`, { status: 500 });
        return { status: 200 };
      }
      stored.set(key, body);
      return { status: 200 };
    },
  };
}

/** The daemon's upload pieces, wired as daemon/units.ts wires them, with a media dir holding one clip of 5½ parts. */
async function daemon(holdWhen: (key: string) => boolean) {
  const top = mkdtempSync(path.join(tmpdir(), 'c2c-cancel-last-'));
  dirs.push(top);
  const media = path.join(top, 'media');
  const queueDir = path.join(top, 'queue');
  mkdirSync(media);
  const data = randomBytes(5 * PART + 700);
  writeFileSync(path.join(media, 'clip.mp4'), data);
  const clock = new FakeClock();
  const bus = new EventBus();
  const roots = { roots: [media] };
  const lastParts = new LastParts();
  const s = storage(holdWhen);
  const indexed = new Set<number>();
  const index = { load: async () => undefined, has: (f: { ino: number }) => indexed.has(f.ino), add: async (f: { ino: number }) => void indexed.add(f.ino), hasRecording: () => false, addRecording: async () => undefined, recordingFinished: async () => undefined };
  const outbox = new Outbox({ dir: queueDir, clock, bootId: 'boot', flushMs: 0 });
  const urls = new Map<string, string[]>();
  let assets = 0;
  const workerDeps = {
    assets: {
      create: async (req: { filesize: number }) => {
        const id = `asset-${++assets}`;
        return { value: { id, uploadUrls: Array.from({ length: Math.ceil(req.filesize / PART) }, (_, i) => `http://127.0.0.1/_storage/${id}/${i}`) }, meta: {} } as never;
      },
    },
    storage: s,
    outbox,
    urls: { save: async (id: string, u: string[]) => void urls.set(id, u), load: async (id: string) => urls.get(id), remove: async (id: string) => void urls.delete(id) },
    clock,
    serverNow: () => clock.wallNow(),
    channelId: async () => undefined,
    index,
    deleteAfterUpload: false,
    roots,
    lastParts,
  };
  const worker = new UploadWorker(workerDeps);
  const dispatcher = new Dispatcher({ outbox, workers: [worker], clock, random: () => 0.5, onSettled: () => bus.emit('outboxSettled', {}) });
  const outboxUnit = new OutboxUnit(outbox, dispatcher, bus);
  const unitDeps = { index, outbox: outboxUnit, queueDir, roots, settleMs: 1_000, clock, bus, lastParts };
  const uploads = new UploadsUnit(unitDeps);
  const routes = new HandlerMap();
  const rows = () => uploadRows(outboxUnit.items(), new Set(outboxUnit.inFlight()));
  registerUploadHandlers(routes, { uploads, rows, roots });
  outboxUnit.start();
  await outboxUnit.ready();
  outboxUnit.onSnapshot({ state: 'online' } as DaemonSnapshot);
  uploads.start();
  stops.push(async () => {
    for (const h of s.held.splice(0)) h.release('refused');
    const stopped = watch(uploads.stop().then(() => outboxUnit.stop()).then(() => true));
    await until('stopped', () => stopped.value() === true);
  });

  async function call(method: string, p: string, body?: unknown): Promise<Answer | ApiError> {
    const m = routes.match(method, p);
    if (m.kind !== 'found') throw new Error(`no route ${method} ${p}`);
    try {
      return await m.handler({ method, path: p, params: m.params, query: new URLSearchParams(), body });
    } catch (err) {
      if (err instanceof ApiError) return err;
      throw err;
    }
  }
  /** Turns agent time a millisecond at a time (the outbox's group commits, the dispatcher) until `done`, letting real I/O land between turns. */
  async function until(what: string, done: () => boolean, stepMs = 1): Promise<void> {
    for (let i = 0; i < 20_000; i++) {
      if (done()) return;
      await clock.advance(stepMs);
      await flushMicrotasks();
    }
    throw new Error(`never: ${what}`);
  }
  /** A few turns of agent time and real I/O, with nothing awaited. */
  async function turns(n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      await clock.advance(1);
      await flushMicrotasks();
    }
  }
  /** The asset storage would assemble, when every part arrived. */
  const object = (asset: string): Buffer | undefined => {
    const parts = Array.from({ length: Math.ceil(data.length / PART) }, (_, i) => s.stored.get(`${asset}/${i}`));
    return parts.every((p) => p !== undefined) ? Buffer.concat(parts as Buffer[]) : undefined;
  };
  const queue = async (): Promise<string> => {
    const a = watch(call('POST', '/v1/uploads', { paths: ['clip.mp4'] }));
    await until('queued', () => a.value() !== 'pending');
    return ((a.value() as { body: { uploads: Array<{ id: string }> } }).body).uploads[0]!.id;
  };
  return { clock, s, data, call, until, turns, object, queue, rows, indexed, ino: statSync(path.join(media, 'clip.mp4')).ino };
}

/** Settles to its value once it has one; `pending` meanwhile. */
function watch<T>(p: Promise<T>): { value: () => T | 'pending' } {
  let v: T | 'pending' = 'pending';
  void p.then((x) => (v = x));
  return { value: () => v };
}

const LAST = '/5';

describe('a cancel while the last part is on its way', () => {
  it('storage takes the part: the answer, the list and the queue say completed-despite-cancel, never cancelled; the asset is the clip', async () => {
    const d = await daemon((key) => key.endsWith(LAST));
    const id = await d.queue();
    await d.until('the last PUT is held', () => d.s.held.length === 1);
    const answer = watch(d.call('DELETE', `/v1/uploads/${id}`));
    await d.turns(20);
    d.s.held[0]!.release('ok');
    await d.until('the cancel answered', () => answer.value() !== 'pending');
    expect(answer.value()).toMatchObject({ status: 200, body: { upload: { id, state: 'completed-despite-cancel' } } });
    expect(d.object('asset-1')?.equals(d.data)).toBe(true);
    expect(d.rows().find((r) => r.id === id)).toMatchObject({ state: 'completed-despite-cancel', bytesDone: d.data.length, reason: expect.stringMatching(/^completed-despite-cancel: a cancel came while its last part was on its way/) });
    // Asked again: the same answer, not a 409 "done already" that would read as if no cancel had come.
    expect(await d.call('DELETE', `/v1/uploads/${id}`)).toMatchObject({ status: 200, body: { upload: { state: 'completed-despite-cancel' } } });
    expect(d.indexed.has(d.ino)).toBe(true);
  });

  it('storage refuses the part: cancelled, the file recorded, no retry, no complete asset', async () => {
    const d = await daemon((key) => key.endsWith(LAST));
    const id = await d.queue();
    await d.until('the last PUT is held', () => d.s.held.length === 1);
    const answer = watch(d.call('DELETE', `/v1/uploads/${id}`));
    await d.turns(20);
    d.s.held[0]!.release('refused');
    await d.until('the cancel answered', () => answer.value() !== 'pending');
    expect(answer.value()).toMatchObject({ status: 200, body: { upload: { id, state: 'cancelled' } } });
    expect(d.object('asset-1')).toBeUndefined();
    expect(d.indexed.has(d.ino)).toBe(true);
    await d.clock.advance(120_000);
    expect(d.s.held).toHaveLength(1);
    expect(d.rows().find((r) => r.id === id)?.state).toBe('cancelled');
  });

  it(`storage silent past ${CANCEL_WAIT_MS / 1000} s: 202 with the upload still uploading, then its true end once storage answers`, async () => {
    const d = await daemon((key) => key.endsWith(LAST));
    const id = await d.queue();
    await d.until('the last PUT is held', () => d.s.held.length === 1);
    const answer = watch(d.call('DELETE', `/v1/uploads/${id}`));
    await d.until('the cancel answered', () => answer.value() !== 'pending', 100);
    expect(answer.value()).toMatchObject({ status: 202, body: { upload: { id, state: 'uploading' } } });
    d.s.held[0]!.release('ok');
    await d.until('the upload ended', () => d.rows().find((r) => r.id === id)?.state !== 'uploading');
    expect(d.rows().find((r) => r.id === id)?.state).toBe('completed-despite-cancel');
    expect(d.object('asset-1')?.equals(d.data)).toBe(true);
  });

  it('a cancel before the last part went: cancelled, and the last part never reaches storage', async () => {
    const d = await daemon((key) => key.endsWith('/0'));
    const id = await d.queue();
    await d.until('the first PUT is held', () => d.s.held.length === 1);
    const answer = watch(d.call('DELETE', `/v1/uploads/${id}`));
    await d.until('the cancel answered', () => answer.value() !== 'pending');
    expect(answer.value()).toMatchObject({ status: 200, body: { upload: { id, state: 'cancelled' } } });
    await d.clock.advance(120_000);
    expect([...d.s.stored.keys()].some((k) => k.endsWith(LAST))).toBe(false);
  });
});

describe('the workers at the last part, with a cancel asked', () => {
  it('whole file: a cancel asked before the last bytes go keeps them back; the attempt ends cancelled, not failed', async () => {
    const top = mkdtempSync(path.join(tmpdir(), 'c2c-cancel-last-'));
    dirs.push(top);
    const file = path.join(top, 'clip.mp4');
    writeFileSync(file, randomBytes(3 * PART + 5));
    const st = statSync(file);
    const lastParts = new LastParts();
    const s = storage(() => false);
    // The cancel comes as the worker verifies the file before its last bytes: after every other part went.
    const urls = new Map<string, string[]>();
    const worker = new UploadWorker({
      assets: { create: async () => ({ value: { id: 'a', uploadUrls: [0, 1, 2, 3].map((i) => `http://127.0.0.1/_storage/a/${i}`) }, meta: {} }) as never },
      storage: {
        put: (c) => {
          if (c.url.endsWith('/2')) lastParts.stop('b:1');
          return s.put(c);
        },
      },
      outbox: { progress: async () => undefined, flush: async () => undefined },
      urls: { save: async (id, u) => void urls.set(id, u), load: async (id) => urls.get(id), remove: async (id) => void urls.delete(id) },
      clock: new FakeClock(),
      serverNow: () => Date.UTC(2026, 0, 1),
      channelId: async () => undefined,
      index: { has: () => false, add: async () => undefined },
      deleteAfterUpload: false,
      chunksInFlight: 1,
      lastParts,
    });
    const out = await worker.run({ id: 'b:1', kind: 'upload', priority: 0, payload: { path: file, name: 'clip.mp4', filetype: 'video/mp4', size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, dev: st.dev }, createdAt: '', bytes: 0, state: 'pending' }, new AbortController().signal);
    expect(out).toEqual({ result: 'dead', reason: 'cancelled: through the local API, before its last part went' });
    expect([...s.stored.keys()]).toEqual(['a/0', 'a/1', 'a/2']);
  });

  it('real time: the final part held at storage, a cancel asked, storage takes it: done, noted completed-despite-cancel; asked before: kept back, cancelled', async () => {
    const top = mkdtempSync(path.join(tmpdir(), 'c2c-cancel-last-'));
    dirs.push(top);
    const run = async (cancelFirst: boolean): Promise<{ out: Outcome; stored: string[]; late?: Promise<boolean> }> => {
      const part = path.join(top, `rec${cancelFirst ? 1 : 2}.mov.part`);
      writeFileSync(part, randomBytes(2 * PART + 100));
      const st = statSync(part);
      // Finished before the run: the finish sends part 1, part 2, then the final part 3.
      renameSync(part, part.slice(0, -'.part'.length));
      const payload: RealtimePayload = { path: part, finalPath: part.slice(0, -'.part'.length), name: 'rec.mov', filetype: 'video/quicktime', ino: st.ino, dev: st.dev, mtimeMs: st.mtimeMs };
      const lastParts = new LastParts();
      if (cancelFirst) lastParts.stop('r:1');
      const s = storage((key) => key.endsWith('final'));
      const worker = new RealtimeWorker(
        realtimeDeps({
          assets: {
            createRealtime: async () => ({ value: { id: 'rt' }, meta: {} }) as never,
            realtimeParts: async (_id, parts) => ({ value: parts.map((p) => `http://127.0.0.1/_storage/rt/${p.number}${p.final === true ? 'final' : ''}`), meta: {} }) as never,
          },
          storage: s,
          partBytes: PART,
          lastParts,
        }),
      );
      const outcome = worker.run({ id: 'r:1', kind: REALTIME_KIND, priority: 0, payload, createdAt: '', bytes: 0, state: 'pending' }, new AbortController().signal);
      let late: Promise<boolean> | undefined;
      if (!cancelFirst) {
        for (let i = 0; i < 10_000 && s.held.length === 0; i++) await flushMicrotasks();
        late = lastParts.stop('r:1');
        s.held[0]!.release('ok');
      }
      return { out: await outcome, stored: [...s.stored.keys()], ...(late && { late }) };
    };
    const taken = await run(false);
    expect(await taken.late).toBe(true);
    expect(taken.out).toMatchObject({ result: 'done', note: expect.stringMatching(/^completed-despite-cancel:/) });
    expect(taken.stored).toContain('rt/3final');
    const kept = await run(true);
    expect(kept.out).toEqual({ result: 'dead', reason: 'cancelled: through the local API, before its last part went' });
    expect(kept.stored.some((k) => k.endsWith('final'))).toBe(false);
  });
});
