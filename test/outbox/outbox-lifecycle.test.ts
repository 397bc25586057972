// An item's life and its segment's: group commit (one fsync per window),
// supersede by group, ends, segment deletion once everything in it is
// finished, copy forward so one long-pending item cannot pin the disk, and
// ids that never repeat.
import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FakeClock } from '../support/fake-clock.js';
import { readBootId } from '../../agent/outbox/outbox.js';
import { Harness, payload } from './harness.js';

describe('outbox lifecycle', () => {
  it('100 puts in one window share one append and one fsync, plus one directory fsync for the new segment', async () => {
    const h = new Harness();
    const ob = await h.open();
    const puts = Array.from({ length: 100 }, (_, i) => ob.put('channel-connect', payload(i)));
    let resolved = 0;
    for (const p of puts) void p.then(() => resolved++);
    await h.clock.advance(499);
    expect([resolved, h.sim.calls.fsync, h.sim.calls.append]).toEqual([0, 0, 0]);
    await h.clock.advance(1);
    expect(resolved).toBe(100);
    expect({ append: h.sim.calls.append, fsync: h.sim.calls.fsync, fsyncDir: h.sim.calls.fsyncDir - 1 }).toEqual({ append: 1, fsync: 1, fsyncDir: 1 });

    // The next window appends to the same segment: no directory fsync.
    const more = Array.from({ length: 100 }, (_, i) => ob.put('channel-connect', payload(100 + i)));
    await h.window();
    await Promise.all(more);
    expect({ append: h.sim.calls.append, fsync: h.sim.calls.fsync, fsyncDir: h.sim.calls.fsyncDir - 1 }).toEqual({ append: 2, fsync: 2, fsyncDir: 1 });
    // flush() does not wait for the window.
    const last = ob.put('channel-connect', payload(999));
    await ob.flush();
    await last;
    expect(h.sim.calls.fsync).toBe(3);
  });

  it('unsettled() counts an item until its end is on flash, as a reader of the disk sees it', async () => {
    const h = new Harness();
    const ob = await h.open();
    const put = ob.put('channel-sync', payload(1));
    // Queued but not yet written: pending already, for the daemon and for status.
    expect([ob.pending('channel-sync').length, ob.unsettled('channel-sync')]).toEqual([1, 1]);
    await h.window();
    const item = await put;
    const done = ob.done(item.id);
    // Ended in memory; the end record waits for the window, so a power cut now would replay the item.
    expect([ob.pending('channel-sync').length, ob.unsettled('channel-sync'), ob.unsettled('other')]).toEqual([0, 1, 0]);
    await h.window();
    await done;
    expect(ob.unsettled('channel-sync')).toBe(0);
    // An item dropped as it was put never reached the disk as pending.
    const tiny = new Harness({ capBytes: 100 });
    const small = await tiny.open();
    const dropped = small.put('channel-sync', payload(2, 400));
    await tiny.window();
    expect((await dropped).state).toBe('dropped');
    expect(small.unsettled('channel-sync')).toBe(0);
  });

  it('a newer put in a group supersedes the older pending one in the same window, durably', async () => {
    const h = new Harness();
    const ob = await h.open();
    const a = ob.put('channel-connect', payload(1), { group: 'cam-1' });
    const other = ob.put('channel-connect', payload(2), { group: 'cam-2' });
    const b = ob.put('channel-disconnect', payload(3), { group: 'cam-1' });
    const fsyncs = h.sim.calls.fsync;
    await h.window();
    const [ia, io, ib] = await Promise.all([a, other, b]);
    expect(h.sim.calls.fsync).toBe(fsyncs + 1);
    expect(ob.get(ia.id)).toMatchObject({ state: 'done', reason: 'superseded' });
    expect(ob.pending().map((i) => i.id)).toEqual([io.id, ib.id]);
    // Only pending items are superseded: an ended one keeps its state.
    const d = ob.dead(io.id, 'camera gone');
    await h.window();
    await d;
    const c = ob.put('channel-connect', payload(4), { group: 'cam-2' });
    await h.window();
    await c;
    expect(ob.get(io.id)).toMatchObject({ state: 'dead', reason: 'camera gone' });

    h.sim.crash('power', false);
    const again = await h.open();
    expect(again.get(ia.id)?.state).toBe('done');
    expect(again.get(io.id)?.state).toBe('dead');
    expect(again.pending().map((i) => i.kind)).toEqual(['channel-disconnect', 'channel-connect']);
  });

  it('deletes a segment (unlink + directory fsync) once everything in it is finished; done items count until then', async () => {
    const h = new Harness({ segmentBytes: 800 });
    const ob = await h.open();
    const puts = Array.from({ length: 9 }, (_, i) => ob.put('channel-connect', payload(i)));
    await h.window();
    const items = await Promise.all(puts);
    const segs = h.segments();
    expect(segs.length).toBeGreaterThanOrEqual(3);
    const inFirst = h.records(segs[0]!).flatMap((r) => (r.t === 'put' ? [r.id] : []));
    expect(inFirst.length).toBeGreaterThan(0);
    // All but one of the first segment's items: it stays, and its done items stay visible.
    for (const id of inFirst.slice(1)) void ob.done(id);
    await h.window();
    expect(h.segments()).toEqual(segs);
    expect(ob.stats().byKind['channel-connect']!.done.items).toBe(inFirst.length - 1);
    void ob.dead(inFirst[0]!, 'gave up');
    await h.window();
    expect(h.segments()).toEqual(segs.slice(1));
    // Their end records live on in the segment being written, and so do they, until that one goes too.
    expect(ob.get(inFirst[0]!)?.state).toBe('dead');

    const unlinks = h.sim.calls.unlink;
    for (const it of items.filter((i) => !inFirst.includes(i.id))) void ob.done(it.id);
    await h.window();
    // All but the newest segment, kept for its counters until a newer one exists.
    expect(h.segments()).toEqual(segs.slice(-1));
    expect(h.sim.calls.unlink - unlinks).toBe(segs.length - 2);
    expect(ob.stats().diskBytes).toBeLessThan(800);
    // Traffic moves the head to a new segment: the last one goes, and the finished items with it.
    const next = ob.put('channel-connect', payload(10, 700));
    await h.window();
    await next;
    const d = ob.done((await next).id);
    await h.window();
    await d;
    expect(ob.items().filter((i) => items.some((x) => x.id === i.id))).toEqual([]);
    h.sim.crash('power', true);
    expect((await h.open()).items().filter((i) => i.state === 'pending')).toEqual([]);
  });

  it('items left pending for ever, one every few segments, do not pin the disk: they are copied forward and the old segments go', async () => {
    const h = new Harness({ capBytes: 8_000, segmentBytes: 1_000 });
    const ob = await h.open();
    const stuck: string[] = [];
    let maxDisk = 0;
    for (let i = 0; i < 300; i++) {
      const p = ob.put(i % 20 ? 'channel-connect' : 'upload', payload(i));
      await h.window();
      const item = await p;
      if (i % 20 === 0) {
        stuck.push(item.id);
        if (i === 100) void ob.progress(item.id, { chunk: 7 });
        continue;
      }
      const d = ob.done(item.id);
      await h.window();
      await d;
      maxDisk = Math.max(maxDisk, ob.stats().diskBytes);
    }
    // Without copying forward, each of the 15 would keep a whole segment: the disk would only grow.
    const live = ob.stats().liveBytes;
    expect(live).toBeLessThan(15 * 300);
    // What they need, plus the garbage allowed before copying (max(capBytes/4, 2 segments)), the segment being written and one window.
    expect(maxDisk).toBeLessThan(live + 2_000 + 1_000 + 1_000);
    h.sim.crash('power', true);
    const again = await h.open();
    expect(again.pending().map((i) => i.id)).toEqual(stuck);
    expect(again.get(stuck[5]!)?.progress).toEqual({ chunk: 7 });
  });

  it('ids are <boot id>:<sequence> and the sequence goes on across reopens, even once every segment was finished', async () => {
    const h = new Harness({}, new FakeClock(0));
    const ob = await h.open();
    const puts = [ob.put('a', 1), ob.put('a', 2)];
    await h.window();
    const first = await Promise.all(puts);
    expect(first.map((i) => i.id)).toEqual(['boot-1:0', 'boot-1:1']);
    for (const it of first) void ob.done(it.id);
    await h.window();
    await ob.close();
    // A monotonic clock that starts again (a new process with a new origin) must not bring the sequence back.
    const h2 = new Harness({}, new FakeClock(0), h.sim);
    const ob2 = await h2.open();
    const next = ob2.put('a', 3);
    await h2.window();
    expect((await next).id).toBe('boot-1:2');
  });

  it('readBootId reads the kernel boot id, and falls back to a random one', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'c2c-boot-'));
    try {
      writeFileSync(path.join(dir, 'boot_id'), '0b5c2f4e-1d2a-4f4b-9a7e-3c1d2e3f4a5b\n');
      expect(await readBootId(path.join(dir, 'boot_id'))).toBe('0b5c2f4e-1d2a-4f4b-9a7e-3c1d2e3f4a5b');
      const a = await readBootId(path.join(dir, 'missing'));
      const b = await readBootId(path.join(dir, 'missing'));
      expect(a).toMatch(/^[0-9a-f-]{36}$/);
      expect(a).not.toBe(b);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
