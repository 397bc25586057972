import { describe, expect, it } from '@jest/globals';
import { FakeClock } from '../support/fake-clock.js';
import { parseRetryAfter } from '../../agent/api/rate-limit.js';
import { HeartbeatScheduler, type HeartbeatOutcome } from '../../agent/daemon/heartbeat/scheduler.js';
import { boundsOf, type AttemptRecord } from '../../agent/daemon/heartbeat/policy.js';
import { MAX_AFTER_SUCCESS_MS, MIN_SPACING_MS, SPACING_MARGIN_MS } from '../../agent/lib/timing.js';
import { FakeApi, seeded, type Behaviour, type Call } from './fake-api.js';
import { DEFAULT_TEST_BOUNDS } from '../support/bounds.js';

const S = 1000;
const MIN = 60 * S;

function setup(o: { behave?: (call: Call, now: number) => Behaviour; lastAttempt?: AttemptRecord; random?: () => number; bounds?: { minSeconds: number; maxSeconds: number }; start?: number } = {}) {
  const clock = new FakeClock(o.start ?? 10_000_000);
  const api = new FakeApi(clock, o.behave);
  const outcomes: HeartbeatOutcome[] = [];
  const saved: AttemptRecord[] = [];
  const scheduler = new HeartbeatScheduler({
    clock,
    random: o.random ?? seeded(7),
    transport: api,
    bounds: boundsOf(o.bounds ?? DEFAULT_TEST_BOUNDS),
    lastAttempt: o.lastAttempt,
    persist: async (rec) => {
      saved.push({ ...rec });
    },
    onOutcome: (x) => outcomes.push(x),
  });
  const beats = (): number[] => api.calls.filter((c) => c.call === 'heartbeat').map((c) => c.t);
  const gaps = (): number[] => beats().slice(1).map((t, i) => t - (beats()[i] as number));
  return { clock, api, scheduler, outcomes, saved, beats, gaps, t0: clock.now() };
}

describe('HeartbeatScheduler', () => {
  it('the constructor does nothing; start() sends the first heartbeat at once when there was none before', async () => {
    const h = setup();
    expect(h.clock.pendingCount).toBe(0);
    h.scheduler.start();
    await h.clock.advance(1);
    expect(h.beats()).toEqual([h.t0]);
    await h.scheduler.stop();
  });

  it('waits out 60 s from the previous process’s last attempt, read from the runtime dir', async () => {
    const t0 = 10_000_000;
    const h = setup({ lastAttempt: { startedAt: t0 - 10 * S, endedAt: t0 - 9.5 * S } });
    h.scheduler.start();
    await h.clock.advance(50 * S);
    expect(h.beats()).toEqual([]);
    await h.clock.advance(10 * MIN);
    const first = h.beats()[0] as number;
    expect(first - (t0 - 9.5 * S)).toBeGreaterThanOrEqual(60 * S);
    expect(first - (t0 - 9.5 * S)).toBeLessThanOrEqual(63 * S);
    await h.scheduler.stop();
  });

  it('no record shortly after boot: boot counts as the last attempt (a fast reboot loses the tmpfs record)', async () => {
    // Agent time is CLOCK_MONOTONIC: 20 s since boot. A draw of 0: no spread on top.
    const h = setup({ start: 20 * S, random: () => 0 });
    h.scheduler.start();
    await h.clock.advance(41 * S);
    expect(h.beats()).toEqual([]);
    await h.clock.advance(2 * S);
    expect(h.beats()).toEqual([MIN_SPACING_MS + SPACING_MARGIN_MS]);
    await h.scheduler.stop();
  });

  it('no record shortly after boot: the first heartbeat is spread by the draws (a fleet rebooting together)', async () => {
    const bounds = { minSeconds: 60, maxSeconds: 255 };
    const h = setup({ start: 20 * S, random: () => 0.5, bounds });
    h.scheduler.start();
    const interval = Math.sqrt((60 * S) ** 2 + 0.5 * ((255 * S) ** 2 - (60 * S) ** 2));
    const at = MIN_SPACING_MS + SPACING_MARGIN_MS + 0.5 * interval;
    await h.clock.advance(Math.floor(at) - 20 * S);
    expect(h.beats()).toEqual([]);
    await h.clock.advance(1);
    expect(h.beats()).toEqual([at]);
    await h.scheduler.stop();
  });

  it('an attempt cut off by kill -9 (no end recorded) still counts: 60 s from the restart', async () => {
    const t0 = 10_000_000;
    const h = setup({ lastAttempt: { startedAt: t0 - 2 * S } });
    h.scheduler.start();
    await h.clock.advance(10 * MIN);
    expect((h.beats()[0] as number) - t0).toBeGreaterThanOrEqual(60 * S);
    await h.scheduler.stop();
  });

  it('persists the attempt before sending it and again when it ends', async () => {
    const h = setup();
    h.scheduler.start();
    await h.clock.advance(1 * S);
    expect(h.saved[0]).toEqual({ startedAt: h.t0 });
    expect(h.saved[1]).toEqual({ startedAt: h.t0, endedAt: h.t0 + 50 });
    await h.scheduler.stop();
  });

  it('draws delays within the profile bounds, spacing first, never past the 300 s budget', async () => {
    const h = setup({ random: seeded(3) });
    h.scheduler.start();
    await h.clock.advance(24 * 60 * MIN);
    const gaps = h.gaps();
    expect(gaps.length).toBeGreaterThan(300);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(62 * S);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(MAX_AFTER_SUCCESS_MS);
    // Spread over the range, not bunched at one end.
    expect(gaps.filter((g) => g < 120 * S).length).toBeGreaterThan(30);
    expect(gaps.filter((g) => g > 200 * S).length).toBeGreaterThan(30);

    const narrow = setup({ bounds: { minSeconds: 120, maxSeconds: 180 } });
    narrow.scheduler.start();
    await narrow.clock.advance(6 * 60 * MIN);
    expect(Math.min(...narrow.gaps())).toBeGreaterThanOrEqual(120 * S);
    expect(Math.max(...narrow.gaps())).toBeLessThanOrEqual(180 * S);
    await Promise.all([h.scheduler.stop(), narrow.scheduler.stop()]);
  });

  it('a slow 25 s answer does not push the next success past 300 s at the service', async () => {
    const h = setup({ random: () => 1, behave: () => ({ outcome: 'ok', latencyMs: 25 * S, uplinkMs: 0 }) });
    h.api.onArrival = undefined;
    h.scheduler.start();
    await h.clock.advance(60 * MIN);
    const okTimes = h.api.arrivals.filter((a) => a.ok).map((a) => a.t);
    const gaps = okTimes.slice(1).map((t, i) => t - (okTimes[i] as number));
    expect(Math.max(...gaps) + 25 * S).toBeLessThanOrEqual(300 * S);
    await h.scheduler.stop();
  });

  it('429 with Retry-After in seconds is honoured', async () => {
    let n = 0;
    const h = setup({ behave: (c) => (c === 'heartbeat' && n++ === 0 ? { outcome: 'rate-limited', retryAfterMs: 200 * S } : { outcome: 'ok' }) });
    h.scheduler.start();
    await h.clock.advance(30 * MIN);
    expect(h.outcomes[0]?.result).toBe('rate-limited');
    expect(h.gaps()[0]).toBeGreaterThanOrEqual(200 * S);
    expect(h.gaps()[0]).toBeLessThan(202 * S);
    await h.scheduler.stop();
  });

  it('429 with Retry-After as an HTTP-date is honoured (measured against the server Date)', async () => {
    const clock = new FakeClock();
    const serverNow = clock.wallNow() + 3_600_000; // the device clock is an hour behind
    const retryAfterMs = parseRetryAfter(
      { 'retry-after': new Date(serverNow + 400 * S).toUTCString(), date: new Date(serverNow).toUTCString() },
      clock.wallNow(),
    );
    expect(retryAfterMs).toBe(400 * S);
    let n = 0;
    const h = setup({ behave: (c) => (c === 'heartbeat' && n++ === 0 ? { outcome: 'rate-limited', retryAfterMs } : { outcome: 'ok' }) });
    h.scheduler.start();
    await h.clock.advance(30 * MIN);
    expect(h.gaps()[0]).toBeGreaterThanOrEqual(400 * S);
    expect(h.gaps()[0]).toBeLessThan(402 * S);
    await h.scheduler.stop();
  });

  it('repeated 429s without Retry-After back off exponentially up to a cap, and a success resets it', async () => {
    let storm = true;
    const h = setup({ random: () => 1, behave: (c) => (c === 'heartbeat' && storm ? { outcome: 'rate-limited' } : { outcome: 'ok' }) });
    h.scheduler.start();
    await h.clock.advance(30 * MIN);
    const g = h.gaps().map((x) => Math.round(x / S));
    // The service's ladder from 60 s (lib/backoff.ts rateLimitDelay): 60, 120, 240 s nominal, the draw of 1 at +25 %, at most 5 min.
    expect(g.slice(0, 6)).toEqual([75, 150, 300, 300, 300, 300]);
    storm = false;
    await h.clock.advance(10 * MIN);
    const n = h.outcomes.length;
    expect(h.outcomes[n - 1]?.result).toBe('ok');
    storm = true;
    await h.clock.advance(10 * MIN);
    const after = h.outcomes.findIndex((o, i) => i >= n && o.result === 'rate-limited');
    expect(h.outcomes[after]?.consecutiveFailures).toBe(1);
    await h.scheduler.stop();
  });

  it('5xx and timeouts retry with jittered backoff, never under 60 s', async () => {
    const h = setup({ behave: (c) => (c === 'heartbeat' ? { outcome: 'server' } : { outcome: 'ok' }) });
    h.scheduler.start();
    await h.clock.advance(2 * 60 * MIN);
    expect(Math.min(...h.gaps())).toBeGreaterThanOrEqual(60 * S);
    expect(Math.max(...h.gaps())).toBeLessThanOrEqual(300 * S + 1 * S);
    expect(h.outcomes.at(-1)?.consecutiveFailures).toBe(h.outcomes.length);
    await h.scheduler.stop();
  });

  it('stalls past 30 s: the client times out, and the retries back off (no health-probe shortcut)', async () => {
    const h = setup({ behave: (c) => (c === 'heartbeat' ? { outcome: 'ok', latencyMs: 40 * S } : { outcome: 'ok' }) });
    h.scheduler.start();
    await h.clock.advance(3 * 60 * MIN);
    const gaps = h.gaps();
    expect(h.outcomes.every((o) => o.error?.details.code === 'ETIMEDOUT')).toBe(true);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(30 * S + 62 * S);
    expect(gaps.reduce((a, b) => a + b, 0) / gaps.length).toBeGreaterThan(150 * S);
    expect(h.api.count('health')).toBe(0);
    await h.scheduler.stop();
  });

  it('offline: no backlog; on reconnection exactly one heartbeat, as soon as the 60 s rule allows', async () => {
    let down = false;
    const h = setup({ behave: () => (down ? { outcome: 'network', latencyMs: 3 * S } : { outcome: 'ok' }) });
    h.scheduler.start();
    await h.clock.advance(10 * MIN);
    down = true;
    await h.clock.advance(20 * MIN);
    const before = h.beats().length;
    const lastEnd = Math.max(...h.outcomes.map((o) => o.endedAt));
    const back = h.clock.now();
    down = false;
    await h.clock.advance(60 * S);
    const after = h.beats().filter((t) => t >= back);
    expect(h.beats().length - before).toBe(1);
    // Soon after the later of "back" and "60 s after the last attempt": within one probe interval.
    expect((after[0] as number) - Math.max(back, lastEnd + 62 * S)).toBeLessThanOrEqual(31 * S);
    expect(h.outcomes.at(-1)?.result).toBe('ok');
    await h.scheduler.stop();
  });

  it('wall-clock jumps of ±12 h change nothing', async () => {
    const run = async (jump: boolean): Promise<number[]> => {
      const h = setup({ random: seeded(11) });
      h.scheduler.start();
      for (let i = 0; i < 12; i++) {
        if (jump) h.clock.jumpWall((i % 2 ? -12 : 12) * 3_600_000);
        await h.clock.advance(10 * MIN);
      }
      await h.scheduler.stop();
      return h.beats().map((t) => t - h.t0);
    };
    expect(await run(true)).toEqual(await run(false));
  });

  it('stop() aborts the request in flight and leaves no timer behind', async () => {
    const h = setup({ behave: () => ({ outcome: 'ok', latencyMs: 20 * S }) });
    h.scheduler.start();
    await h.clock.advance(5 * S);
    expect(h.api.inFlight).toBe(1);
    await h.scheduler.stop();
    expect(h.api.inFlight).toBe(0);
    expect(h.clock.pendingCount).toBe(0);
    expect(h.saved.at(-1)?.endedAt).toBe(h.t0 + 5 * S);

    const idle = setup();
    idle.scheduler.start();
    await idle.clock.advance(3 * MIN);
    await idle.scheduler.stop();
    expect(idle.clock.pendingCount).toBe(0);
    const sent = idle.beats().length;
    await idle.clock.advance(60 * MIN);
    expect(idle.beats().length).toBe(sent);
  });

  it('a transport that ignores the abort signal cannot wedge the loop', async () => {
    const clock = new FakeClock();
    const outcomes: HeartbeatOutcome[] = [];
    let calls = 0;
    const scheduler = new HeartbeatScheduler({
      clock,
      random: seeded(1),
      transport: { heartbeat: () => (calls++, new Promise(() => {})), health: async () => ({}) },
      bounds: boundsOf(DEFAULT_TEST_BOUNDS),
      persist: async () => {},
      onOutcome: (o) => outcomes.push(o),
    });
    scheduler.start();
    await clock.advance(10 * MIN);
    expect(outcomes[0]?.error?.details.code).toBe('ETIMEDOUT');
    expect(calls).toBeGreaterThanOrEqual(3);
    await scheduler.stop();
  });
});
