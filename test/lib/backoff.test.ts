// lib/backoff.ts, the one home of the retry rules (issue 30): the Backoff
// object's rows and waits, the one 429 formula, the one Retry-After clamp;
// then each loop that retries, where its copy of the rule used to disagree
// with the others: the heartbeat's 429 ladder (a jitter that let the spacing
// flatten two rungs into equal waits), the outbox's empty-bucket wait (no
// bound), the token source's refresh and pairing's code requests (a 429's
// Retry-After ignored).
import { afterEach, beforeEach, describe, expect, it, test } from '@jest/globals';
import { Backoff, dripMs, honoured, rateLimitDelay, retryAfterOf, SERVICE_429_LADDER } from '../../agent/lib/backoff.js';
import { AgentError } from '../../agent/lib/errors.js';
import { MAX_RETRY_AFTER_MS } from '../../agent/lib/timing.js';
import { HeartbeatScheduler, type HeartbeatOutcome } from '../../agent/daemon/heartbeat/scheduler.js';
import { boundsOf } from '../../agent/daemon/heartbeat/policy.js';
import { pairDevice } from '../../agent/auth/pairing.js';
import { FakeClock } from '../support/fake-clock.js';
import { DEFAULT_TEST_BOUNDS } from '../support/bounds.js';
import { FakeApi } from '../daemon/fake-api.js';
import { Rig, ok, tooMany } from '../outbox/dispatcher-fakes.js';
import { CLIENT, FakeOAuth, networkDown, tempDir } from '../support/auth-fixtures.js';
import { makeSource } from '../support/token-source-harness.js';

const S = 1000;
const MIN = 60 * S;
const limited = (retryAfterMs?: number): AgentError => new AgentError('rate-limited', '429', retryAfterMs === undefined ? { status: 429 } : { status: 429, retryAfterMs });
const down = (): AgentError => new AgentError('network', 'down', { code: 'ECONNREFUSED' });

describe('Backoff', () => {
  it('a failure climbs the full-jitter ladder; a success starts it over', () => {
    const b = new Backoff({ failure: { baseMs: 5_000, capMs: 300_000, floorMs: 1_000 }, random: () => 1 });
    expect([b.failed(down()), b.failed(down()), b.failed(down())]).toEqual([10_000, 20_000, 40_000]);
    expect(b.failures).toBe(3);
    b.succeeded();
    expect(b.failures).toBe(0);
    expect(b.failed(down())).toBe(10_000);
  });

  it('a 429 climbs its own ladder; another failure ends a row of 429s, a 429 does not end a row of failures', () => {
    const b = new Backoff({ failure: { baseMs: 5_000, capMs: 300_000, floorMs: 1_000 }, rateLimit: SERVICE_429_LADDER, random: () => 0.5 });
    expect([b.failed(limited()), b.failed(limited()), b.failed(limited())]).toEqual([1_000, 2_000, 4_000]);
    expect(b.failed(down())).toBe(5_500);
    expect(b.rateLimits).toBe(0);
    expect(b.failed(limited())).toBe(1_000);
    expect(b.failed(down())).toBe(10_500);
    expect([b.failures, b.inARow]).toEqual([2, 6]);
  });

  it('Retry-After is honoured when longer than the ladder, at most MAX_RETRY_AFTER_MS, never negative', () => {
    const b = new Backoff({ failure: { baseMs: 5_000, capMs: 300_000 }, rateLimit: SERVICE_429_LADDER, random: () => 0.5 });
    expect(b.failed(limited(90 * S))).toBe(90 * S);
    expect(b.failed(limited(24 * 3600 * S))).toBe(MAX_RETRY_AFTER_MS);
    expect(b.failed(limited(-5))).toBe(4_000);
    expect(b.failed(limited(Number.NaN))).toBe(8_000);
    expect([honoured(undefined), honoured(Infinity), honoured(-1), honoured(1_500)]).toEqual([0, MAX_RETRY_AFTER_MS, 0, 1_500]);
    expect(retryAfterOf(down())).toBe(0);
  });

  it('without a 429 ladder, a 429 counts as a failure and still waits at least its Retry-After', () => {
    const b = new Backoff({ failure: { baseMs: 30_000, capMs: 600_000, floorMs: 15_000 }, random: () => 0 });
    expect(b.failed(limited(20 * MIN))).toBe(20 * MIN);
    expect(b.failures).toBe(1);
    expect(b.failed(limited())).toBe(15_000);
  });

  it('count() keeps the rows without drawing a random number', () => {
    let draws = 0;
    const b = new Backoff({ failure: { baseMs: 1, capMs: 2 }, rateLimit: SERVICE_429_LADDER, random: () => (draws++, 0.5) });
    expect(b.count(limited())).toBe(true);
    expect(b.count(down())).toBe(false);
    expect([draws, b.inARow, b.failures, b.rateLimits]).toEqual([0, 2, 1, 0]);
  });

  it('the 429 formula: every further 429 waits longer than the one before, whatever the draws', () => {
    for (const ladder of [SERVICE_429_LADDER, { baseMs: 60_000, capMs: 300_000 }]) {
      for (let n = 1; ladder.baseMs * 2 ** n <= ladder.capMs / 1.25; n++) {
        expect(rateLimitDelay(ladder, n + 1, undefined, () => 0)).toBeGreaterThan(rateLimitDelay(ladder, n, undefined, () => 0.999999));
      }
    }
  });

  it('the drip of an empty bucket: window / limit, undefined when the headers do not say', () => {
    expect(dripMs({ limit: 10, windowMs: 1_000, remaining: 0 })).toBe(100);
    expect(dripMs({ limit: 0, windowMs: 1_000 })).toBeUndefined();
    expect(dripMs({ windowMs: 1_000 })).toBeUndefined();
    expect(dripMs(undefined)).toBeUndefined();
  });
});

describe('the heartbeat under 429s', () => {
  // The heartbeat's own copy drew its 429 wait in [expo/2, expo]: with the 60 s spacing as a floor, a high
  // draw on the first 429 and a low one on the second gave 62 s twice, though the service asks for a longer
  // pause on every further 429.
  it('each 429 in a row waits longer than the one before, even with draws high then low', async () => {
    const clock = new FakeClock(10_000_000);
    const api = new FakeApi(clock, (c) => (c === 'heartbeat' ? { outcome: 'rate-limited', rateLimit: {} } : { outcome: 'ok' }));
    const outcomes: HeartbeatOutcome[] = [];
    let k = 0;
    const scheduler = new HeartbeatScheduler({
      clock,
      random: () => (k++ % 2 === 0 ? 0.999999 : 0),
      transport: api,
      bounds: boundsOf(DEFAULT_TEST_BOUNDS),
      persist: async () => undefined,
      onOutcome: (o) => void outcomes.push(o),
    });
    scheduler.start();
    await clock.advance(20 * MIN);
    await scheduler.stop();
    const beats = api.calls.filter((c) => c.call === 'heartbeat').map((c) => c.t);
    const gaps = beats.slice(1, 4).map((t, i) => t - (beats[i] as number));
    expect(gaps).toHaveLength(3);
    for (let i = 1; i < gaps.length; i++) expect(gaps[i]).toBeGreaterThan(gaps[i - 1] as number);
    expect(outcomes.slice(0, 3).map((o) => o.consecutiveFailures)).toEqual([1, 2, 3]);
  });
});

describe('the outbox and the rate-limit headers', () => {
  // The dispatcher's own copy of the drip (window / limit) had no bound: a proxy's or a broken service's
  // x-ratelimit-window of a few years held the whole queue that long.
  it('an empty bucket with an absurd window waits at most MAX_RETRY_AFTER_MS', async () => {
    const r = new Rig();
    r.worker('channel-connect');
    r.rate = { remaining: 0, limit: 1, windowMs: 1e12 };
    r.outbox.put('channel-connect');
    const d = await r.running();
    expect(d.view().waitingUntil).toBe(r.t0 + MAX_RETRY_AFTER_MS);
  });

  it('a 429 waits the service ladder or its Retry-After, whichever is longer, bounded at the hour', async () => {
    const r = new Rig();
    r.worker('channel-connect', (_i, k) => (k === 1 ? tooMany(1e12) : ok));
    r.outbox.put('channel-connect');
    await r.running();
    expect(r.d.view().waitingUntil).toBe(r.t0 + MAX_RETRY_AFTER_MS);
  });
});

describe('a 429 on the token endpoint', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => {
    tmp = tempDir('c2c-backoff-');
  });
  afterEach(() => tmp.cleanup());

  // The token source's own backoff ignored Retry-After: a refresh answered 429 "retry in 20 min" was tried
  // again within a minute.
  test('a refresh answered 429 with Retry-After is not tried again before it', async () => {
    const h = makeSource({ dir: tmp.dir, random: () => 0.5 });
    h.source.reload();
    h.source.start();
    h.oauth.onRefresh = () => Promise.reject(limited(20 * MIN));
    await expect(h.source.refresh('a 401')).rejects.toMatchObject({ kind: 'rate-limited' });
    expect(h.armedIn()).toBe(20 * MIN);
    await h.source.stop();
  });

  // Pairing's code requests drew [1 s, 4 s] after a 429 whatever its Retry-After.
  test('pairing: a new code asked for after a 429 waits its Retry-After', async () => {
    const clock = new FakeClock(1_000_000);
    const oauth = new FakeOAuth();
    const codeTimes: number[] = [];
    const code = { deviceCode: 'dc', userCode: '123456', verificationUri: 'https://svc.example/pair', verificationUriComplete: 'https://svc.example/pair?c=1', expiresInSeconds: 10, intervalSeconds: 5 };
    oauth.onCode = async () => {
      codeTimes.push(clock.now() - 1_000_000);
      if (codeTimes.length === 2) throw limited(40 * S);
      if (codeTimes.length === 3) throw networkDown();
      return code;
    };
    oauth.onPoll = async () => ({ kind: 'pending' });
    const ac = new AbortController();
    const done = pairDevice({ oauth, client: CLIENT, clock, random: () => 0.5, signal: ac.signal, timeoutMs: 200 * S, onEvent: () => undefined }).catch(() => undefined);
    await clock.advance(100 * S);
    ac.abort(new Error('test over'));
    await done;
    // The first code expires at 10 s; the second request is refused with 429 (Retry-After 40 s); the third
    // fails on the network: its backoff alone, a few seconds (no Retry-After to honour).
    expect(codeTimes.slice(0, 3)).toEqual([0, 10 * S, 50 * S]);
    expect(codeTimes[3]! - codeTimes[2]!).toBeLessThan(5 * S);
  });
});
