// What open does with what a power cut or a bad SD card leaves: a torn tail
// is cut and the rest replayed; a bad record anywhere else moves its whole
// segment aside, counted and logged, and everything else is replayed.
import { describe, expect, it } from '@jest/globals';
import { Outbox } from '../../agent/outbox/outbox.js';
import { encodeRecord } from '../../agent/outbox/record.js';
import { QUARANTINE_DIR } from '../../agent/outbox/segments.js';
import { DIR, Harness, payload } from './harness.js';

/** Twelve items over several small segments, all durable. */
async function filled(h: Harness): Promise<string[]> {
  const ob = await h.open();
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) {
    const p = ob.put('channel-connect', payload(i));
    await h.window();
    ids.push((await p).id);
  }
  await ob.close();
  return ids;
}

const idsOf = (recs: ReturnType<Harness['records']>): string[] => recs.flatMap((r) => (r.t === 'put' ? [r.id] : []));

describe('outbox recovery at open', () => {
  it('moves a segment with a bad record in the middle aside, counts it, warns once with the loss, and replays the rest', async () => {
    const h = new Harness({ segmentBytes: 700 });
    const ids = await filled(h);
    const segs = h.segments();
    expect(segs.length).toBeGreaterThanOrEqual(4);
    const victim = segs[1]!;
    const lost = idsOf(h.records(victim));
    expect(lost.length).toBeGreaterThan(0);
    const bytes = h.sim.read(`${DIR}/${victim}`)!.slice();
    bytes[Math.floor(bytes.length / 2)]! ^= 0xff;
    h.sim.write(`${DIR}/${victim}`, bytes);

    const ob = await h.open();
    expect(ob.stats().quarantined).toBe(1);
    expect(h.sim.list(`${DIR}/${QUARANTINE_DIR}`)).toEqual([victim]);
    expect(h.segments()).not.toContain(victim);
    expect(ob.pending().map((i) => i.id)).toEqual(ids.filter((id) => !lost.includes(id)));
    const warned = h.warnings();
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ segment: victim, lostItems: expect.any(Number) });
    expect(warned[0]!.lostItems as number).toBeGreaterThanOrEqual(1);
    expect(warned[0]!.lostItems as number).toBeLessThanOrEqual(lost.length);

    // The count is on disk before anything else is put, and the agent goes on.
    h.sim.crash('power', false);
    const again = await h.open();
    expect(again.stats().quarantined).toBe(1);
    const next = again.put('channel-connect', payload(99));
    await h.window();
    expect((await next).state).toBe('pending');
  });

  it('cuts a half-written last record, replays the rest, and the next put works', async () => {
    const h = new Harness();
    const ids = await filled(h);
    const [last] = h.segments().slice(-1);
    const file = `${DIR}/${last}`;
    const good = h.sim.read(file)!;
    const torn = encodeRecord({ t: 'put', id: 'boot-1:999999999', k: 'x', pr: 0, at: 'now', d: payload(1) }).subarray(0, 30);
    h.sim.write(file, Buffer.concat([good, torn]));

    const ob = await h.open();
    expect(h.sim.read(file)!.length).toBe(good.length);
    expect(ob.pending().map((i) => i.id)).toEqual(ids);
    expect(ob.stats().quarantined).toBe(0);
    expect(h.warnings().map((l) => l.msg)).toEqual([expect.stringContaining('torn')]);

    const p = ob.put('channel-disconnect', payload(12));
    await h.window();
    const added = await p;
    h.sim.crash('power', false);
    const again = await h.open();
    expect(again.pending().map((i) => i.id)).toEqual([...ids, added.id]);
    expect(again.stats().quarantined).toBe(0);
  });

  it('treats zeros after the last record (a file extended but never written) and a bad CRC on the last record as a torn tail', async () => {
    const h = new Harness();
    const ids = await filled(h);
    const [last] = h.segments().slice(-1);
    const file = `${DIR}/${last}`;
    const good = h.sim.read(file)!;
    h.sim.write(file, Buffer.concat([good, new Uint8Array(64)]));
    expect((await h.open()).pending().map((i) => i.id)).toEqual(ids);
    expect(h.sim.read(file)!.length).toBe(good.length);
    await h.ob.close();

    // The last record's body rots: only that record is lost.
    const rotten = good.slice();
    rotten[rotten.length - 3]! ^= 0x01;
    h.sim.write(file, rotten);
    const ob = await h.open();
    expect(ob.pending().map((i) => i.id)).toEqual(ids.slice(0, -1));
    expect(ob.stats().quarantined).toBe(0);
  });

  it('quarantines the newest segment when good records follow the bad one (rot, not a torn write)', async () => {
    const h = new Harness();
    const ids = await filled(h);
    const segs = h.segments();
    expect(segs).toHaveLength(1);
    const file = `${DIR}/${segs[0]}`;
    const bytes = h.sim.read(file)!.slice();
    bytes[60]! ^= 0xff;
    h.sim.write(file, bytes);
    const ob = await h.open();
    expect(ob.stats().quarantined).toBe(1);
    expect(ob.pending()).toEqual([]);
    expect(h.warnings()[0]).toMatchObject({ lostItems: ids.length });
  });

  it('a file that cannot be read at all (a bad block) is quarantined like one that reads wrong', async () => {
    const h = new Harness({ segmentBytes: 700 });
    await filled(h);
    const victim = h.segments()[0]!;
    const fs = h.sim.mount();
    const eio = (): Promise<never> => Promise.reject(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }));
    const ob = new Outbox({ dir: DIR, fs: { ...fs, readFile: (f, max) => (f.endsWith(victim) ? eio() : fs.readFile(f, max)) }, clock: h.clock, bootId: 'boot-1', logger: h.logger });
    await ob.open();
    expect(ob.stats().quarantined).toBe(1);
    expect(h.sim.list(`${DIR}/${QUARANTINE_DIR}`)).toEqual([victim]);
    expect(ob.pending().length).toBeGreaterThan(0);
  });
});
