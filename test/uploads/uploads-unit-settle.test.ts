// A file the worker found changed while it uploaded comes back to the unit
// as a settle request in incoming/ (issue 18, cause 1): it is queued again,
// with its new identity, only once it held still for the settle time; the
// request stays on flash until then (a restart keeps the intent), and one
// that is gone is forgotten. Requests are deduplicated against what is
// pending: `upload f` twice is one item (cause 3). The unit's report carries
// the watcher's skipped list (cause 8).
import { EventBus } from '../../agent/core/event-bus.js';
import { afterEach, describe, expect, it } from '@jest/globals';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { UploadsUnit } from '../../agent/uploads/uploads-unit.js';
import { writeUploadRequest, INCOMING_DIR } from '../../agent/uploads/upload-request.js';
import type { UploadPayload } from '../../agent/uploads/upload-item.js';
import type { OutboxItem } from '../../agent/outbox/types.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';
import { handled, started } from './unit-work.js';

const SETTLE = 10_000;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function rig(skipped?: { entries: Array<{ name: string; reason: string }>; more: number }, withRoots = false) {
  const dir = mkdtempSync(path.join(tmpdir(), 'c2c-settle-'));
  dirs.push(dir);
  const media = path.join(dir, 'media');
  mkdirSync(media);
  const queueDir = path.join(dir, 'queue');
  const clock = new FakeClock();
  const puts: UploadPayload[] = [];
  const unit = new UploadsUnit({
    index: { load: async () => undefined, has: () => false, add: async () => undefined, hasRecording: () => false, addRecording: async () => undefined, recordingFinished: async () => undefined },
    outbox: {
      items: () => [],
      cancel: async () => false,
      setUrgent: async () => false,
      ready: async () => true,
      put: async (kind: string, payload: unknown) => {
        puts.push(payload as UploadPayload);
        return { kind, payload } as unknown as OutboxItem;
      },
      pending: () => puts.map((payload, i) => ({ id: `b:${i}`, kind: 'upload', payload, state: 'pending' }) as unknown as OutboxItem),
    },
    ...(skipped && { watcher: { start: () => undefined, stop: () => undefined, skipped: () => skipped } }),
    queueDir,
    ...(withRoots && { roots: { roots: [media] } }),
    settleMs: SETTLE,
    clock,
    bus: new EventBus(),
  });
  const clip = path.join(withRoots ? media : dir, 'clip.mp4');
  writeFileSync(clip, 'first version');
  const st = statSync(clip);
  const payload: UploadPayload = { path: clip, name: 'clip.mp4', filetype: 'video/mp4', size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, dev: st.dev };
  const requests = (): string[] => (existsSync(path.join(queueDir, INCOMING_DIR)) ? readdirSync(path.join(queueDir, INCOMING_DIR)) : []);
  return { dir, queueDir, clock, puts, unit, clip, payload, requests };
}

describe('UploadsUnit: a changed file goes again once it holds still', () => {
  it('not while it keeps changing; then once, with its new identity; the request removed after', async () => {
    const { queueDir, clock, puts, unit, clip, payload, requests } = rig();
    await writeUploadRequest(queueDir, [payload], { settle: true });
    unit.start();
    try {
      await started(unit, clock);
      // Written to every half settle time: no two looks a settle time apart agree.
      for (let k = 0; k < 6; k++) {
        appendFileSync(clip, ' and more');
        await clock.advance(SETTLE / 2);
        await handled(unit);
      }
      expect(puts).toEqual([]);
      expect(requests()).toHaveLength(1);
      await until('queued', () => puts.length === 1, { clock, stepMs: SETTLE / 2 });
      const now = statSync(clip);
      expect(puts[0]).toEqual({ ...payload, size: now.size, mtimeMs: now.mtimeMs, ino: now.ino, dev: now.dev });
      await until('the request removed', () => requests().length === 0, { clock, stepMs: 0 });
      await clock.advance(10 * SETTLE);
      await handled(unit);
      expect(puts).toHaveLength(1);
    } finally {
      await unit.stop();
    }
  });

  it('a restart before it held still keeps the request: the next run queues it', async () => {
    const first = rig();
    await writeUploadRequest(first.queueDir, [first.payload], { settle: true });
    first.unit.start();
    await started(first.unit, first.clock);
    await first.unit.stop();
    expect(first.requests()).toHaveLength(1);
    expect(first.puts).toEqual([]);
  });

  it('a file gone before it held still is forgotten, and its request removed', async () => {
    const { queueDir, clock, puts, unit, clip, payload, requests } = rig();
    await writeUploadRequest(queueDir, [payload], { settle: true });
    unit.start();
    try {
      await started(unit, clock);
      rmSync(clip);
      await until('the request removed', () => requests().length === 0, { clock, stepMs: SETTLE / 2 });
      expect(puts).toEqual([]);
    } finally {
      await unit.stop();
    }
  });
});

describe('UploadsUnit: a changed file goes again only through the same door', () => {
  it('swapped for a link out of the media dir before it held still (credentials.json), it is not queued again; changed in place, it is', async () => {
    // Before: the settle look stat()ed through the link, so the secret held still and was queued and uploaded under the clip's name.
    const { dir, queueDir, clock, puts, unit, clip, payload, requests } = rig(undefined, true);
    const secret = path.join(dir, 'credentials.json');
    writeFileSync(secret, '{"access_token":"a","refresh_token":"r"}');
    await writeUploadRequest(queueDir, [payload], { settle: true });
    unit.start();
    try {
      await started(unit, clock);
      rmSync(clip);
      symlinkSync(secret, clip);
      await until('the request removed', () => requests().length === 0, { clock, stepMs: SETTLE / 2 });
      await clock.advance(10 * SETTLE);
      await handled(unit);
      expect(puts).toEqual([]);
      // The same door, a file changed in place inside it: queued with its new identity.
      rmSync(clip);
      writeFileSync(clip, 'second version, longer');
      await writeUploadRequest(queueDir, [payload], { settle: true });
      await until('queued', () => puts.length === 1, { clock, stepMs: SETTLE / 2 });
      const now = statSync(clip);
      expect(puts[0]).toEqual({ ...payload, size: now.size, mtimeMs: now.mtimeMs, ino: now.ino, dev: now.dev });
    } finally {
      await unit.stop();
    }
  });
});

describe('UploadsUnit: one item per file', () => {
  it('the same file in one request and in a second one is queued once', async () => {
    const { queueDir, clock, puts, unit, payload, requests } = rig();
    await writeUploadRequest(queueDir, [payload, payload]);
    await writeUploadRequest(queueDir, [payload]);
    // Taken by the look at start.
    unit.start();
    try {
      await until('both taken', () => requests().length === 0, { clock, stepMs: 0 });
      await handled(unit);
      expect(puts).toHaveLength(1);
    } finally {
      await unit.stop();
    }
  });
});

describe('UploadsUnit: report', () => {
  it("carries the watcher's skipped entries for the status document", () => {
    const skipped = { entries: [{ name: 'pipe.mp4', reason: 'a FIFO (named pipe), not a regular file' }], more: 3 };
    const { unit } = rig(skipped);
    expect(unit.report()).toMatchObject({ uploads: { files: 0, skipped } });
  });
});
