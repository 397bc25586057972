// Issue 29: a cancelled item is its own count in the queue's figures (the
// status document's queue section, `queue`, `status`), never one of the
// dead-lettered: someone asked for it to stop, nothing failed. Read back
// from disk the same way.
import { describe, expect, it } from '@jest/globals';
import { Harness, payload } from './harness.js';

describe('the queue counts cancelled items on their own', () => {
  it('a cancelled item is under `cancelled`, a failed one under `dead`, in memory and once reopened from disk', async () => {
    const h = new Harness();
    const ob = await h.open();
    const items = await Promise.all([0, 1, 2].map(async (i) => {
      const p = ob.put('upload', payload(i));
      await h.window();
      return p;
    }));
    await Promise.all([ob.cancel(items[0]!.id, 'through the local API'), ob.dead(items[1]!.id, 'the file vanished'), h.window()]);
    const by = ob.stats().byKind.upload!;
    expect({ pending: by.pending.items, dead: by.dead.items, cancelled: by.cancelled.items }).toEqual({ pending: 1, dead: 1, cancelled: 1 });
    await ob.close();
    const again = (await h.open()).stats().byKind.upload!;
    expect({ pending: again.pending.items, dead: again.dead.items, cancelled: again.cancelled.items }).toEqual({ pending: 1, dead: 1, cancelled: 1 });
  });
});
