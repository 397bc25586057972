// The dispatcher's stop(), view() and onSettled, plus the 429 ladder's
// reset when another kind of failure breaks the row.
import { describe, expect, it } from '@jest/globals';
import { Rig, err, netErr, ok, starts, tooMany } from './dispatcher-fakes.js';

describe('dispatcher stop', () => {
  it('aborts the in-flight workers and resolves only once they settled; their outcome is not recorded', async () => {
    const r = new Rig();
    const up = r.worker('upload', () => 'hold', 50);
    const sync = r.worker('channel-sync', () => 'hold', 20);
    r.outbox.put('upload');
    r.outbox.put('channel-sync');
    const d = await r.running();
    expect(d.view().inFlight).toEqual(['boot-1:1', 'boot-1:2']);
    let stopped = false;
    void d.stop().then(() => (stopped = true));
    expect([up.calls[0]!.signal.aborted, sync.calls[0]!.signal.aborted]).toEqual([true, true]);
    expect((up.calls[0]!.signal.reason as Error).message).toBe('stopping');
    await r.clock.advance(20);
    expect([stopped, sync.calls[0]!.settled, up.calls[0]!.settled]).toEqual([false, true, false]);
    expect(d.view().inFlight).toEqual(['boot-1:1']);
    await r.clock.advance(29);
    expect(stopped).toBe(false);
    await r.clock.advance(1);
    expect(stopped).toBe(true);
    expect(d.view().inFlight).toEqual([]);
    // Aborted attempts are neither done nor dead nor retried: the items stay pending for the next start.
    expect([r.outbox.doneCalls, r.outbox.deadCalls]).toEqual([[], []]);
    expect(r.outbox.pending().map((i) => i.id)).toEqual(['boot-1:1', 'boot-1:2']);
    expect(d.view().attempts).toEqual({});
    expect(r.settled.map((s) => s.at - r.t0)).toEqual([20, 50]);
  });

  it('a worker that finishes after stop() is not recorded either', async () => {
    const r = new Rig();
    r.worker('channel-connect', () => ({ afterMs: 10, then: ok }));
    r.outbox.put('channel-connect');
    const d = await r.running();
    // This worker ignores the signal and answers done 10 ms later.
    const stopping = d.stop();
    await r.clock.advance(10);
    await stopping;
    expect(r.outbox.doneCalls).toEqual([]);
  });

  it('resolves at once with nothing in flight, cancels the wait, and nothing runs afterwards', async () => {
    const r = new Rig();
    const w = r.worker('channel-connect', (_i, k) => (k === 1 ? netErr() : ok));
    r.outbox.put('channel-connect');
    const d = await r.running();
    expect(r.clock.pendingCount).toBe(1);
    let stopped = false;
    void d.stop().then(() => (stopped = true));
    await r.clock.advance(0);
    expect(stopped).toBe(true);
    expect(r.clock.pendingCount).toBe(0);
    r.outbox.put('channel-connect');
    d.kick();
    d.setOpen(false);
    d.setOpen(true);
    await r.clock.advance(3_600_000);
    expect(w.calls).toHaveLength(1);
  });
});

describe('dispatcher view and onSettled', () => {
  it('view() shows the items in flight, the attempts and the wait', async () => {
    const r = new Rig();
    const up = r.worker('upload', (_i, k) => (k === 1 ? { afterMs: 1_000, then: netErr('reset by peer') } : ok));
    r.worker('channel-sync', () => 'hold');
    r.outbox.put('upload');
    r.outbox.put('channel-sync');
    const d = await r.running();
    expect(d.view()).toEqual({ inFlight: ['boot-1:1', 'boot-1:2'], attempts: {}, waitingUntil: undefined });
    await r.clock.advance(1_000);
    expect(d.view()).toEqual({ inFlight: ['boot-1:2'], attempts: { 'boot-1:1': { count: 1, lastError: 'reset by peer' } }, waitingUntil: r.t0 + 6_500 });
    await r.clock.advance(5_499);
    expect(d.view().waitingUntil).toBe(r.t0 + 6_500);
    await r.clock.advance(1);
    // The wait is over and the retry succeeded: its attempts are forgotten.
    expect(starts(r, up)).toEqual([0, 6_500]);
    expect(d.view()).toEqual({ inFlight: ['boot-1:2'], attempts: {}, waitingUntil: undefined });
  });

  it('onSettled is called after every attempt, once the outcome is recorded and the item left inFlight', async () => {
    const r = new Rig([], { window: 1 });
    r.worker('channel-connect', (_i, k) =>
      k === 1 ? netErr() : k === 2 ? ok : k === 3 ? { result: 'dead', reason: 'no such camera' } : err('unauthorized', '401', { status: 401 }),
    );
    r.outbox.put('channel-connect');
    r.outbox.put('channel-connect');
    r.outbox.put('channel-connect');
    await r.running();
    await r.clock.advance(5_500);
    expect(r.settled.slice(0, 3)).toEqual([
      { at: r.t0, inFlight: [], done: 0, dead: 0 },
      { at: r.t0 + 5_500, inFlight: [], done: 1, dead: 0 },
      { at: r.t0 + 5_500, inFlight: [], done: 1, dead: 1 },
    ]);
    // The third item's 401s refreshed every time: 50 attempts at once, each settled, the last one dead.
    const rest = r.settled.slice(3);
    expect(rest).toHaveLength(50);
    expect(rest.every((s) => s.at === r.t0 + 5_500 && s.inFlight.length === 0 && s.done === 1)).toBe(true);
    expect(rest.map((s) => s.dead)).toEqual([...Array(49).fill(1), 2]);
    expect(r.outbox.deadCalls.map((c) => c.reason)).toEqual(['no such camera', 'gave up after 50 attempts: 401']);
  });
});

describe('dispatcher 429 ladder', () => {
  // Minor (spec wording): "doubles on each further 429 in a row". Only a
  // success resets rateLimits; a 5xx/network failure between two 429s does
  // not, so the second 429 waits 2 s instead of starting again at 1 s. The
  // heartbeat scheduler (scheduler.ts schedule()) resets its 429 count on
  // any other failure; the dispatcher does not.
  it('a failure of another kind breaks the row: the next 429 waits about 1 s again', async () => {
    const r = new Rig();
    const w = r.worker('channel-connect', (_i, k) => (k === 1 ? tooMany() : k === 2 ? err('server', '503', { status: 503 }) : k === 3 ? tooMany() : ok));
    r.outbox.put('channel-connect');
    await r.running();
    await r.clock.advance(1_000 + 5_500);
    expect(starts(r, w)).toEqual([0, 1_000, 6_500]);
    expect(r.d.view().waitingUntil).toBe(r.t0 + 7_500);
  });

  it('retryAfterMs is honoured up to the hour, no further', async () => {
    const r = new Rig();
    r.worker('channel-connect', (_i, k) => (k === 1 ? tooMany(7_200_000) : ok));
    r.outbox.put('channel-connect');
    await r.running();
    expect(r.d.view().waitingUntil).toBe(r.t0 + 3_600_000);
  });
});
