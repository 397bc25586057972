// What the local API asks of UploadsUnit: autoUpload off holds the media
// watcher's finds (and on queues them), files queued by hand are queued
// once (duplicates give back the id), a cancel records the file so the
// watcher never queues it again, and a cancelled recording's finished file is
// not sent.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EventBus } from '../../agent/core/event-bus.js';
import { CANCELLED, type OutboxItem, type PutOptions } from '../../agent/outbox/types.js';
import { REALTIME_KIND, type RealtimePayload } from '../../agent/uploads/realtime-item.js';
import { UPLOAD_KIND, type FileIdentity, type UploadPayload } from '../../agent/uploads/upload-item.js';
import { UploadsUnit } from '../../agent/uploads/uploads-unit.js';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const file = (name: string, over: Partial<UploadPayload> = {}): UploadPayload => ({ path: `/media/${name}`, name, size: 100, mtimeMs: 1_000, ino: name.length * 7 + name.charCodeAt(0), dev: 1, filetype: 'video/mp4', ...over });
const key = (f: FileIdentity): string => `${f.ino}:${f.size}:${f.mtimeMs}`;

function rig(auto = { on: true }) {
  const queueDir = mkdtempSync(path.join(tmpdir(), 'c2c-uploads-api-'));
  dirs.push(queueDir);
  const items: OutboxItem[] = [];
  const indexed = new Set<string>();
  let seq = 0;
  const bus = new EventBus();
  const unit = new UploadsUnit({
    autoUpload: () => auto.on,
    index: { load: async () => undefined, has: (f) => indexed.has(key(f)), add: async (f) => void indexed.add(key(f)), hasRecording: () => false, addRecording: async () => undefined, recordingFinished: async () => undefined },
    outbox: {
      ready: async () => true,
      put: async (kind: string, payload: unknown, opts?: PutOptions) => {
        const item: OutboxItem = { id: `b:${++seq}`, kind, payload, priority: 0, createdAt: '', bytes: 1, state: 'pending', ...(opts?.urgent === true && { urgent: true }) };
        items.push(item);
        return { ...item };
      },
      pending: (kind?: string) => items.filter((i) => i.state === 'pending' && (kind === undefined || i.kind === kind)),
      items: () => items.map((i) => ({ ...i })),
      cancel: async (id: string, why: string) => {
        const i = items.find((x) => x.id === id && x.state === 'pending');
        if (!i) return false;
        i.state = 'dead';
        i.reason = `${CANCELLED}: ${why}`;
        return true;
      },
      setUrgent: async (id: string, urgent: boolean) => {
        const i = items.find((x) => x.id === id && x.state === 'pending');
        if (!i) return false;
        i.urgent = urgent;
        return true;
      },
    },
    queueDir,
    settleMs: 1_000,
    clock: new FakeClock(),
    bus,
  });
  unit.start();
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 5; i++) await flushMicrotasks();
  };
  return { unit, items, indexed, bus, auto, settle };
}

describe('UploadsUnit and the local API', () => {
  it('autoUpload off: the watcher finds are held, not queued; on again: queued, oldest first; files queued by hand go meanwhile', async () => {
    const r = rig({ on: false });
    await r.settle();
    r.unit.fileReady(file('new.mp4', { mtimeMs: 2_000 }));
    r.unit.fileReady(file('old.mp4', { mtimeMs: 1_000 }));
    await r.settle();
    expect(r.items).toEqual([]);
    expect(r.unit.heldCount).toBe(2);
    const byHand = await r.unit.queueByHand([file('hand.mp4')], false);
    expect(byHand).toEqual([{ path: '/media/hand.mp4', id: 'b:1', duplicate: false }]);
    r.auto.on = true;
    r.bus.emit('prefsChanged', { prefs: { autoUpload: true } });
    await r.settle();
    expect(r.items.map((i) => (i.payload as UploadPayload).name)).toEqual(['hand.mp4', 'old.mp4', 'new.mp4']);
    expect(r.unit.heldCount).toBe(0);
    await r.unit.stop();
  });

  it('one file, one upload: in a batch, against what is queued, sent or cancelled; urgent raises a queued duplicate; a failed one may go again', async () => {
    const r = rig();
    await r.settle();
    const a = file('a.mp4');
    const first = await r.unit.queueByHand([a, file('b.mp4'), { ...a }], false);
    expect(first).toEqual([
      { path: a.path, id: 'b:1', duplicate: false },
      { path: '/media/b.mp4', id: 'b:2', duplicate: false },
      { path: a.path, id: 'b:1', duplicate: true },
    ]);
    expect(await r.unit.queueByHand([a], true)).toEqual([{ path: a.path, id: 'b:1', duplicate: true }]);
    expect(r.items[0]!.urgent).toBe(true);
    // The watcher offering the same file queues nothing more.
    r.unit.fileReady(a);
    await r.settle();
    expect(r.items).toHaveLength(2);
    // A failed upload may be asked for again; a changed file (new mtime) is a new one.
    r.items[1]!.state = 'dead';
    r.items[1]!.reason = 'gave up after 50 attempts';
    expect((await r.unit.queueByHand([file('b.mp4')], false))[0]).toEqual({ path: '/media/b.mp4', id: 'b:3', duplicate: false });
    expect((await r.unit.queueByHand([file('a.mp4', { mtimeMs: 5_000 })], false))[0]!.duplicate).toBe(false);
    // Sent long ago (the index knows it, the queue no longer does): a duplicate without an id.
    r.indexed.add(key(file('c.mp4')));
    expect(await r.unit.queueByHand([file('c.mp4')], false)).toEqual([{ path: '/media/c.mp4', id: null, duplicate: true }]);
    await r.unit.stop();
  });

  it('a cancel ends the upload and records the file: the watcher never queues it again, asking again gives the cancelled id', async () => {
    const r = rig();
    await r.settle();
    const a = file('a.mp4');
    const id = (await r.unit.queueByHand([a], false))[0]!.id!;
    expect(await r.unit.cancel(id)).toBe('cancelled');
    expect(r.items[0]).toMatchObject({ state: 'dead', reason: expect.stringMatching(/^cancelled/) });
    expect(r.indexed.has(key(a))).toBe(true);
    r.unit.fileReady(a);
    await r.settle();
    expect(r.items).toHaveLength(1);
    expect(await r.unit.queueByHand([a], false)).toEqual([{ path: a.path, id, duplicate: true }]);
    expect(await r.unit.cancel(id)).toBe('ended');
    expect(await r.unit.cancel('nope')).toBe('not-found');
    r.items.push({ id: 'b:9', kind: UPLOAD_KIND, payload: file('d.mp4'), priority: 0, createdAt: '', bytes: 1, state: 'done' });
    expect(await r.unit.cancel('b:9')).toBe('done');
    expect(await r.unit.setPriority('b:9', true)).toBe('ended');
    await r.unit.stop();
  });

  it('cancel all takes every upload not done; priority changes only a waiting one', async () => {
    const r = rig();
    await r.settle();
    await r.unit.queueByHand([file('a.mp4'), file('b.mp4'), file('c.mp4')], false);
    r.items[2]!.state = 'done';
    expect(await r.unit.setPriority('b:2', true)).toBe('ok');
    expect(r.items[1]!.urgent).toBe(true);
    expect(await r.unit.setPriority('zz', true)).toBe('not-found');
    expect(await r.unit.cancelAll()).toEqual(['b:1', 'b:2']);
    expect(r.items.map((i) => i.state)).toEqual(['dead', 'dead', 'done']);
    await r.unit.stop();
  });

  it('a recording cancelled while it uploaded in real time: its finished file is not queued, and is recorded in the index', async () => {
    const r = rig();
    await r.settle();
    const rec: RealtimePayload = { path: '/media/live.mp4.part', finalPath: '/media/live.mp4', name: 'live.mp4', filetype: 'video/mp4', ino: 77, dev: 1, mtimeMs: 1_000 };
    r.items.push({ id: 'b:50', kind: REALTIME_KIND, payload: rec, priority: 0, createdAt: '', bytes: 1, state: 'pending' });
    expect(await r.unit.cancel('b:50')).toBe('cancelled');
    const finished = file('live.mp4', { ino: 77, dev: 1, size: 5_000, mtimeMs: 9_000 });
    r.unit.fileReady(finished);
    // The unit looks at the file (real I/O) before it decides: a few turns of the event loop, more on a loaded machine.
    for (let i = 0; i < 600 && !r.indexed.has(key(finished)); i++) await new Promise((res) => setTimeout(res, 5));
    await r.settle();
    expect(r.items).toHaveLength(1);
    expect(r.indexed.has(key(finished))).toBe(true);
    await r.unit.stop();
  });
});
