// The cap: the queue never holds more than capBytes of pending records. The
// lowest priority goes first, then the oldest; a newcomer that is itself
// the lowest is the one dropped. Drops are counted by kind, and the counts
// outlive the segments that held the drop records.
import { describe, expect, it } from '@jest/globals';
import type { OutboxItem } from '../../agent/outbox/types.js';
import { Harness, payload } from './harness.js';

const CAP = 4_000;

async function putAll(h: Harness, puts: Array<Promise<OutboxItem>>): Promise<OutboxItem[]> {
  await h.window();
  return Promise.all(puts);
}

describe('outbox cap', () => {
  it('drops the oldest low-priority items for a high-priority one, counts them by kind, warns once per burst', async () => {
    const h = new Harness({ capBytes: CAP, segmentBytes: 1_000 });
    const ob = await h.open();
    const lows = await putAll(h, Array.from({ length: 40 }, (_, i) => ob.put('channel-connect', payload(i), { priority: 0 })));
    const afterLows = ob.stats();
    expect(afterLows.liveBytes).toBeLessThanOrEqual(CAP);
    expect(afterLows.dropped['channel-connect']).toBeGreaterThan(0);
    // The oldest went first: what is left is the newest, in order.
    const left = ob.pending().map((i) => i.id);
    expect(left).toEqual(lows.map((i) => i.id).slice(-left.length));
    expect(h.warnings()).toHaveLength(1);

    const high = await putAll(h, [ob.put('channel-disconnect', payload(100, 1_000), { priority: 5 })]);
    expect(high[0]!.state).toBe('pending');
    const stats = ob.stats();
    expect(stats.liveBytes).toBeLessThanOrEqual(CAP);
    expect(stats.dropped['channel-connect']).toBeGreaterThan(afterLows.dropped['channel-connect']!);
    expect(stats.dropped['channel-disconnect']).toBeUndefined();
    expect(ob.get(high[0]!.id)?.state).toBe('pending');
    expect(h.warnings()).toHaveLength(2);
    const evicted = lows.filter((i) => ob.get(i.id)?.state === 'dropped');
    expect(evicted.every((i) => /cap/.test(ob.get(i.id)!.reason ?? ''))).toBe(true);
    // The reason `queue` shows, in binary units (issue 29: it said 'cap of 4194304 bytes').
    expect(evicted.every((i) => / at its cap of [\d.]+ (B|KiB|MiB)$/.test(ob.get(i.id)!.reason ?? ''))).toBe(true);
  });

  it('a newcomer lower than everything queued is the one dropped, and its put still resolves', async () => {
    const h = new Harness({ capBytes: CAP, segmentBytes: 1_000 });
    const ob = await h.open();
    await putAll(h, Array.from({ length: 15 }, (_, i) => ob.put('upload', payload(i), { priority: 2 })));
    expect(ob.stats().dropped).toEqual({});
    const before = ob.pending().map((i) => i.id);
    const [low] = await putAll(h, [ob.put('channel-connect', payload(99), { priority: 1 })]);
    expect(low!.state).toBe('dropped');
    expect(ob.pending().map((i) => i.id)).toEqual(before);
    expect(ob.stats().dropped).toEqual({ 'channel-connect': 1 });
    // One item larger than the cap can never fit, whatever its priority.
    const [huge] = await putAll(h, [ob.put('upload', payload(1, CAP), { priority: 9 })]);
    expect(huge!.state).toBe('dropped');
    expect(ob.pending().map((i) => i.id)).toEqual(before);
  });

  it('keeps the drop counts across reopens and after every segment holding a drop record is deleted', async () => {
    const h = new Harness({ capBytes: CAP, segmentBytes: 1_000 });
    const ob = await h.open();
    await putAll(h, Array.from({ length: 40 }, (_, i) => ob.put(i % 2 ? 'channel-connect' : 'upload', payload(i))));
    const dropped = ob.stats().dropped;
    expect(Object.values(dropped).reduce((a, b) => a + b, 0)).toBeGreaterThan(5);
    const firstSegments = h.segments();

    for (const item of ob.pending()) void ob.done(item.id);
    await h.window();
    // Fresh traffic moves the head on, so every old segment goes.
    for (let i = 0; i < 12; i++) {
      const p = ob.put('channel-connect', payload(i, 400));
      await h.window();
      const d = ob.done((await p).id);
      await h.window();
      await d;
    }
    expect(h.segments().filter((s) => firstSegments.includes(s))).toEqual([]);
    expect(ob.stats().dropped).toEqual(dropped);

    h.sim.crash('power', false);
    expect((await h.open()).stats().dropped).toEqual(dropped);
    h.sim.crash('kill', false);
    expect((await h.open()).stats().dropped).toEqual(dropped);
  });

  it('progress counts against the cap, and a long job folds its progress into one copy instead of growing', async () => {
    const h = new Harness({ capBytes: CAP, segmentBytes: 1_000 });
    const ob = await h.open();
    const [job] = await putAll(h, [ob.put('upload', payload(0, 300), { priority: 3 })]);
    for (let chunk = 1; chunk <= 200; chunk++) {
      const p = ob.progress(job!.id, { chunks: chunk });
      await h.window();
      await p;
      expect(ob.get(job!.id)!.bytes).toBeLessThanOrEqual(4 * 450);
    }
    expect(ob.stats().liveBytes).toBeLessThanOrEqual(CAP);
    h.sim.crash('power', true);
    const again = await h.open();
    expect(again.get(job!.id)).toMatchObject({ state: 'pending', progress: { chunks: 200 } });
    // 200 progress records and their copies, yet only the last few segments are still on disk.
    expect(again.stats().diskBytes).toBeLessThan(CAP);
  });
});
