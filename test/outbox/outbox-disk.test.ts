// A disk that refuses writes (full, or remounted read-only after errors)
// must not stop the agent: operations still resolve, held in memory, one
// warning per outage, and once the disk takes writes again everything held
// lands in order, with no torn bytes from the refused attempts left behind.
import { describe, expect, it } from '@jest/globals';
import { DIR, Harness, payload } from './harness.js';

describe('outbox on a disk that refuses writes', () => {
  it.each(['full', 'read-only'] as const)('disk %s: puts resolve, one warning, retried every window, all written in order once it heals', async (state) => {
    const h = new Harness();
    const ob = await h.open();
    const first = ob.put('channel-connect', payload(0));
    await h.window();
    const before = await first;

    h.sim.disk = state;
    const puts = Array.from({ length: 10 }, (_, i) => ob.put('channel-connect', payload(i + 1)));
    await h.window();
    const held = await Promise.all(puts);
    expect(held.every((i) => i.state === 'pending')).toBe(true);
    expect(ob.stats().unwritten).toBeGreaterThan(0);
    const done = ob.done(before.id);
    for (let i = 0; i < 4; i++) await h.window();
    await done;
    expect(ob.stats().unwritten).toBe(11);
    expect(h.warnings()).toHaveLength(1);
    expect(h.warnings()[0]).toMatchObject({ code: state === 'full' ? 'ENOSPC' : 'EROFS' });

    h.sim.disk = 'ok';
    await h.window();
    expect(ob.stats().unwritten).toBe(0);
    expect(h.logs.some((l) => /takes writes again/.test(l.msg))).toBe(true);

    // Nothing after this was fsynced by anyone else: what survives a power cut is what the outbox wrote.
    h.sim.crash('power', true);
    const again = await h.open();
    expect(again.pending().map((i) => i.id)).toEqual(held.map((i) => i.id));
    expect(again.pending().map((i) => (i.payload as { n: number }).n)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(again.stats().quarantined).toBe(0);
    expect(h.warnings()).toHaveLength(1);
  });

  it('a second outage warns again, once', async () => {
    const h = new Harness();
    const ob = await h.open();
    for (const state of ['full', 'ok', 'full', 'ok'] as const) {
      h.sim.disk = state;
      void ob.put('upload', payload(1));
      await h.window();
      await h.window();
    }
    expect(h.warnings()).toHaveLength(2);
    expect(ob.stats().unwritten).toBe(0);
  });

  it('a torn tail that open cannot cut (read-only disk) is cut before the first new write', async () => {
    const h = new Harness();
    const ob = await h.open();
    const kept = ob.put('channel-connect', payload(0));
    await h.window();
    await kept;
    await ob.close();
    const [seg] = h.segments();
    const file = `${DIR}/${seg}`;
    const good = h.sim.read(file)!;
    h.sim.write(file, Buffer.concat([good, new Uint8Array([9, 0, 0, 0, 1, 2])]));

    h.sim.disk = 'read-only';
    const ro = await h.open();
    expect(ro.pending()).toHaveLength(1);
    expect(h.sim.read(file)!.length).toBe(good.length + 6);
    const p = ro.put('channel-connect', payload(1));
    await h.window();
    await p;
    expect(ro.stats().unwritten).toBeGreaterThan(0);
    h.sim.disk = 'ok';
    await h.window();
    expect(h.sim.read(file)!.length).toBe(good.length);
    h.sim.crash('power', false);
    const again = await h.open();
    expect(again.pending().map((i) => (i.payload as { n: number }).n)).toEqual([0, 1]);
    expect(again.stats().quarantined).toBe(0);
  });
});
