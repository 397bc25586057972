// The GET /health shortcut (a probe that answers brings the next attempt
// forward) must never replace the backoff: only connect-level failures earn
// it, and only once per outage. Without these rules a service that answers
// /health while one path resets the connection was retried every 62 s by
// every camera in lockstep, and start-up device checks ran every 8 s forever.
import { describe, expect, it } from '@jest/globals';
import { FakeClock } from '../support/fake-clock.js';
import { HeartbeatScheduler } from '../../agent/daemon/heartbeat/scheduler.js';
import { boundsOf } from '../../agent/daemon/heartbeat/policy.js';
import { CONNECT_FAILURES, unreachable } from '../../agent/daemon/reachability.js';
import { AgentError } from '../../agent/lib/errors.js';
import { FakeApi, seeded, type Behaviour, type Call } from './fake-api.js';
import { MIN, S, setup } from './controller-harness.js';
import { DEFAULT_TEST_BOUNDS } from '../support/bounds.js';

function scheduler(behave: (call: Call, now: number) => Behaviour) {
  const clock = new FakeClock(10_000_000);
  const api = new FakeApi(clock, behave);
  const s = new HeartbeatScheduler({ clock, random: seeded(3), transport: api, bounds: boundsOf(DEFAULT_TEST_BOUNDS), persist: async () => {}, onOutcome: () => {} });
  const beats = (): number[] => api.calls.filter((c) => c.call === 'heartbeat').map((c) => c.t);
  return { clock, api, s, beats };
}

/** The heartbeat path fails with `outcome` from `from` on; everything else (GET /health included) answers. */
const pathFails = (outcome: Behaviour['outcome'], from: number) => (call: Call, now: number): Behaviour =>
  call === 'heartbeat' && now >= from ? { outcome } : { outcome: 'ok' };

function expectBackoff(gaps: number[]): void {
  // 20 agent-minutes at a fixed 62 s would be 19 attempts; the backoff policy allows about 8.
  expect(gaps.length + 1).toBeLessThanOrEqual(12);
  expect(Math.max(...gaps)).toBeGreaterThan(120 * S);
  // Jittered: a fleet does not come back together.
  expect(new Set(gaps.map((g) => Math.round(g / S))).size).toBeGreaterThan(3);
}

describe('health-probe shortcut', () => {
  it('names the connect-level failures in one place; a reset, a timeout or an HTTP error is not one', () => {
    const net = (code: string) => new AgentError('network', 'x', { code });
    for (const code of CONNECT_FAILURES) expect(unreachable(net(code))).toBe(true);
    for (const code of ['ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ERR_NETWORK', 'ECONNABORTED']) expect(unreachable(net(code))).toBe(false);
    expect(unreachable(new AgentError('server', '503', { status: 503 }))).toBe(false);
  });

  it.each([
    ['reset', 'attempts follow the backoff, no probes', 0],
    ['network', 'one shortcut per outage (one probe), then plain backoff', 1],
  ] as const)('heartbeat %s while /health answers: %s', async (kind, _what, probes) => {
    const h = scheduler(pathFails(kind, 10_000_000 + 5 * MIN));
    h.s.start();
    await h.clock.advance(5 * MIN);
    const from = h.clock.now();
    await h.clock.advance(20 * MIN);
    const beats = h.beats().filter((t) => t >= from);
    expectBackoff(beats.slice(1).map((t, i) => t - (beats[i] as number)));
    expect(h.api.count('health')).toBe(probes);
    await h.s.stop();
  });

  it('a success re-arms the shortcut for the next outage', async () => {
    const t0 = 10_000_000;
    const down = (t: number): boolean => (t >= t0 + 5 * MIN && t < t0 + 15 * MIN) || t >= t0 + 30 * MIN;
    const h = scheduler((call, now) => (call === 'heartbeat' && down(now) ? { outcome: 'network' } : { outcome: 'ok' }));
    h.s.start();
    await h.clock.advance(40 * MIN);
    expect(h.api.count('health')).toBe(2);
    await h.s.stop();
  });
});

describe('start-up device check', () => {
  it('GET /v2/devices/me reset while /health answers: backoff, not every 8 s forever, no probes', async () => {
    const h = setup({ behave: (c) => (c === 'getDevice' ? { outcome: 'reset' } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(10 * MIN);
    expect(h.api.count('getDevice')).toBeLessThanOrEqual(15);
    expect(h.api.count('health')).toBe(0);
    const n = h.api.count('getDevice');
    await h.clock.advance(60 * MIN);
    // The cap (5 min, full jitter) is about 24 an hour; the old loop made 450.
    expect(h.api.count('getDevice') - n).toBeLessThanOrEqual(40);
    expect(h.controller.currentState).toBe('offline');
    await h.controller.stop();
  });

  it('GET /v2/devices/me refused while /health answers: one shortcut, then backoff', async () => {
    const h = setup({ behave: (c) => (c === 'getDevice' ? { outcome: 'network' } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(10 * MIN);
    expect(h.api.count('health')).toBe(1);
    expect(h.api.count('getDevice')).toBeLessThanOrEqual(15);
    await h.controller.stop();
  });
});
