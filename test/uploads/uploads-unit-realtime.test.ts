// UploadsUnit with real-time uploads: a clip still being written
// (mediaFileGrowing) becomes one realtime-upload item per recording; the
// finished file it becomes (same inode, its finished name) is not queued as a
// whole while that item runs, nor after it was cancelled or refused by the
// paused service; after a hand-back (the item ended otherwise) it is. Cancel
// and priority take a realtime item like an upload; status counts it. A
// cancelled or refused recording stays unsent once the queue has reclaimed
// its record, and after a restart: the upload index remembers it.
import { describe, it, expect, afterEach } from '@jest/globals';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EventBus } from '../../agent/core/event-bus.js';
import { CANCELLED, type OutboxItem } from '../../agent/outbox/types.js';
import { UploadsUnit } from '../../agent/uploads/uploads-unit.js';
import { REALTIME_KIND, type RealtimePayload } from '../../agent/uploads/realtime-item.js';
import { PAUSED_REFUSED, UPLOAD_KIND, uploadView, type UploadPayload } from '../../agent/uploads/upload-item.js';
import { Outbox } from '../../agent/outbox/outbox.js';
import { SystemClock } from '../../agent/lib/clock.js';
import { UploadedIndex } from '../../agent/uploads/uploaded-index.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';
import { handled, started } from './unit-work.js';

const dirs: string[] = [];
/** Units and queues a test left running when it failed. */
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function rig() {
  const queueDir = mkdtempSync(path.join(tmpdir(), 'c2c-uploads-rt-'));
  dirs.push(queueDir);
  const items: OutboxItem[] = [];
  const cancelled: string[] = [];
  const bus = new EventBus();
  const clock = new FakeClock();
  const unit = new UploadsUnit({
    index: { load: async () => undefined, has: () => false, add: async () => undefined, hasRecording: () => false, addRecording: async () => undefined, recordingFinished: async () => undefined },
    outbox: {
      items: () => items,
      cancel: async (id: string) => {
        const i = items.find((x) => x.id === id);
        if (i?.state !== 'pending') return false;
        i.state = 'dead';
        i.reason = `${CANCELLED}: through the local API`;
        cancelled.push(id);
        return true;
      },
      setUrgent: async (id: string, urgent: boolean) => {
        const i = items.find((x) => x.id === id);
        if (i) i.urgent = urgent;
        return i !== undefined;
      },
      ready: async () => true,
      put: async (kind: string, payload: unknown) => {
        const item = { id: `b:${items.length + 1}`, kind, payload, priority: 0, createdAt: '', bytes: 0, state: 'pending' } as OutboxItem;
        items.push(item);
        return item;
      },
      pending: (kind?: string) => items.filter((i) => i.state === 'pending' && (kind === undefined || i.kind === kind)),
    },
    queueDir,
    settleMs: 10_000,
    clock,
    bus,
    recordings: () => [{ name: 'take.mov', bytesOnDisk: 100, bytesSent: 0, idleSeconds: 0, finishedInSeconds: 1800 }],
  });
  return { items, cancelled, bus, unit, clock };
}

const growing: RealtimePayload & { size: number } = { path: '/media/take.mov.part', finalPath: '/media/take.mov', name: 'take.mov', filetype: 'video/quicktime', size: 100, mtimeMs: 1, ino: 42, dev: 1 };
const finished: UploadPayload = { path: '/media/take.mov', name: 'take.mov', filetype: 'video/quicktime', size: 5000, mtimeMs: 9, ino: 42, dev: 1 };
describe('UploadsUnit: real-time uploads', () => {
  it('one item per recording; the finished file is not queued again while it runs; listed as a recording; counted in status', async () => {
    const { items, bus, unit, clock } = rig();
    unit.start();
    await started(unit, clock);
    bus.emit('mediaFileGrowing', { file: growing });
    bus.emit('mediaFileGrowing', { file: { ...growing, size: 200 } });
    await until('the recording queued', () => items.length > 0);
    await handled(unit);
    expect(items.map((i) => i.kind)).toEqual([REALTIME_KIND]);
    bus.emit('mediaFileReady', { file: finished });
    await handled(unit);
    expect(items.map((i) => i.kind)).toEqual([REALTIME_KIND]);
    expect(uploadView(items[0]!, true)).toMatchObject({ name: 'take.mov', state: 'uploading', realtime: 'recording' });
    expect(unit.report().uploads).toMatchObject({ files: 1, recording: [{ name: 'take.mov' }] });
    await unit.stop();
  });

  it('cancel and priority take a realtime item; a cancelled or paused-refused recording is not queued again, a handed-back one is', async () => {
    const { items, cancelled, bus, unit, clock } = rig();
    unit.start();
    await started(unit, clock);
    bus.emit('mediaFileGrowing', { file: growing });
    await until('the recording queued', () => items.length > 0);
    const id = items[0]!.id;
    expect(await unit.setPriority(id, true)).toBe('ok');
    expect(items[0]!.urgent).toBe(true);
    expect(await unit.cancel(id)).toBe('cancelled');
    expect(cancelled).toEqual([id]);
    bus.emit('mediaFileGrowing', { file: growing });
    bus.emit('mediaFileReady', { file: finished });
    await handled(unit);
    expect(items).toHaveLength(1);

    // Refused by the paused service: the same.
    items[0]!.reason = `${PAUSED_REFUSED}: 409`;
    bus.emit('mediaFileReady', { file: finished });
    await handled(unit);
    expect(items).toHaveLength(1);

    // Ended otherwise (handed back to go whole): the finished file is queued as an upload.
    items[0]!.reason = 'the recording shrank below parts already sent: not uploaded in real time; it goes as a whole file once finished';
    bus.emit('mediaFileReady', { file: finished });
    await until('the finished file queued', () => items.length > 1);
    expect(items.map((i) => i.kind)).toEqual([REALTIME_KIND, UPLOAD_KIND]);
    await unit.stop();
  });

  it('a recording asked for by hand (its finished name or its .part) is the recording: its id, duplicate, never a second asset', async () => {
    // Before: POST /v1/uploads of take.mov just after the rename, while the real-time item finished it, queued a whole upload beside it.
    const { items, bus, unit, clock } = rig();
    unit.start();
    await started(unit, clock);
    bus.emit('mediaFileGrowing', { file: growing });
    await until('the recording queued', () => items.length > 0);
    const id = items[0]!.id;
    const part: UploadPayload = { path: growing.path, name: 'take.mov.part', filetype: 'application/octet-stream', size: 300, mtimeMs: 5, ino: 42, dev: 1 };
    expect(await unit.queueByHand([finished, part], true)).toEqual([
      { path: finished.path, id, duplicate: true },
      { path: part.path, id, duplicate: true },
    ]);
    expect(items.map((i) => i.kind)).toEqual([REALTIME_KIND]);
    // Asked for high: the recording is raised, as a queued duplicate is.
    expect(items[0]!.urgent).toBe(true);
    // Cancelled: still the recording's id, nothing queued.
    expect(await unit.cancel(id)).toBe('cancelled');
    expect(await unit.queueByHand([finished], false)).toEqual([{ path: finished.path, id, duplicate: true }]);
    expect(items).toHaveLength(1);
    // Ended otherwise (handed back to go whole): asking for the file queues it.
    items[0]!.reason = 'the recording shrank below parts already sent: not uploaded in real time; it goes as a whole file once finished';
    const [again] = await unit.queueByHand([finished], false);
    expect(again).toMatchObject({ path: finished.path, duplicate: false });
    expect(items.map((i) => i.kind)).toEqual([REALTIME_KIND, UPLOAD_KIND]);
    await unit.stop();
  });

  describe('a recording ended for good, once the queue no longer holds its record', () => {
    // Before: nothing durable said so. Only the cancelled (or refused) item kept the finished file out, and once
    // the queue reclaimed its segment (many small clips later) the rename queued the whole file.
    async function stack(state: string) {
      const ob = new Outbox({ dir: path.join(state, 'queue'), clock: new SystemClock(), bootId: 'b00t', segmentBytes: 2_000, flushMs: 1 });
      await ob.open();
      const index = new UploadedIndex(state);
      const bus = new EventBus();
      // The outbox as the daemon's outbox unit gives it (open already).
      const outbox = { ready: async () => true, put: ob.put.bind(ob), pending: ob.pending.bind(ob), items: ob.items.bind(ob), cancel: ob.cancel.bind(ob), setUrgent: ob.setUrgent.bind(ob) };
      const clock = new FakeClock();
      const unit = new UploadsUnit({ index, outbox, queueDir: path.join(state, 'queue'), settleMs: 10_000, clock, bus });
      unit.start();
      closers.push(async () => {
        await unit.stop();
        await ob.close();
      });
      await started(unit, clock);
      return { ob, index, bus, unit };
    }
    /** Small clips sent and done until the queue has deleted the segments that held `id`'s records. */
    async function reclaimed(ob: Outbox, id: string): Promise<void> {
      for (let n = 0; n < 500 && ob.items().some((i) => i.id === id); n++) {
        const clip = await ob.put(UPLOAD_KIND, { path: `/media/clip${n}.jpg`, name: `clip${n}.jpg`, filetype: 'image/jpeg', size: 10, mtimeMs: 2, ino: 1000 + n, dev: 1 });
        await ob.done(clip.id);
      }
      expect(ob.items().some((i) => i.id === id)).toBe(false);
    }

    it.each(['cancelled', 'paused-refused'] as const)('%s: neither the .part growing again nor the finished file is queued, nor after a restart', async (how) => {
      const state = mkdtempSync(path.join(tmpdir(), 'c2c-uploads-rt-state-'));
      dirs.push(state);
      let s = await stack(state);
      s.bus.emit('mediaFileGrowing', { file: growing });
      await until('the recording queued', () => s.ob.pending(REALTIME_KIND).length === 1);
      const id = s.ob.pending(REALTIME_KIND)[0]!.id;
      if (how === 'cancelled') expect(await s.unit.cancel(id)).toBe('cancelled');
      else {
        // What the real-time worker does on a 409 Channel Paused: the recording into the index, the item dead.
        await s.index.addRecording(growing);
        await s.ob.dead(id, `${PAUSED_REFUSED}: the service answered 409 Channel Paused`);
      }
      await reclaimed(s.ob, id);

      // Seen again while it records (as after a restart): not started again.
      s.bus.emit('mediaFileGrowing', { file: { ...growing, size: 300 } });
      await handled(s.unit);
      expect(s.ob.pending()).toEqual([]);
      // Renamed to its finished name (same inode, new size and modification time): not queued.
      s.bus.emit('mediaFileReady', { file: finished });
      await handled(s.unit);
      expect(s.ob.pending()).toEqual([]);
      // Asked for by hand, it is a file the index knows: no id, nothing queued.
      expect(await s.unit.queueByHand([finished], false)).toEqual([{ path: finished.path, id: null, duplicate: true }]);
      expect(s.ob.pending()).toEqual([]);

      // A restart: the queue has forgotten it, the index has not.
      await s.unit.stop();
      await s.ob.close();
      s = await stack(state);
      s.bus.emit('mediaFileReady', { file: finished });
      await handled(s.unit);
      expect(s.ob.pending()).toEqual([]);
      await s.unit.stop();
      await s.ob.close();
    });

    /** A 200 kB recording, take.mov.part in a media dir of its own, queued as a real-time item and cancelled. */
    async function cancelledTake() {
      const state = mkdtempSync(path.join(tmpdir(), 'c2c-uploads-rt-state-'));
      const media = mkdtempSync(path.join(tmpdir(), 'c2c-uploads-rt-media-'));
      dirs.push(state, media);
      const part = path.join(media, 'take.mov.part');
      writeFileSync(part, Buffer.alloc(200_000));
      const st = statSync(part);
      const rec = { path: part, finalPath: path.join(media, 'take.mov'), name: 'take.mov', filetype: 'video/quicktime', size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, dev: st.dev };
      const s = await stack(state);
      s.bus.emit('mediaFileGrowing', { file: rec });
      await until('the recording queued', () => s.ob.pending(REALTIME_KIND).length === 1);
      const id = s.ob.pending(REALTIME_KIND)[0]!.id;
      expect(await s.unit.cancel(id)).toBe('cancelled');
      return { part, st, rec, s, id };
    }

    it('a later take given the same name and the freed inode is not the cancelled recording: it is uploaded', async () => {
      // ext4 hands a freed inode to the next new file: a take cancelled and deleted, then the camera's next take
      // under the same name, looks like the same inode and finished path. It is smaller than the recording was.
      const { part, st, rec, s, id } = await cancelledTake();
      expect(s.index.hasRecording({ ino: st.ino, finalPath: rec.finalPath })).toBe(true);
      await reclaimed(s.ob, id); // the index alone remembers it now

      rmSync(part);
      writeFileSync(part, Buffer.alloc(1_000));
      // Seen growing under the old inode number (as the reuse makes it): what is on disk says it is another file.
      s.bus.emit('mediaFileGrowing', { file: { ...rec, size: 1_000 } });
      await until('the new take queued', () => s.ob.pending(REALTIME_KIND).length === 1);
      // The cancelled one itself, grown on (as it was when cancelled, or more), is still kept out.
      writeFileSync(part, Buffer.alloc(300_000));
      expect(s.index.hasRecording({ ino: st.ino, finalPath: rec.finalPath, size: 300_000 })).toBe(true);
    });

    it('the same, while the queue still holds the cancelled item: the later take is born at another time, so it is uploaded', async () => {
      const { part, st, rec, s, id } = await cancelledTake();
      // This case needs a file system that keeps birth times (ext4, as a camera's and this machine's): say so, never pass without it.
      expect(st.birthtimeMs).toBeGreaterThan(0);

      // Born later than the cancelled take. The file system's clock is coarse (a few ms): written again
      // until it tells the two apart. Larger than the cancelled one was: only the birth time does.
      const later = await until('a take born after the cancelled one', () => {
        rmSync(part, { force: true });
        writeFileSync(part, Buffer.alloc(250_000));
        const l = statSync(part);
        return l.birthtimeMs > st.birthtimeMs && l;
      }, { everyMs: 1 });
      s.bus.emit('mediaFileGrowing', { file: { ...rec, ino: later.ino, dev: later.dev, size: later.size, mtimeMs: later.mtimeMs } });
      if (later.ino === st.ino) {
        await until('the new take queued', () => s.ob.pending(REALTIME_KIND).length === 1);
        expect(s.ob.pending(REALTIME_KIND)[0]!.id).not.toBe(id);
      } else {
        // The inode was not reused this time: a new inode is a new recording anyway.
        await until('the new take queued', () => s.ob.pending(REALTIME_KIND).length === 1);
      }
      // Its finished file, renamed, belongs to the new take's upload, not to the cancelled one.
      expect(s.ob.items().find((i) => i.id === id)?.state).toBe('dead');
    });
  });
});
