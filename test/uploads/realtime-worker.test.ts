// The real-time worker against fakes of the service and storage (which read
// the bytes from the descriptor they are given, as the storage client does),
// over real temp files, on a FakeClock, with 16-byte parts: how a recording
// ends (renamed, gone, left unwritten past the bound, settled in place), the
// paused service, a 401, a resume that sends no recorded part again, a part
// rewritten after it went, and a file that shrank.
import { afterAll, describe, expect, jest, test } from '@jest/globals';
import { promises as fsp } from 'node:fs';
import { appendFileSync, existsSync, mkdtempSync, openSync, readdirSync, closeSync, readSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { RealtimePart } from '../../agent/api/assets.js';
import { AgentError } from '../../agent/lib/errors.js';
import { REALTIME_LOOK_MS, REALTIME_STALL_MS } from '../../agent/lib/timing.js';
import type { Outcome } from '../../agent/outbox/outcome.js';
import type { OutboxItem } from '../../agent/outbox/types.js';
import { REALTIME_KIND, realtimeProgressOf, type RealtimePayload } from '../../agent/uploads/realtime-item.js';
import { PART_HASH } from '../../agent/uploads/part-hash.js';
import { RealtimeWorker, type RealtimeWorkerDeps } from '../../agent/uploads/realtime-worker.js';
import { FakeClock } from '../support/fake-clock.js';

const P = 16;
const temps: string[] = [];
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

interface Put {
  number: number;
  bytes: string;
  final: boolean;
  filesize?: number;
}

function rig(o: { createError?: AgentError; partsError?: AgentError; partsErrorAfter?: number; settleMs?: number } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'c2c-rtw-'));
  temps.push(dir);
  const clock = new FakeClock(1_000_000, Date.now());
  const puts: Put[] = [];
  const asked: Array<{ parts: RealtimePart[]; filesize?: number }> = [];
  let progress: unknown;
  let creates = 0;
  const index: Array<{ ino: number; size: number }> = [];
  const refusedRecordings: Array<{ ino: number; finalPath: string }> = [];
  const deps: RealtimeWorkerDeps = {
    assets: {
      async createRealtime() {
        if (o.createError) throw o.createError;
        creates++;
        return { value: { id: `asset-${creates}` }, meta: {} as never };
      },
      async realtimeParts(_id, parts, filesize) {
        if (o.partsError && asked.length >= (o.partsErrorAfter ?? 0)) throw o.partsError;
        asked.push({ parts, ...(filesize !== undefined && { filesize }) });
        return { value: parts.map((p) => `https://storage.example/${p.number}?final=${p.final === true}&size=${filesize ?? ''}`), meta: {} as never };
      },
    },
    storage: {
      async put(chunk) {
        const u = new URL(chunk.url);
        const body = chunk.body as { fd: number; start: number; onRead?: (b: Buffer) => void };
        const buf = Buffer.alloc(chunk.length);
        readSync(body.fd, buf, 0, chunk.length, body.start);
        body.onRead?.(buf);
        puts.push({ number: Number(u.pathname.slice(1)), bytes: buf.toString(), final: u.searchParams.get('final') === 'true', ...(u.searchParams.get('size') ? { filesize: Number(u.searchParams.get('size')) } : {}) });
        return { status: 200 };
      },
    },
    outbox: {
      async progress(_id, data) {
        progress = data;
      },
      async flush() {},
    },
    clock,
    serverNow: () => clock.wallNow(),
    channelId: async () => undefined,
    index: { has: () => false, add: async (f) => void index.push(f), addRecording: async (r) => void refusedRecordings.push({ ino: r.ino, finalPath: r.finalPath }) },
    deleteAfterUpload: false,
    settleMs: o.settleMs ?? 10_000,
    queueDir: path.join(dir, 'queue'),
    partBytes: P,
  };
  const worker = new RealtimeWorker(deps);
  const item = (file: string, finalPath: string): OutboxItem => {
    const st = statSync(file);
    const payload: RealtimePayload = { path: file, finalPath, name: path.basename(finalPath), filetype: 'video/quicktime', ino: st.ino, dev: st.dev, mtimeMs: st.mtimeMs };
    return { id: 'boot:1', kind: REALTIME_KIND, priority: 0, payload, createdAt: '', bytes: 0, state: 'pending', ...(progress !== undefined && { progress }) };
  };
  /** Runs the item, turning the clock a look at a time and calling `step` before each look, until the run ends. */
  const run = async (it: OutboxItem, step: (look: number) => void = () => undefined, ac = new AbortController()): Promise<Outcome> => {
    let outcome: Outcome | undefined;
    const p = worker.run(it, ac.signal).then((x) => (outcome = x));
    for (let look = 0; outcome === undefined && look < 100_000; look++) {
      // Real I/O between looks (a busy machine is slow to deliver it) is waited for below, as the worker's
      // rest; agent time moves a look at a time.
      await new Promise((r) => setImmediate(r));
      // The step runs while the worker rests between looks (its one timer armed), never while a look is
      // on its way: a write the look in flight saw, followed by the advance that ends that look's pause,
      // would make the next look see nothing new though the step wrote before each advance.
      const restingBy = Date.now() + 10_000;
      while (outcome === undefined && clock.pendingCount === 0 && Date.now() < restingBy) await new Promise((r) => setImmediate(r));
      step(look);
      await clock.advance(REALTIME_LOOK_MS);
    }
    return p;
  };
  return { dir, clock, puts, asked, index, refusedRecordings, worker, item, run, progress: () => progress, creates: () => creates, deps };
}

const chars = (c: string, n: number): string => c.repeat(n);

describe('RealtimeWorker', () => {
  test('parts go as the file grows (part 1 held back), then at the rename part 1, then the final part with the size', async () => {
    const r = rig();
    const part = path.join(r.dir, 'take.mov.part');
    const file = path.join(r.dir, 'take.mov');
    writeFileSync(part, chars('a', P));
    const out = await r.run(r.item(part, file), (look) => {
      if (look === 1) appendFileSync(part, chars('b', P) + chars('c', P) + 'd');
      if (look > 1 && r.puts.length === 2 && existsSync(part)) {
        // The recorder's stop: its header rewritten, then the rename.
        const fd = openSync(part, 'r+');
        writeSync(fd, 'H', 0);
        closeSync(fd);
        renameSync(part, file);
      }
    });
    expect(out).toEqual({ result: 'done' });
    expect(r.puts.map((p) => [p.number, p.bytes, p.final])).toEqual([
      [2, chars('b', P), false],
      [3, chars('c', P), false],
      [1, 'H' + chars('a', P - 1), false],
      [4, 'd', true],
    ]);
    expect(r.puts.at(-1)?.filesize).toBe(3 * P + 1);
    expect(r.index).toMatchObject([{ ino: statSync(file).ino, size: 3 * P + 1 }]);
    expect(realtimeProgressOf(r.progress())?.final).toMatchObject({ size: 3 * P + 1 });
  });

  test('a part rewritten after it went goes again under its number; a resumed run sends no recorded part again', async () => {
    const r = rig();
    const part = path.join(r.dir, 'b.mov.part');
    const file = path.join(r.dir, 'b.mov');
    writeFileSync(part, chars('a', P) + chars('b', P) + chars('c', P) + 'x');
    // First run: parts 2 and 3 go, then the daemon stops.
    const ac = new AbortController();
    const it = r.item(part, file);
    const first = await r.run(it, () => r.puts.length >= 2 && ac.abort(new Error('stopping')), ac);
    expect(first).toMatchObject({ result: 'retry' });
    expect(r.puts.map((p) => p.number)).toEqual([2, 3]);
    // While it was down, the recorder rewrote part 2 and stopped.
    const fd = openSync(part, 'r+');
    writeSync(fd, 'Z', P + 3);
    closeSync(fd);
    renameSync(part, file);
    const out = await r.run({ ...it, progress: r.progress() });
    expect(out).toEqual({ result: 'done' });
    expect(r.puts.map((p) => p.number)).toEqual([2, 3, 1, 2, 4]);
    expect(r.puts[3]!.bytes).toBe(chars('b', 3) + 'Z' + chars('b', P - 4));
  });

  test('an asset older than 24 h (the service has dropped it) is started again, every part sent to the new one', async () => {
    const r = rig();
    const part = path.join(r.dir, 'old.mov.part');
    const file = path.join(r.dir, 'old.mov');
    writeFileSync(part, chars('a', 3 * P + 2));
    const it = r.item(part, file);
    const stale = { assetId: 'asset-0', createdAt: r.clock.wallNow() - 25 * 3600_000, partBytes: P, hash: PART_HASH, sent: ['', 'x', 'y'], seen: 3 * P + 2 };
    const out = await r.run({ ...it, progress: stale }, () => existsSync(part) && r.puts.length >= 2 && renameSync(part, file));
    expect(out).toEqual({ result: 'done' });
    expect(r.creates()).toBe(1);
    expect(r.puts.map((p) => p.number)).toEqual([2, 3, 1, 4]);
    expect(realtimeProgressOf(r.progress())?.assetId).toBe('asset-1');
  });

  test('a .part that disappears ends the item with the reason, leaving its asset', async () => {
    const r = rig();
    const part = path.join(r.dir, 'gone.mov.part');
    writeFileSync(part, chars('a', 3 * P));
    const out = await r.run(r.item(part, path.join(r.dir, 'gone.mov')), () => r.puts.length >= 1 && existsSync(part) && unlinkSync(part));
    expect(out.result).toBe('dead');
    expect((out as { reason: string }).reason).toMatch(/the recording is gone: .*gone\.mov\.part disappeared without becoming .*gone\.mov.*asset asset-1 is left unfinished/);
    expect(r.puts.some((p) => p.final)).toBe(false);
  });

  test(`a recording nothing is written to for ${REALTIME_STALL_MS / 60_000} min is finished with what is on disk`, async () => {
    const r = rig();
    const part = path.join(r.dir, 'stall.mov.part');
    writeFileSync(part, chars('a', 2 * P + 5));
    const out = await r.run(r.item(part, path.join(r.dir, 'stall.mov')));
    expect(out).toEqual({ result: 'done' });
    expect(r.clock.now() - 1_000_000).toBeGreaterThanOrEqual(REALTIME_STALL_MS);
    expect(r.puts.at(-1)).toMatchObject({ number: 3, final: true, filesize: 2 * P + 5 });
    expect(existsSync(part)).toBe(true);
  });

  test('a file written in place is finished once unchanged for the settle time', async () => {
    const r = rig({ settleMs: 2_000 });
    const file = path.join(r.dir, 'A001.wav');
    writeFileSync(file, chars('a', P + 3));
    const out = await r.run(r.item(file, file));
    expect(out).toEqual({ result: 'done' });
    // By the settle time, not by the bound for a recording left unwritten (a busy machine may take a few more looks).
    expect(r.clock.now() - 1_000_000).toBeGreaterThanOrEqual(2_000);
    expect(r.clock.now() - 1_000_000).toBeLessThan(REALTIME_STALL_MS / 10);
    expect(r.puts.map((p) => [p.number, p.final])).toEqual([[1, false], [2, true]]);
  });

  test('with a settle time of 0 a clip written in place is still finished only once a look saw it unchanged', async () => {
    const r = rig({ settleMs: 0 });
    const file = path.join(r.dir, 'A002.wav');
    writeFileSync(file, chars('a', 5));
    let grown = 0;
    const out = await r.run(r.item(file, file), () => {
      if (grown < 4) appendFileSync(file, chars('b', P)), grown++;
    });
    expect(out).toEqual({ result: 'done' });
    // Whatever the looks caught, the final part carries the whole file.
    expect(r.puts.at(-1)).toMatchObject({ final: true, filesize: 5 + 4 * P });
  });

  test('the paused service (409) ends it as paused-refused at once, the recording kept in the index; a 401 is left to the dispatcher (retry, the one token policy)', async () => {
    const paused = rig({ createError: new AgentError('paused', 'the service answered 409 Channel Paused') });
    const f1 = path.join(paused.dir, 'p.mov.part');
    writeFileSync(f1, 'x');
    const out = await paused.run(paused.item(f1, path.join(paused.dir, 'p.mov')));
    expect(out.result).toBe('dead');
    expect((out as { reason: string }).reason).toMatch(/^paused-refused: /);
    expect(paused.asked).toEqual([]);
    // The index keeps the recording, so its finished file is not queued once the queue has forgotten the item.
    expect(paused.refusedRecordings).toEqual([{ ino: statSync(f1).ino, finalPath: path.join(paused.dir, 'p.mov') }]);

    const refused = rig({ partsError: new AgentError('unauthorized', 'the service answered 401') });
    const f2 = path.join(refused.dir, 'u.mov.part');
    writeFileSync(f2, chars('a', 3 * P));
    const out2 = await refused.run(refused.item(f2, path.join(refused.dir, 'u.mov')));
    expect(out2).toMatchObject({ result: 'retry', error: { kind: 'unauthorized' } });
    expect(out2).not.toHaveProperty('progressed');
  });

  test('a failure after parts were recorded in the run says so (progressed): the dispatcher does not count it as one more failure in a row', async () => {
    const r = rig({ partsError: new AgentError('network', 'ECONNRESET'), partsErrorAfter: 2 });
    const f = path.join(r.dir, 'n.mov.part');
    writeFileSync(f, chars('a', 4 * P));
    const out = await r.run(r.item(f, path.join(r.dir, 'n.mov')));
    expect(r.puts.map((x) => x.number)).toEqual([2, 3]);
    expect(out).toMatchObject({ result: 'retry', error: { kind: 'network' }, progressed: true });
  });

  test('a file that shrank below the parts sent is handed back to go whole', async () => {
    const r = rig();
    const part = path.join(r.dir, 's.mov.part');
    const file = path.join(r.dir, 's.mov');
    writeFileSync(part, chars('a', 4 * P));
    const out = await r.run(r.item(part, file), () => {
      if (r.puts.length >= 2 && existsSync(part)) {
        writeFileSync(part, chars('a', P));
        renameSync(part, file);
      }
    });
    expect(out.result).toBe('dead');
    expect((out as { reason: string }).reason).toMatch(/shrank/);
    expect(readdirSync(path.join(r.dir, 'queue', 'incoming'))).toHaveLength(1);
  });

  test('a recording that cannot be opened for want of descriptors is tried again, with the file system kind and the file named', async () => {
    const r = rig();
    const part = path.join(r.dir, 'busy.mov.part');
    writeFileSync(part, chars('a', P));
    const it = r.item(part, path.join(r.dir, 'busy.mov'));
    const open = jest.spyOn(fsp, 'open').mockRejectedValueOnce(Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE', errno: -24, syscall: 'open', path: part }));
    try {
      const out = await r.worker.run(it, new AbortController().signal);
      expect(out).toMatchObject({ result: 'retry', error: { kind: 'disk', message: expect.stringContaining(part) } });
      expect(r.creates()).toBe(0);
    } finally {
      open.mockRestore();
    }
  });
});
