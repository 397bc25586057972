// The controller before and around its first good device check: what a
// camera meets at boot (no network, a 429, a record it cannot read).
import { describe, expect, it } from '@jest/globals';
import { MAX_RETRY_AFTER_MS } from '../../agent/lib/timing.js';
import { HOUR, MIN, S, setup } from './controller-harness.js';

describe('Controller start-up', () => {
  it('a 2xx device record that fails validation still proves the token: heartbeats start, one warning, re-verify at the normal rate', async () => {
    const h = setup({ behave: (c) => (c === 'getDevice' ? { outcome: 'protocol', status: 200 } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(10 * MIN);
    expect(h.controller.currentState).toBe('online');
    expect(h.api.count('getDevice')).toBe(1);
    expect(h.api.count('heartbeat')).toBeGreaterThanOrEqual(3);
    // About hourly (0.85 to 1.15 h), never as a tight retry loop.
    await h.clock.advance(3 * HOUR);
    expect(h.api.count('getDevice')).toBeGreaterThanOrEqual(3);
    expect(h.api.count('getDevice')).toBeLessThanOrEqual(5);
    expect(h.logs.filter((l) => /device record unreadable/.test(l.msg))).toHaveLength(1);
    expect(h.transitions()).toEqual(['starting->online']);
    await h.controller.stop();
  });

  it('an unreadable record on a re-verify keeps the device facts already known', async () => {
    let broken = false;
    const h = setup({ behave: (c) => (c === 'getDevice' && broken ? { outcome: 'protocol', status: 200 } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(1 * S);
    broken = true;
    h.controller.reload();
    await h.clock.advance(10 * MIN);
    expect(h.controller.currentState).toBe('online');
    expect(h.controller.snapshot().device?.name).toBe('cam-07');
    expect(h.controller.snapshot().project?.name).toBe('Testbed');
    await h.controller.stop();
  });

  it('an unreadable answer that was not a 2xx proves nothing: start-up keeps retrying, no heartbeats', async () => {
    const h = setup({ behave: (c) => (c === 'getDevice' ? { outcome: 'protocol', status: 502 } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(30 * MIN);
    expect(h.controller.currentState).toBe('offline');
    expect(h.api.count('heartbeat')).toBe(0);
    expect(h.api.count('getDevice')).toBeGreaterThan(5);
    await h.controller.stop();
  });

  it('a start-up 429 with a day-long Retry-After waits at most MAX_RETRY_AFTER_MS', async () => {
    let limited = true;
    const h = setup({ behave: (c) => (c === 'getDevice' && limited ? { outcome: 'rate-limited', retryAfterMs: 24 * HOUR } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(1 * S);
    expect(h.controller.currentState).toBe('rate-limited');
    limited = false;
    await h.clock.advance(MAX_RETRY_AFTER_MS - 2 * S);
    expect(h.api.count('getDevice')).toBe(1);
    await h.clock.advance(2 * S);
    expect(h.api.count('getDevice')).toBe(2);
    expect(h.controller.currentState).toBe('online');
    await h.controller.stop();
  });

  it('a network-less boot: health probes every 5 to 30 s notice the network return, the device check follows at once', async () => {
    const t0 = 1_000_000;
    const back = t0 + 30 * MIN;
    const h = setup({ behave: (_c, t) => (t < back ? { outcome: 'network' } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(30 * MIN);
    expect(h.controller.currentState).toBe('offline');
    expect(h.api.count('health')).toBeGreaterThan(50);
    // A probe or the check itself asks at least every 30 s (plus the 50 ms a refusal takes).
    const asks = h.api.calls.map((c) => c.t);
    asks.slice(1).forEach((t, i) => expect(t - (asks[i] as number)).toBeLessThanOrEqual(30 * S + 100));
    await h.clock.advance(31 * S);
    const check = h.api.calls.find((c) => c.call === 'getDevice' && c.t >= back);
    expect(check).toBeDefined();
    expect((check?.t ?? Infinity) - back).toBeLessThanOrEqual(31 * S);
    expect(h.controller.currentState).toBe('online');
    expect(h.api.count('heartbeat')).toBe(1);
    // One request at a time: a probe never overlaps the check it hurries along.
    expect(h.api.maxInFlight).toBe(1);
    // Heartbeating now: the scheduler owns reachability, the start-up probes stopped.
    const n = h.api.count('health');
    await h.clock.advance(10 * MIN);
    expect(h.api.count('health')).toBe(n);
    await h.controller.stop();
    expect(h.clock.pendingCount).toBe(0);
  });

});
