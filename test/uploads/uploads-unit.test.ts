// UploadsUnit takes `c2c-agent upload` requests from the queue's incoming/
// folder as they arrive (a watch), not at its slow fallback look.
import { EventBus } from '../../agent/core/event-bus.js';
import { describe, it, expect, afterEach } from '@jest/globals';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { UploadsUnit } from '../../agent/uploads/uploads-unit.js';
import { writeUploadRequest } from '../../agent/uploads/upload-request.js';
import type { UploadPayload } from '../../agent/uploads/upload-item.js';
import type { OutboxItem } from '../../agent/outbox/types.js';
import { WATCH_COALESCE_MS } from '../../agent/lib/dir-watcher.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';
import { handled, started } from './unit-work.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function rig(index: Partial<ConstructorParameters<typeof UploadsUnit>[0]['index']> = {}) {
  const queueDir = mkdtempSync(path.join(tmpdir(), 'c2c-uploads-unit-'));
  dirs.push(queueDir);
  const clock = new FakeClock();
  const puts: unknown[] = [];
  const unit = new UploadsUnit({
    index: { load: async () => undefined, has: () => false, add: async () => undefined, hasRecording: () => false, addRecording: async () => undefined, recordingFinished: async () => undefined, ...index },
    outbox: {
      items: () => [],
      cancel: async () => false,
      setUrgent: async () => false,
      ready: async () => true,
      put: async (kind: string, payload: unknown) => {
        puts.push(payload);
        return { kind, payload } as unknown as OutboxItem;
      },
      pending: () => [],
    },
    queueDir,
    settleMs: 10_000,
    clock,
    bus: new EventBus(),
  });
  return { queueDir, clock, puts, unit };
}

const file = (name: string): UploadPayload => ({ path: `/media/${name}`, name, filetype: 'video/mp4', size: 10, mtimeMs: 1, ino: 7, dev: 1 }) as UploadPayload;

describe('UploadsUnit: requests from `c2c-agent upload`', () => {
  it('creates incoming/ and queues a request written while it runs within a second of agent time, long before the fallback look', async () => {
    const { queueDir, clock, puts, unit } = rig();
    unit.start();
    await started(unit, clock);
    expect(existsSync(path.join(queueDir, 'incoming'))).toBe(true);
    const seenAtStart = puts.length;
    const before = clock.now();
    const timers = clock.pendingCount;
    await writeUploadRequest(queueDir, [file('a.mp4'), file('b.mp4')]);
    // The watch's event, in real time however late a busy machine delivers it; agent time stands still meanwhile.
    await until('the watch event', () => clock.pendingCount > timers);
    await clock.advance(WATCH_COALESCE_MS);
    await handled(unit);
    expect(puts).toHaveLength(seenAtStart + 2);
    expect(clock.now() - before).toBeLessThan(1_000);
    expect(puts.map((p) => (p as UploadPayload).name)).toEqual(['a.mp4', 'b.mp4']);
    await unit.stop();
  });

  it('after stop() a new request stays in incoming/ for the next run', async () => {
    const { queueDir, clock, puts, unit } = rig();
    unit.start();
    await started(unit, clock);
    await unit.stop();
    const [req] = await writeUploadRequest(queueDir, [file('c.mp4')]);
    await clock.advance(120_000);
    expect(puts).toEqual([]);
    expect(existsSync(req!)).toBe(true);
  });
});

describe('UploadsUnit: the upload rate', () => {
  function rateRig(pending: () => OutboxItem[]) {
    const queueDir = mkdtempSync(path.join(tmpdir(), 'c2c-uploads-rate-'));
    dirs.push(queueDir);
    const clock = new FakeClock();
    const unit = new UploadsUnit({
      index: { load: async () => undefined, has: () => false, add: async () => undefined, hasRecording: () => false, addRecording: async () => undefined, recordingFinished: async () => undefined },
      outbox: { items: () => [], cancel: async () => false, setUrgent: async () => false, ready: async () => true, put: async () => ({}) as OutboxItem, pending: (kind?: string) => (kind === 'upload' ? pending() : []) },
      queueDir,
      settleMs: 10_000,
      clock,
      bus: new EventBus(),
    });
    return { clock, unit };
  }

  it('is the bytes of the last 30 s while files wait, and 0 once none does (never the last upload\'s rate frozen in the status document)', async () => {
    const waiting = [{ id: 'u1', kind: 'upload', state: 'pending', payload: { ...file('a.mp4'), size: 6_000_000 }, attempts: 0 }] as unknown as OutboxItem[];
    let pending = waiting;
    const { clock, unit } = rateRig(() => pending);
    unit.bytesSent(3_000_000);
    await clock.advance(1_000);
    expect(unit.report().uploads?.bytesPerSecond).toBe(100_000);
    expect(unit.statusText()).toMatch(/^uploading 1 file, .* left, 98 KiB\/s$/);
    // The last part went and the item is done: idle, whatever the window still holds.
    pending = [];
    expect(unit.report().uploads).toMatchObject({ files: 0, bytesPerSecond: 0 });
    expect(unit.bytesPerSecond()).toBe(0);
    expect(unit.statusText()).toBeUndefined();
  });
});

describe('UploadsUnit: an index it cannot read', () => {
  it('queues nothing, found or asked for, and no step fails: uploads are off until restart, and stop() is clean', async () => {
    const unread = (): never => {
      throw new Error('the upload index was used before load()');
    };
    const { queueDir, clock, puts, unit } = rig({ load: async () => Promise.reject(new Error('a FIFO, not a regular file')), has: unread, hasRecording: unread });
    const rejections: unknown[] = [];
    const onRejection = (r: unknown): void => void rejections.push(r);
    process.on('unhandledRejection', onRejection);
    try {
      unit.start();
      await unit.loaded();
      unit.fileReady(file('found.mp4'));
      unit.fileGrowing({ ...file('growing.mp4'), channelKey: 'main' } as never);
      await writeUploadRequest(queueDir, [file('asked.mp4')]);
      // Asked for through the local API: refused in a sentence (503), not a bug's 500.
      const refused = (await unit.queueByHand([file('by-hand.mp4')], false).catch((err: unknown) => err)) as { kind?: string; message?: string };
      expect({ kind: refused.kind, offUntilRestart: refused.message?.includes('uploads are off until the daemon restarts') }).toEqual({ kind: 'unavailable', offUntilRestart: true });
      await clock.advance(120_000);
      await handled(unit);
      await expect(unit.stop()).resolves.toBeUndefined();
      await new Promise((resolve) => setImmediate(resolve));
      expect(puts).toEqual([]);
      expect(rejections).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });
});
