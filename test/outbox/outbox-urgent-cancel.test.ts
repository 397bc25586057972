// What the local API asks of the outbox: an item made urgent (taken first)
// and an item cancelled (never retried), both kept across a restart; the
// dispatcher taking urgent items first and stopping a cancelled attempt
// without counting it as a failure.
import { describe, expect, it } from '@jest/globals';
import { CANCELLED } from '../../agent/outbox/types.js';
import { Harness, payload } from './harness.js';
import { Rig } from './dispatcher-fakes.js';

/** An outbox call resolves once its window is written: let the window pass. */
async function settle<T>(h: Harness, p: Promise<T>): Promise<T> {
  await h.window();
  return p;
}

describe('outbox: urgent and cancelled items', () => {
  it('setUrgent and cancel are durable: a reopened outbox has the flag, the cancelled item dead with its reason, the progress kept', async () => {
    const h = new Harness();
    const ob = await h.open();
    const a = await settle(h, ob.put('upload', payload(1)));
    const b = await settle(h, ob.put('upload', payload(2)));
    const c = await settle(h, ob.put('upload', payload(3)));
    await settle(h, ob.progress(b.id, { parts: 3, done: [0] }));
    const flag = ob.setUrgent(b.id, true);
    await h.window();
    expect(await flag).toBe(true);
    const cancelled = ob.cancel(c.id, 'by a test');
    await h.window();
    expect(await cancelled).toBe(true);
    expect(ob.get(b.id)).toMatchObject({ urgent: true, progress: { parts: 3, done: [0] } });
    await settle(h, ob.close());
    const again = await h.open();
    expect(again.get(a.id)?.urgent).toBeUndefined();
    expect(again.get(b.id)).toMatchObject({ state: 'pending', urgent: true, progress: { parts: 3, done: [0] } });
    expect(again.get(c.id)).toMatchObject({ state: 'dead', reason: `${CANCELLED}: by a test` });
    // Lowered again, and still so after the next restart.
    const lower = again.setUrgent(b.id, false);
    await h.window();
    expect(await lower).toBe(true);
    await settle(h, again.close());
    expect((await h.open()).get(b.id)?.urgent).toBeUndefined();
  });

  it('an item not pending is neither made urgent nor cancelled', async () => {
    const h = new Harness();
    const ob = await h.open();
    const a = await settle(h, ob.put('upload', payload(1)));
    const done = ob.done(a.id);
    await h.window();
    await done;
    expect(await ob.setUrgent(a.id, true)).toBe(false);
    expect(await ob.cancel(a.id, 'late')).toBe(false);
    expect(await ob.cancel('boot-1:999', 'unknown')).toBe(false);
  });
});

describe('dispatcher: urgent first, abort of a cancelled attempt', () => {
  it('takes urgent items before the others, each in queue order', async () => {
    const r = new Rig([], { window: 1 });
    const w = r.worker('upload');
    r.outbox.put('upload');
    r.outbox.put('upload');
    r.outbox.put('upload');
    r.outbox.items[2]!.urgent = true;
    await r.running();
    await r.clock.advance(0);
    await r.clock.advance(0);
    expect(w.ids()).toEqual(['boot-1:3', 'boot-1:1', 'boot-1:2']);
  });

  it('abort stops the attempt at once; the queue does not back off and the next item starts', async () => {
    const r = new Rig([], { window: 1 });
    const w = r.worker('upload', () => 'hold');
    r.outbox.put('upload');
    r.outbox.put('upload');
    const d = await r.running();
    expect(w.ids()).toEqual(['boot-1:1']);
    // The canceller ends the item first, then aborts.
    r.outbox.items[0]!.state = 'dead';
    expect(d.abort('boot-1:1', 'cancelled')).toBe(true);
    expect(w.calls[0]!.signal.aborted).toBe(true);
    await d.settled('boot-1:1');
    await r.clock.advance(0);
    expect(w.ids()).toEqual(['boot-1:1', 'boot-1:2']);
    expect(d.view().attempts).toEqual({});
    expect(d.view().waitingUntil).toBeUndefined();
    expect(d.abort('boot-1:7', 'not running')).toBe(false);
  });
});
