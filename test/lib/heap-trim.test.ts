// The heap trim behind uploads: one full collection per HEAP_TRIM_EVERY_BYTES
// uploaded, whatever the chunk sizes, and a collection that really runs in a
// process started without --expose-gc.
import { describe, expect, it } from '@jest/globals';
import v8 from 'node:v8';
import vm from 'node:vm';
import { HEAP_TRIM_EVERY_BYTES, HeapTrim, fullCollection } from '../../agent/lib/heap-trim.js';

const MiB = 1024 * 1024;

describe('HeapTrim', () => {
  it('collects once per HEAP_TRIM_EVERY_BYTES uploaded, counting across chunks of any size', async () => {
    let collections = 0;
    // The collection runs a moment later (its first one loads node:vm): counted once the turn is over.
    const settled = (): Promise<void> => new Promise((r) => setImmediate(r));
    const trim = new HeapTrim(() => collections++);
    expect(trim.everyBytes).toBe(HEAP_TRIM_EVERY_BYTES);
    // 5 MiB chunks (the service's usual part size): 12 of them are 60 MiB, the 13th crosses 64.
    for (let i = 0; i < 12; i++) trim.sent(5 * MiB);
    await settled();
    expect(collections).toBe(0);
    trim.sent(5 * MiB);
    await settled();
    expect(collections).toBe(1);
    // The count starts again after a collection: a 2 GiB file in 5 MiB parts is 32 collections, not 410.
    for (let i = 13; i < 410; i++) trim.sent(5 * MiB);
    await settled();
    expect(collections).toBe(Math.floor((410 * 5) / 64));
    // Small files add up too.
    const few = new HeapTrim(() => collections++, 10);
    collections = 0;
    for (let i = 0; i < 9; i++) few.sent(1);
    few.sent(1);
    await settled();
    expect(collections).toBe(1);
    // A collection that fails is reported, not thrown into the upload.
    const errors: unknown[] = [];
    const failing = new HeapTrim(() => Promise.reject(new Error('no gc here')), 1, (err) => errors.push(err));
    failing.sent(1);
    await settled();
    expect(errors).toEqual([new Error('no gc here')]);
    // Not tried again: one warning, not one per 64 MiB.
    failing.sent(1);
    failing.sent(1);
    await settled();
    expect(errors).toHaveLength(1);
  });

  it('fullCollection frees garbage the old generation holds, without giving gc to the agent or to later contexts', async () => {
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
    const oldSpace = (): number => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.space_used_size;
    // Garbage that reaches the old generation: arrays kept across allocations, then dropped.
    let keep: number[][] | undefined = Array.from({ length: 2000 }, (_, i) => Array.from({ length: 500 }, () => i));
    await fullCollection();
    const withGarbage = oldSpace();
    keep = undefined;
    await fullCollection();
    expect(keep).toBeUndefined();
    expect(withGarbage - oldSpace()).toBeGreaterThan(2 * MiB);
    // The flag was on only while its one context was made.
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
    expect(vm.runInNewContext('typeof gc')).toBe('undefined');
    // Later calls reuse the function: still no gc anywhere.
    await fullCollection();
    expect(vm.runInNewContext('typeof gc')).toBe('undefined');
  });
});
