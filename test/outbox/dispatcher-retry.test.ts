// The dispatcher's waits: jittered backoff after a failure, the 429 ladder,
// the rate-limit headers, 401 and refresh, the dead letter after
// MAX_ATTEMPTS; then stop(), view() and onSettled. Times are agent ms since
// the rig's t0 on a FakeClock; random is 0.5 unless a test says otherwise, so
// a failure's wait is 1000 + 0.5 * (min(300000, 5000 * 2^n) - 1000).
import { describe, expect, it } from '@jest/globals';
import { MAX_ATTEMPTS } from '../../agent/outbox/dispatcher.js';
import { Rig, err, netErr, ok, starts, tooMany, type Step } from './dispatcher-fakes.js';

/** Fails the first `n` attempts with `fail(k)`, then succeeds. */
const failing =
  (n: number, fail: (k: number) => Error) =>
  (_item: unknown, k: number): Step =>
    k <= n ? fail(k) : ok;

/** Plays timers until the queue settles or `max` timers have fired. */
async function drain(r: Rig, max = 200): Promise<void> {
  for (let i = 0; i < max; i++) {
    const at = r.clock.nextAt();
    if (at === undefined) return;
    await r.clock.advance(at - r.clock.now());
  }
}

describe('dispatcher retry after a failure', () => {
  it('network and 5xx: jittered backoff from 1 s, growing, capped at 5 min; the failed item goes first again', async () => {
    const r = new Rig([], { window: 1 });
    const w = r.worker('channel-connect', (item, k) => (item.id === 'boot-1:1' ? failing(7, (i) => (i % 2 ? netErr() : err('server', 'the service answered 503', { status: 503 })))(item, k) : ok));
    r.outbox.put('channel-connect');
    r.outbox.put('channel-connect');
    await r.running();
    await drain(r);
    // Waits 5500, 10500, 20500, 40500, 80500, 150500, 150500.
    expect(starts(r, w)).toEqual([0, 5_500, 16_000, 36_500, 77_000, 157_500, 308_000, 458_500, 458_500]);
    expect(w.ids()).toEqual([...Array(8).fill('boot-1:1'), 'boot-1:2']);
  });

  it('the whole queue waits, other kinds included; the failed item is launched first when it ends', async () => {
    const r = new Rig();
    const order: string[] = [];
    const a = r.worker('upload', (item, k) => (order.push(item.id), k === 1 ? netErr() : ok));
    const b = r.worker('channel-sync', (item) => (order.push(item.id), ok));
    r.outbox.put('upload');
    const d = await r.running();
    r.outbox.put('channel-sync');
    d.kick();
    await r.clock.advance(5_499);
    expect(b.calls).toHaveLength(0);
    await r.clock.advance(1);
    expect(order).toEqual(['boot-1:1', 'boot-1:1', 'boot-1:2']);
    expect([starts(r, a), starts(r, b)]).toEqual([[0, 5_500], [5_500]]);
  });

  it('the wait stays within [1 s, 5 min] whatever the random number', async () => {
    for (const [random, expected] of [
      [() => 0, [1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000]],
      [() => 1, [10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]],
    ] as const) {
      const r = new Rig([], { random });
      const w = r.worker('channel-connect', failing(7, () => netErr()));
      r.outbox.put('channel-connect');
      await r.running();
      await drain(r);
      const s = starts(r, w);
      expect(s.slice(1).map((t, i) => t - s[i]!)).toEqual(expected);
    }
  });

  it('a success resets the backoff', async () => {
    const r = new Rig([], { window: 1 });
    const w = r.worker('channel-connect', (item, k) => (k <= 2 || k === 4 ? netErr() : ok));
    r.outbox.put('channel-connect');
    r.outbox.put('channel-connect');
    await r.running();
    await drain(r);
    // 1:1 fails twice (5500, 10500), then done; 1:2 fails once: back to 5500.
    expect(starts(r, w)).toEqual([0, 5_500, 16_000, 16_000, 21_500]);
  });
});

describe('dispatcher after a 429', () => {
  it('waits 1 s (random 0.5), doubling on each further 429 in a row, capped at 5 min', async () => {
    const r = new Rig();
    const w = r.worker('channel-connect', failing(11, () => tooMany()));
    r.outbox.put('channel-connect');
    await r.running();
    expect(r.d.view().waitingUntil).toBe(r.t0 + 1_000);
    await drain(r);
    const s = starts(r, w);
    expect(s.slice(1).map((t, i) => t - s[i]!)).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000, 300_000]);
  });

  it('the first wait is jittered within 0.75-1.25 s', async () => {
    for (const [random, wait] of [
      [() => 0, 750],
      [() => 0.999, 1_249.5],
    ] as const) {
      const r = new Rig([], { random });
      r.worker('channel-connect', failing(1, () => tooMany()));
      r.outbox.put('channel-connect');
      await r.running();
      expect(r.d.view().waitingUntil! - r.t0).toBeCloseTo(wait, 6);
    }
  });

  it('honours retryAfterMs when it is longer than the ladder, not when shorter', async () => {
    const r = new Rig();
    const w = r.worker('channel-connect', (_i, k) => (k === 1 ? tooMany(3_000) : k === 2 ? tooMany(500) : ok));
    r.outbox.put('channel-connect');
    await r.running();
    await drain(r);
    expect(starts(r, w)).toEqual([0, 3_000, 5_000]);
  });

  it('a success resets the ladder', async () => {
    const r = new Rig([], { window: 1 });
    const w = r.worker('channel-connect', (_i, k) => (k <= 2 || k === 4 ? tooMany() : ok));
    r.outbox.put('channel-connect');
    r.outbox.put('channel-connect');
    await r.running();
    await drain(r);
    expect(starts(r, w)).toEqual([0, 1_000, 3_000, 3_000, 4_000]);
  });
});

describe('dispatcher and the rate-limit headers', () => {
  it('remaining 0 of 10 per 1000 ms: the next launch waits 100 ms', async () => {
    const r = new Rig();
    const w = r.worker('channel-connect');
    r.rate = { remaining: 0, limit: 10, windowMs: 1_000 };
    r.outbox.put('channel-connect');
    const d = await r.running();
    expect(d.view().waitingUntil).toBe(r.t0 + 100);
    // Some other request's answer brings fresher headers meanwhile.
    r.rate = { remaining: 4, limit: 10, windowMs: 1_000 };
    await r.clock.advance(99);
    expect(w.calls).toHaveLength(0);
    await r.clock.advance(1);
    expect(starts(r, w)).toEqual([100]);
  });

  it('no wait while requests remain, or when the headers are incomplete', async () => {
    for (const rate of [{ remaining: 3, limit: 10, windowMs: 1_000 }, { remaining: 0 }, { remaining: 0, limit: 10 }]) {
      const r = new Rig();
      const w = r.worker('channel-connect');
      r.rate = rate;
      r.outbox.put('channel-connect');
      await r.running();
      expect(starts(r, w)).toEqual([0]);
    }
  });

  // BUG (dispatcher.ts pump): the headers are the last answer's, and nothing
  // new arrives while the queue waits. When the 100 ms timer fires, pump()
  // reads the same `remaining: 0` again, sees waitUntil <= now and waits
  // another 100 ms, for ever: the outbox stalls until some other request
  // (a heartbeat) happens to replace api.lastMeta.
  it('the 100 ms wait ends in a launch even though the headers are unchanged (no other traffic)', async () => {
    const r = new Rig([], { window: 1 });
    const w = r.worker('channel-connect', (_i) => {
      // This item's answer carries the headers: the bucket is now empty.
      r.rate = { remaining: 0, limit: 10, windowMs: 1_000 };
      return ok;
    });
    r.outbox.put('channel-connect');
    r.outbox.put('channel-connect');
    await r.running();
    await r.clock.advance(10_000);
    expect(starts(r, w)).toEqual([0, 100]);
  });
});

describe('dispatcher after a 401', () => {
  const unauthorized = (): Error => err('unauthorized', 'the service answered 401', { status: 401 });

  it("the token source is asked (the one 401 policy); 'retry' sends again at once", async () => {
    const r = new Rig();
    const w = r.worker('channel-connect', failing(1, unauthorized));
    r.outbox.put('channel-connect');
    const d = await r.running();
    expect(r.refreshCalls).toEqual(['the service answered 401 (channel-connect)']);
    expect(starts(r, w)).toEqual([0, 0]);
    expect(r.outbox.doneCalls.map((c) => [c.id, c.at - r.t0])).toEqual([['boot-1:1', 0]]);
    expect(d.view().waitingUntil).toBeUndefined();
  });

  it("'not-token', any other answer, or a verdict that throws, waits like a failure and says why", async () => {
    for (const answer of [async () => 'not-token', async () => 'unchanged', async (): Promise<string> => Promise.reject(new Error('token endpoint down'))]) {
      const r = new Rig();
      r.refreshAnswer = answer;
      const w = r.worker('channel-connect', failing(1, unauthorized));
      r.outbox.put('channel-connect');
      const d = await r.running();
      expect(r.refreshCalls).toHaveLength(1);
      expect(d.view().waitingUntil).toBe(r.t0 + 5_500);
      expect(d.view().attempts['boot-1:1']?.lastError).toMatch(/not a token problem/);
      await drain(r);
      expect(starts(r, w)).toEqual([0, 5_500]);
    }
  });

  it('without a refresh it waits like a failure', async () => {
    const r = new Rig([], { unauthorized: undefined });
    const w = r.worker('channel-connect', failing(1, unauthorized));
    r.outbox.put('channel-connect');
    await r.running();
    await drain(r);
    expect(r.refreshCalls).toEqual([]);
    expect(starts(r, w)).toEqual([0, 5_500]);
  });
});

describe('dispatcher dead letter', () => {
  it(`gives up after MAX_ATTEMPTS (${MAX_ATTEMPTS}) retries in a row of one item, with its last error`, async () => {
    expect(MAX_ATTEMPTS).toBe(50);
    const r = new Rig();
    const w = r.worker('channel-connect', (_i, k) => netErr(`boom #${k}`));
    r.outbox.put('channel-connect');
    const d = await r.running();
    for (let i = 0; i < 48; i++) await r.clock.advance(r.clock.nextAt()! - r.clock.now());
    expect(d.view().attempts).toEqual({ 'boot-1:1': { count: 49, lastError: 'boom #49' } });
    expect(r.outbox.deadCalls).toEqual([]);
    await drain(r);
    expect(w.calls).toHaveLength(50);
    expect(r.outbox.deadCalls.map((c) => [c.id, c.reason])).toEqual([['boot-1:1', 'gave up after 50 attempts: boom #50']]);
    expect(r.warnings().map((l) => l.msg)).toEqual(['outbox item dead-lettered: gave up after 50 attempts: boom #50']);
    expect(d.view().attempts).toEqual({});
    await r.clock.advance(3_600_000);
    expect(w.calls).toHaveLength(50);
  });

  it('an attempt that moved its work forward starts a new row: a long job failing now and then between progress is never given up', async () => {
    const r = new Rig();
    // Every attempt fails, but every third one recorded progress first (a real-time upload's parts).
    const w = r.worker('channel-connect', (_i, k) => (k <= 3 * MAX_ATTEMPTS ? { result: 'retry', error: netErr(`boom #${k}`), ...(k % 3 === 0 && { progressed: true }) } as Step : ok));
    r.outbox.put('channel-connect');
    const d = await r.running();
    await drain(r, 4 * MAX_ATTEMPTS);
    expect(w.calls).toHaveLength(3 * MAX_ATTEMPTS + 1);
    expect(r.outbox.deadCalls).toEqual([]);
    expect(d.view().attempts).toEqual({});
  });

  it("a 401 whose verdict is 'retry' every time is still dead after MAX_ATTEMPTS (a token source that misbehaves cannot loop forever)", async () => {
    const r = new Rig();
    const w = r.worker('channel-connect', () => err('unauthorized', 'the service answered 401', { status: 401 }));
    r.outbox.put('channel-connect');
    await r.running();
    expect(w.calls).toHaveLength(50);
    expect(starts(r, w).every((t) => t === 0)).toBe(true);
    expect(r.outbox.deadCalls.map((c) => c.reason)).toEqual(['gave up after 50 attempts: the service answered 401']);
  });
});
