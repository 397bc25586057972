// No byte from outside the media dir reaches storage (issue 27, items 1
// and 4), on the real file system:
//
// 1. A folder on the clip's way swapped, again and again, for one whose
//    `clip.bin` is a link to credentials.json: the hostile run's race, here
//    with the swaps at points a seeded PRNG picks among the worker's own
//    steps (before an attempt, around each file operation, before, between
//    and after the reads of each PUT's body, between parts), and resumes
//    after failed PUTs. Every byte of every PUT is looked at for the
//    credentials' marker. Before the fix, parts but the last were read by
//    path and carried it.
// 2. A hard link to credentials.json in the media dir: refused when queued
//    by hand, by both upload workers before a byte is read, and listed as
//    skipped by the media watcher.
import { afterEach, describe, expect, it } from '@jest/globals';
import { linkSync, mkdirSync, mkdtempSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { BufferPool, isFileSlice, readFileSlice } from '../../agent/api/storage-body.js';
import type { ChunkPut } from '../../agent/api/storage.js';
import { AgentError } from '../../agent/lib/errors.js';
import type { OutboxItem } from '../../agent/outbox/types.js';
import type { Outcome } from '../../agent/outbox/outcome.js';
import { MediaWatcher } from '../../agent/uploads/media-watcher.js';
import { RealtimeWorker } from '../../agent/uploads/realtime-worker.js';
import { REALTIME_KIND, type RealtimePayload } from '../../agent/uploads/realtime-item.js';
import { resolveUploadPath } from '../../agent/uploads/upload-paths.js';
import { UploadWorker, type UploadWorkerDeps } from '../../agent/uploads/upload-worker.js';
import type { UploadPayload, UploadProgress } from '../../agent/uploads/upload-item.js';
import { nodeUploadFiles, type UploadFiles } from '../../agent/uploads/version-check.js';
import { FakeClock } from '../support/fake-clock.js';
import { seeded } from '../support/seeded.js';
import { realtimeDeps } from './realtime-stubs.js';

const MARKER = Buffer.from('C2C-TEST-CREDENTIALS-MARKER;');
const PART = 16 * 1024;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A state dir with a credentials file that is the marker over and over (any 16 KiB of it holds one), and a media dir. */
function place() {
  const top = mkdtempSync(path.join(tmpdir(), 'c2c-outside-'));
  dirs.push(top);
  const state = path.join(top, 'state');
  const media = path.join(top, 'media');
  mkdirSync(state);
  mkdirSync(media);
  const secret = path.join(state, 'credentials.json');
  writeFileSync(secret, Buffer.concat(Array.from({ length: Math.ceil((8 * PART) / MARKER.length) }, () => MARKER)));
  return { top, state, media, secret };
}

const carries = (b: Buffer): boolean => b.includes(MARKER.subarray(0, 16));

describe('a folder swapped while the clip uploads', () => {
  it('no byte of credentials.json ever reaches storage, over 250 seeded races with resumes; the clip goes whole when left alone', async () => {
    const { media, secret } = place();
    const real = path.join(media, 'real');
    const aside = path.join(media, 'real.orig');
    const evil = path.join(media, 'evil');
    const clip = path.join(real, 'clip.bin');
    mkdirSync(real);
    mkdirSync(evil);
    symlinkSync(secret, path.join(evil, 'clip.bin'));
    // 600 KiB would be 38 parts; 7 parts keep 250 races quick and every part but the last one the path used to reach.
    let data = randomBytes(6 * PART + 1234);
    while (carries(data)) data = randomBytes(data.length);
    writeFileSync(clip, data);

    const rand = seeded(27_001);
    let swapped = false;
    const swap = (): void => {
      if (swapped) {
        renameSync(real, evil);
        renameSync(aside, real);
      } else {
        renameSync(real, aside);
        renameSync(evil, real);
      }
      swapped = !swapped;
    };
    /** How often the swapper strikes at a moment, drawn per race: some races are left alone, most are not. */
    let hostility = 0;
    const moment = async (): Promise<void> => {
      if (rand() < hostility) swap();
    };
    // Every file operation the worker makes goes through a moment first.
    const files: UploadFiles = {
      open: async (f) => (await moment(), nodeUploadFiles.open(f)),
      stat: async (f) => (await moment(), nodeUploadFiles.stat(f)),
      lstat: async (f) => (await moment(), nodeUploadFiles.lstat(f)),
    };

    const leaks: string[] = [];
    const stored = new Map<string, Buffer>();
    const pool = new BufferPool(4096);
    /** The body as the storage client reads it (the same slice reader), with moments between its reads. */
    async function bodyOf(chunk: ChunkPut): Promise<Buffer> {
      if (Buffer.isBuffer(chunk.body)) return chunk.body;
      const parts: Buffer[] = [];
      const source: AsyncIterable<Buffer> = isFileSlice(chunk.body) ? readFileSlice(chunk.body, chunk.length, pool) : (chunk.body as Readable);
      for await (const b of source) {
        parts.push(Buffer.from(b));
        await moment();
      }
      return Buffer.concat(parts);
    }
    let assets = 0;
    let progress: UploadProgress | null | undefined;
    const urls = new Map<string, string[]>();
    const deps: UploadWorkerDeps = {
      assets: {
        create: async (req) => {
          const id = `asset-${++assets}`;
          return { value: { id, uploadUrls: Array.from({ length: Math.ceil(req.filesize / PART) }, (_, i) => `http://127.0.0.1/_storage/${id}/${i}`) }, meta: {} } as never;
        },
      },
      storage: {
        put: async (chunk) => {
          const key = chunk.url.split('/_storage/')[1]!;
          await moment();
          let body: Buffer;
          try {
            body = await bodyOf(chunk);
          } catch {
            throw new AgentError('internal', `PUT ${key}: reading the chunk failed`);
          }
          if (carries(body)) leaks.push(key);
          await moment();
          // Now and then a PUT fails after its bytes went: the next attempt resumes, opening the file anew.
          if (rand() < 0.1 && body.length === PART) {
            throw new AgentError('network', 'connection reset');
          }
          if (body.length !== chunk.length) throw new AgentError('internal', `PUT ${key}: the body ended short`);
          stored.set(key, body);
          return { status: 200 };
        },
      },
      outbox: { progress: async (_id, d) => void (progress = d as UploadProgress | null), flush: async () => moment() },
      urls: { save: async (id, u) => void urls.set(id, u), load: async (id) => urls.get(id), remove: async (id) => void urls.delete(id) },
      clock: new FakeClock(),
      serverNow: () => Date.UTC(2026, 0, 1),
      channelId: async () => undefined,
      index: { has: () => false, add: async () => undefined },
      deleteAfterUpload: false,
      files,
      roots: { roots: [media] },
    };
    const worker = new UploadWorker(deps);

    const outcomes: Record<string, number> = {};
    let completeAndRight = 0;
    for (let race = 0; race < 250; race++) {
      if (swapped) swap();
      hostility = [0, 0.01, 0.03, 0.1][Math.floor(rand() * 4)]!;
      // Touched before each new attempt, as the hostile run did: a new version, queued as the local API queues it.
      const t = 1_700_000_000 + race;
      utimesSync(clip, t, t);
      const v = await resolveUploadPath(clip, { roots: [media] });
      if (!v.ok) throw new Error(v.reason);
      progress = undefined;
      let out: Outcome | undefined;
      for (let attempt = 0; attempt < 20 && (out === undefined || out.result === 'retry'); attempt++) {
        await moment();
        const item: OutboxItem = { id: `b:${race}`, kind: 'upload', priority: 0, payload: v.file, createdAt: '', bytes: 0, state: 'pending', progress: progress ?? undefined };
        out = await worker.run(item, new AbortController().signal);
      }
      const kind = out!.result === 'dead' ? `dead: ${/changed while it uploaded|changed after it was queued|is not uploaded|cannot read|gone/.exec(out!.reason)?.[0] ?? out!.reason}` : out!.result;
      outcomes[kind] = (outcomes[kind] ?? 0) + 1;
      const prog = progress as UploadProgress | null | undefined;
      if (out!.result === 'done' && prog) {
        const parts = Array.from({ length: prog.parts }, (_, i) => stored.get(`${prog.assetId}/${i}`));
        if (parts.every((p) => p !== undefined) && Buffer.concat(parts as Buffer[]).equals(data)) completeAndRight++;
      }
    }
    expect({ leaks, outcomes }).toEqual({ leaks: [], outcomes });
    // Not vacuous: uploads went whole, and swaps struck both before and during them.
    expect(completeAndRight).toBe(outcomes.done);
    expect(outcomes.done).toBeGreaterThan(10);
    expect(outcomes['dead: changed while it uploaded']).toBeGreaterThan(10);
    expect((outcomes['dead: is not uploaded'] ?? 0) + (outcomes['dead: cannot read'] ?? 0)).toBeGreaterThan(5);
  });
});

describe('a hard link to credentials.json in the media dir', () => {
  function linked() {
    const p = place();
    const link = path.join(p.media, 'clip.mp4');
    linkSync(p.secret, link);
    return { ...p, link };
  }

  it('is refused when queued by hand (403, the reason), and a clip with one name is still taken', async () => {
    const { media, link } = linked();
    expect(await resolveUploadPath(link, { roots: [media] })).toMatchObject({ ok: false, status: 403, reason: expect.stringContaining('2 names (hard links)') });
    writeFileSync(path.join(media, 'fine.mp4'), 'fine');
    expect(await resolveUploadPath('fine.mp4', { roots: [media] })).toMatchObject({ ok: true });
  });

  it('is refused by the upload worker before an asset or a byte (queued before the link was made, as the watcher or an older agent did)', async () => {
    const { media, link } = linked();
    const st = statSync(link);
    const payload: UploadPayload = { path: link, name: 'clip.mp4', filetype: 'video/mp4', size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, dev: st.dev };
    const calls: string[] = [];
    const worker = new UploadWorker({
      assets: { create: async () => (calls.push('create'), { value: { id: 'a', uploadUrls: ['http://127.0.0.1/_storage/a/0'] }, meta: {} }) as never },
      storage: { put: async () => (calls.push('put'), { status: 200 }) },
      outbox: { progress: async () => undefined, flush: async () => undefined },
      urls: { save: async () => undefined, load: async () => undefined, remove: async () => undefined },
      clock: new FakeClock(),
      serverNow: () => Date.UTC(2026, 0, 1),
      channelId: async () => undefined,
      index: { has: () => false, add: async () => undefined },
      deleteAfterUpload: false,
      roots: { roots: [media] },
    });
    const out = await worker.run({ id: 'b:1', kind: 'upload', priority: 0, payload, createdAt: '', bytes: 0, state: 'pending' }, new AbortController().signal);
    expect(out).toMatchObject({ result: 'dead', reason: expect.stringMatching(/clip\.mp4' is not uploaded: a file with 2 names \(hard links\)/) });
    expect(calls).toEqual([]);
  });

  it('is refused by the real-time worker (a link named as a recording, x.mp4.part) before an asset or a byte', async () => {
    const { media, secret } = place();
    const part = path.join(media, 'rec.mp4.part');
    linkSync(secret, part);
    const st = statSync(part);
    const payload: RealtimePayload = { path: part, finalPath: path.join(media, 'rec.mp4'), name: 'rec.mp4', filetype: 'video/mp4', mtimeMs: st.mtimeMs, ino: st.ino, dev: st.dev };
    const calls: string[] = [];
    // Stopped at once should it get as far as an asset: the run would otherwise wait for the recording to end.
    const ac = new AbortController();
    const worker = new RealtimeWorker(
      realtimeDeps({
        assets: {
          createRealtime: async () => (calls.push('create'), ac.abort(), { value: { id: 'a' }, meta: {} }) as never,
          realtimeParts: async () => (calls.push('parts'), { value: ['http://127.0.0.1/_storage/a/1'], meta: {} }) as never,
        },
        storage: { put: async () => (calls.push('put'), { status: 200 }) },
        roots: { roots: [media] },
      }),
    );
    const out = await worker.run({ id: 'b:1', kind: REALTIME_KIND, priority: 0, payload, createdAt: '', bytes: 0, state: 'pending' }, ac.signal);
    expect(out).toMatchObject({ result: 'dead', reason: expect.stringMatching(/rec\.mp4\.part' is not uploaded: a file with 2 names \(hard links\)/) });
    expect(calls).toEqual([]);
  });

  it('is listed as skipped by the media watcher, with its reason, and never reported ready', async () => {
    const { media, link } = linked();
    const clock = new FakeClock();
    const old = (clock.wallNow() - 3_600_000) / 1000;
    utimesSync(link, old, old);
    writeFileSync(path.join(media, 'fine.mp4'), 'fine');
    utimesSync(path.join(media, 'fine.mp4'), old, old);
    const ready: string[] = [];
    const w = new MediaWatcher({ dir: media, channelKeys: [], clock, settleMs: 10_000, watch: null, onReady: (f) => ready.push(f.name) });
    w.start();
    try {
      await clock.advance(20_000);
      expect(ready).toEqual(['fine.mp4']);
      expect(w.skipped()).toEqual({ entries: [{ name: 'clip.mp4', reason: expect.stringContaining('2 names (hard links)') }], more: 0 });
    } finally {
      w.stop();
    }
  });
});
