// The end of an upload, one rule for both workers (uploads/finish-upload.ts,
// issue 30): the index records what went, then with deleteAfterUpload the
// file is deleted only while its path still leads to that version. The
// real-time worker had its own copy, which followed a link put at the
// finished name and deleted the link (the recording stayed where the link
// led, the camera's link was gone); the upload worker's refused a link there.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { lstatSync, mkdirSync, mkdtempSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { finishUpload } from '../../agent/uploads/finish-upload.js';
import { RealtimeWorker } from '../../agent/uploads/realtime-worker.js';
import { REALTIME_KIND, type RealtimePayload, type RealtimeProgress } from '../../agent/uploads/realtime-item.js';
import type { FileIdentity } from '../../agent/uploads/upload-item.js';
import { versionOf } from '../../agent/uploads/version-check.js';
import type { OutboxItem } from '../../agent/outbox/types.js';
import { realtimeDeps } from './realtime-stubs.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'c2c-finish-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const clip = (name = 'clip.mov'): string => {
  const file = path.join(dir, name);
  writeFileSync(file, Buffer.alloc(4096, 7));
  return file;
};

function finishing(file: string) {
  const index: FileIdentity[] = [];
  const st = statSync(file);
  const went = versionOf(st);
  const run = () => finishUpload({ index: { add: async (f) => void index.push(f) }, deleteAfterUpload: true }, { record: went, path: file, went, name: path.basename(file), bytes: st.size, assetId: 'a1', what: 'upload' });
  return { index, run };
}

describe('finishUpload', () => {
  it('records, then deletes the version that went', async () => {
    const file = clip();
    const f = finishing(file);
    await expect(f.run()).resolves.toEqual({ result: 'done' });
    expect(f.index).toHaveLength(1);
    expect(existsSync(file)).toBe(false);
  });

  it('keeps a file written again, one renamed over it, and a link put in its place', async () => {
    const written = clip('a.mov');
    const w = finishing(written);
    utimesSync(written, new Date(), new Date(Date.now() + 5_000));
    await w.run();
    expect(existsSync(written)).toBe(true);

    const renamed = clip('b.mov');
    const r = finishing(renamed);
    writeFileSync(path.join(dir, 'next.mov'), Buffer.alloc(4096, 8));
    renameSync(path.join(dir, 'next.mov'), renamed);
    await r.run();
    expect(existsSync(renamed)).toBe(true);

    const linked = clip('c.mov');
    const l = finishing(linked);
    mkdirSync(path.join(dir, 'archive'));
    renameSync(linked, path.join(dir, 'archive', 'c.mov'));
    symlinkSync(path.join(dir, 'archive', 'c.mov'), linked);
    await l.run();
    expect(lstatSync(linked).isSymbolicLink()).toBe(true);
    expect(w.index.length + r.index.length + l.index.length).toBe(3);
  });
});

/** A recording whose final part went before a restart (only the index and the clean-up are left), and a worker to run it. */
function finishedRecording(name: string, index: FileIdentity[] = []) {
  const finalPath = clip(name);
  const st = statSync(finalPath);
  const payload: RealtimePayload = { path: `${finalPath}.part`, finalPath, name, filetype: 'video/quicktime', ino: st.ino, dev: st.dev, mtimeMs: st.mtimeMs };
  const progress: RealtimeProgress = { assetId: `rt-${name}`, createdAt: Date.UTC(2026, 0, 1), partBytes: 8 << 20, hash: 'sha256', sent: ['x'], seen: st.size, final: { size: st.size, mtimeMs: st.mtimeMs } };
  const item: OutboxItem = { id: `boot:${name}`, kind: REALTIME_KIND, priority: 0, payload, createdAt: '', bytes: 0, state: 'pending', progress };
  const fail = (): never => {
    throw new Error('nothing is sent after the final part');
  };
  const worker = new RealtimeWorker(realtimeDeps({ assets: { createRealtime: fail, realtimeParts: fail }, storage: { put: fail }, index: { has: () => false, add: async (f) => void index.push(f), addRecording: async () => undefined }, deleteAfterUpload: true }));
  return { finalPath, st, run: () => worker.run(item, new AbortController().signal) };
}

describe('the real-time worker finishes by the same rule', () => {
  it('a link put at the finished name after the final part went is kept, not deleted', async () => {
    const index: FileIdentity[] = [];
    const { finalPath, st, run } = finishedRecording('take.mov', index);
    // The camera's software moved the clip to its archive and left a link at its name.
    mkdirSync(path.join(dir, 'archive'));
    renameSync(finalPath, path.join(dir, 'archive', 'take.mov'));
    symlinkSync(path.join(dir, 'archive', 'take.mov'), finalPath);
    await expect(run()).resolves.toEqual({ result: 'done' });
    expect(index).toEqual([{ dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs }]);
    expect(lstatSync(finalPath).isSymbolicLink()).toBe(true);
    expect(existsSync(path.join(dir, 'archive', 'take.mov'))).toBe(true);
  });

  it('an unchanged finished file is deleted', async () => {
    const { finalPath, run } = finishedRecording('take2.mov');
    await expect(run()).resolves.toEqual({ result: 'done' });
    expect(existsSync(finalPath)).toBe(false);
  });
});
