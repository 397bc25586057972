// The dispatcher's gate, order and per-kind window, what it does with each
// outcome, and stop/view/onSettled. Retry timing is in dispatcher-retry.test.ts.
import { describe, expect, it } from '@jest/globals';
import { classify } from '../../agent/outbox/outcome.js';
import { AgentError } from '../../agent/lib/errors.js';
import { Rig, err, netErr, ok, starts } from './dispatcher-fakes.js';

describe('dispatcher gate', () => {
  it('runs nothing before start(), even with the gate open, then everything pending at once', async () => {
    const r = new Rig();
    const w = r.worker('channel-connect');
    r.outbox.put('channel-connect');
    const d = r.build();
    d.setOpen(true);
    d.kick();
    await r.clock.advance(60_000);
    expect(w.calls).toHaveLength(0);
    d.start();
    await r.clock.advance(0);
    expect(starts(r, w)).toEqual([60_000]);
    expect(r.outbox.doneCalls.map((c) => c.id)).toEqual(['boot-1:1']);
  });

  it('runs nothing while closed; setOpen(true) runs the pending items at once', async () => {
    const r = new Rig();
    const w = r.worker('channel-connect');
    r.outbox.put('channel-connect');
    r.outbox.put('channel-connect');
    const d = r.build();
    d.start();
    d.kick();
    await r.clock.advance(30_000);
    expect(w.calls).toHaveLength(0);
    d.setOpen(true);
    // Synchronous: the launch happens inside setOpen, not on a timer.
    expect(w.ids()).toEqual(['boot-1:1', 'boot-1:2']);
    await r.clock.advance(0);
    expect(starts(r, w)).toEqual([30_000, 30_000]);
    expect(r.outbox.pending()).toHaveLength(0);
  });

  it('closing the gate stops new launches; the item in flight finishes and is recorded', async () => {
    const r = new Rig([], { window: 1 });
    const w = r.worker('channel-connect', () => 'hold');
    r.outbox.put('channel-connect');
    r.outbox.put('channel-connect');
    const d = await r.running();
    expect(w.ids()).toEqual(['boot-1:1']);
    d.setOpen(false);
    await r.clock.advance(1_000);
    w.calls[0]!.resolve({ result: 'done', note: 'late' });
    await r.clock.advance(10_000);
    expect(r.outbox.doneCalls).toEqual([{ id: 'boot-1:1', reason: 'late', at: r.t0 + 1_000 }]);
    expect(w.ids()).toEqual(['boot-1:1']);
    expect(d.view().inFlight).toEqual([]);
    d.setOpen(true);
    expect(w.ids()).toEqual(['boot-1:1', 'boot-1:2']);
    expect(w.calls[1]!.at - r.t0).toBe(11_000);
  });

  it('a wait that ends while the gate is closed launches nothing; reopening then runs at once', async () => {
    const r = new Rig();
    const w = r.worker('channel-connect', (_i, n) => (n === 1 ? netErr() : ok));
    r.outbox.put('channel-connect');
    const d = await r.running();
    expect(d.view().waitingUntil).toBe(r.t0 + 5_500);
    d.setOpen(false);
    await r.clock.advance(20_000);
    expect(w.calls).toHaveLength(1);
    d.setOpen(true);
    await r.clock.advance(0);
    expect(starts(r, w)).toEqual([0, 20_000]);
  });

  it('reopening the gate during a wait does not cut the wait short', async () => {
    const r = new Rig();
    const w = r.worker('channel-connect', (_i, n) => (n === 1 ? netErr() : ok));
    r.outbox.put('channel-connect');
    const d = await r.running();
    d.setOpen(false);
    await r.clock.advance(1_000);
    d.setOpen(true);
    await r.clock.advance(4_499);
    expect(w.calls).toHaveLength(1);
    await r.clock.advance(1);
    expect(starts(r, w)).toEqual([0, 5_500]);
  });
});

describe('dispatcher order and window', () => {
  it('takes the oldest first, at most two of one kind in flight by default', async () => {
    const r = new Rig();
    const w = r.worker('upload', () => 'hold');
    for (let i = 0; i < 5; i++) r.outbox.put('upload');
    const d = await r.running();
    expect(w.ids()).toEqual(['boot-1:1', 'boot-1:2']);
    expect(d.view().inFlight).toEqual(['boot-1:1', 'boot-1:2']);
    await r.clock.advance(1_000);
    w.calls[1]!.resolve(ok);
    await r.clock.advance(0);
    expect(w.ids()).toEqual(['boot-1:1', 'boot-1:2', 'boot-1:3']);
    w.calls[0]!.resolve(ok);
    await r.clock.advance(0);
    expect(w.ids()).toEqual(['boot-1:1', 'boot-1:2', 'boot-1:3', 'boot-1:4']);
    expect(w.open().map((c) => c.id)).toEqual(['boot-1:3', 'boot-1:4']);
  });

  it('honours a configured window', async () => {
    const r = new Rig([], { window: 3 });
    const w = r.worker('upload', () => 'hold');
    for (let i = 0; i < 5; i++) r.outbox.put('upload');
    await r.running();
    expect(w.ids()).toEqual(['boot-1:1', 'boot-1:2', 'boot-1:3']);
  });

  it('a long upload does not hold back a channel-sync queued after it', async () => {
    const r = new Rig();
    const up = r.worker('upload', () => ({ afterMs: 600_000, then: ok }));
    const sync = r.worker('channel-sync', () => ({ afterMs: 200, then: ok }));
    r.outbox.put('upload');
    r.outbox.put('upload');
    r.outbox.put('upload');
    r.outbox.put('channel-sync');
    r.outbox.put('channel-sync');
    r.outbox.put('channel-sync');
    await r.running();
    expect(up.ids()).toEqual(['boot-1:1', 'boot-1:2']);
    expect(sync.ids()).toEqual(['boot-1:4', 'boot-1:5']);
    await r.clock.advance(200);
    expect(starts(r, sync)).toEqual([0, 0, 200]);
    await r.clock.advance(200);
    expect(r.outbox.doneCalls.map((c) => [c.id, c.at - r.t0])).toEqual([
      ['boot-1:4', 200],
      ['boot-1:5', 200],
      ['boot-1:6', 400],
    ]);
    // The third upload still waits for a slot in its own kind's window.
    expect(up.ids()).toEqual(['boot-1:1', 'boot-1:2']);
    await r.clock.advance(600_000 - 400);
    expect(starts(r, up)).toEqual([0, 0, 600_000]);
  });
});

describe('dispatcher outcomes', () => {
  it('done: outbox.done(id, note) and the next item runs', async () => {
    const r = new Rig([], { window: 1 });
    r.worker('channel-connect', (_i, n) => (n === 1 ? { result: 'done', note: 'connected' } : ok));
    r.outbox.put('channel-connect');
    r.outbox.put('channel-connect');
    await r.running();
    expect(r.outbox.doneCalls).toEqual([
      { id: 'boot-1:1', reason: 'connected', at: r.t0 },
      { id: 'boot-1:2', reason: undefined, at: r.t0 },
    ]);
    expect(r.outbox.deadCalls).toEqual([]);
  });

  it('dead: outbox.dead(id, reason), one warn line, no retry and no wait', async () => {
    const r = new Rig();
    const w = r.worker('channel-connect', (_i, n) => (n === 1 ? { result: 'dead', reason: 'camera unknown to the service' } : ok));
    r.outbox.put('channel-connect');
    r.outbox.put('channel-connect');
    const d = await r.running();
    await r.clock.advance(600_000);
    expect(r.outbox.deadCalls).toEqual([{ id: 'boot-1:1', reason: 'camera unknown to the service', at: r.t0 }]);
    expect(w.ids()).toEqual(['boot-1:1', 'boot-1:2']);
    expect(r.warnings()).toHaveLength(1);
    expect(r.warnings()[0]).toMatchObject({ id: 'boot-1:1', kind: 'channel-connect', msg: 'outbox item dead-lettered: camera unknown to the service' });
    expect(d.view()).toEqual({ inFlight: [], attempts: {}, waitingUntil: undefined });
  });

  it('a thrown network error is a retry: the item stays pending and the queue waits', async () => {
    const r = new Rig();
    r.worker('channel-connect', () => netErr('socket hang up'));
    r.outbox.put('channel-connect');
    const d = await r.running();
    expect(r.outbox.doneCalls).toEqual([]);
    expect(r.outbox.deadCalls).toEqual([]);
    expect(r.outbox.pending().map((i) => i.id)).toEqual(['boot-1:1']);
    expect(d.view()).toEqual({ inFlight: [], attempts: { 'boot-1:1': { count: 1, lastError: 'socket hang up' } }, waitingUntil: r.t0 + 5_500 });
    expect(r.warnings()).toEqual([]);
  });

  it('a thrown 400 protocol error is dead with its message as the reason', async () => {
    const r = new Rig();
    const w = r.worker('channel-connect', () => err('protocol', 'the service answered 400: bad channel id', { status: 400 }));
    r.outbox.put('channel-connect');
    const d = await r.running();
    expect(r.outbox.deadCalls).toEqual([{ id: 'boot-1:1', reason: 'the service answered 400: bad channel id', at: r.t0 }]);
    expect(r.warnings()).toHaveLength(1);
    await r.clock.advance(600_000);
    expect(w.calls).toHaveLength(1);
    expect(d.view().waitingUntil).toBeUndefined();
  });

  it('a thrown plain Error is dead (internal), not retried forever', async () => {
    const r = new Rig();
    r.worker('channel-connect', () => new TypeError('cannot read x of undefined'));
    r.outbox.put('channel-connect');
    await r.running();
    expect(r.outbox.deadCalls.map((c) => c.reason)).toEqual(['cannot read x of undefined']);
  });

  it('classify with an alreadySo predicate: done with an "already so" note', async () => {
    const r = new Rig();
    const w = r.worker('channel-connect');
    w.run = async () => {
      try {
        throw err('conflict', 'the service answered 409: already connected', { status: 409 });
      } catch (e) {
        return classify(e, (x) => x.status === 409);
      }
    };
    r.outbox.put('channel-connect');
    await r.running();
    expect(r.outbox.doneCalls).toEqual([{ id: 'boot-1:1', reason: 'already so: the service answered 409: already connected', at: r.t0 }]);
    expect(r.warnings()).toEqual([]);
  });

  it('an item whose kind has no worker is dead, naming the kind', async () => {
    const r = new Rig();
    r.worker('channel-connect');
    r.outbox.put('firmware-report');
    await r.running();
    expect(r.outbox.deadCalls.map((c) => c.reason)).toEqual(["no worker for kind 'firmware-report'"]);
  });

  it('an outbox that cannot record the outcome is logged, and the dispatcher goes on', async () => {
    const r = new Rig();
    const w = r.worker('channel-connect');
    r.outbox.put('channel-connect');
    r.outbox.put('channel-connect');
    const realDone = r.outbox.done.bind(r.outbox);
    let first = true;
    r.outbox.done = async (id, reason) => {
      if (first) {
        first = false;
        throw new Error('ENOSPC');
      }
      return realDone(id, reason);
    };
    await r.running();
    expect(r.warnings().map((l) => l.msg)).toEqual(['cannot record an outbox outcome']);
    expect(r.warnings()[0]).toMatchObject({ id: 'boot-1:1', err: 'Error: ENOSPC' });
    // The unrecorded item is still pending, so a later pump offers it again; the other one ran beside it.
    expect(new Set(w.ids())).toEqual(new Set(['boot-1:1', 'boot-1:2']));
    expect(r.outbox.doneCalls.map((c) => c.id).sort()).toEqual(['boot-1:1', 'boot-1:2']);
  });
});

describe('classify', () => {
  it('retries network, server, rate-limited, timeout, unauthorized and paused; the rest is dead', () => {
    for (const kind of ['network', 'server', 'rate-limited', 'timeout', 'unauthorized', 'paused'] as const) {
      expect(classify(err(kind, `${kind} happened`))).toMatchObject({ result: 'retry', error: { kind } });
    }
    for (const kind of ['protocol', 'conflict', 'not-found', 'forbidden', 'usage', 'config', 'unavailable', 'internal'] as const) {
      expect(classify(err(kind, `${kind} happened`))).toEqual({ result: 'dead', reason: `${kind} happened` });
    }
    expect(classify('just a string')).toEqual({ result: 'dead', reason: 'just a string' });
  });

  it('a 2xx with an unreadable body is retried; an unreadable 4xx is dead', () => {
    expect(classify(err('protocol', 'GET /v2/devices/me: the body is not JSON', { status: 200 }))).toMatchObject({ result: 'retry', error: { kind: 'protocol' } });
    expect(classify(err('protocol', 'the service answered 400: bad channel id', { status: 400 }))).toEqual({ result: 'dead', reason: 'the service answered 400: bad channel id' });
  });

  it('a status HTTP does not have (600 and up) or a 1xx: the service never answered, so retried, never dead-lettered', () => {
    for (const status of [101, 103, 600, 999]) {
      expect(classify(err('protocol', `POST /v2/devices/assets: HTTP ${status}`, { status }))).toMatchObject({ result: 'retry', error: { kind: 'protocol' } });
    }
  });

  it('alreadySo sees a wrapped AgentError and wins over a retry kind', () => {
    const seen: AgentError[] = [];
    expect(classify(new Error('odd'), (e) => (seen.push(e), false))).toEqual({ result: 'dead', reason: 'odd' });
    expect(seen[0]).toBeInstanceOf(AgentError);
    expect(seen[0]!.kind).toBe('internal');
    expect(classify(err('not-found', 'no such channel', { status: 404 }), (e) => e.status === 404)).toEqual({ result: 'done', note: 'already so: no such channel' });
  });
});
