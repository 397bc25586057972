import { describe, expect, it } from '@jest/globals';
import { FakeClock } from '../support/fake-clock.js';
import { sleep as agentSleep } from '../../agent/lib/clock.js';
import { backoffDelay } from '../../agent/lib/backoff.js';

describe('FakeClock', () => {
  it('fires timers in time order and lets their promise chains settle', async () => {
    const clock = new FakeClock(0);
    const seen: string[] = [];
    clock.setTimer(() => seen.push('b'), 200);
    clock.setTimer(() => seen.push('a'), 100);
    const slept = agentSleep(clock, 150).then(() => seen.push('slept'));
    await clock.advance(1000);
    await slept;
    expect(seen).toEqual(['a', 'slept', 'b']);
    expect(clock.now()).toBe(1000);
  });

  it('sleep rejects when aborted and leaves no timer behind', async () => {
    const clock = new FakeClock(0);
    const ac = new AbortController();
    const p = agentSleep(clock, 1000, ac.signal);
    ac.abort(new Error('stop'));
    await expect(p).rejects.toThrow('stop');
    expect(clock.pendingCount).toBe(0);
  });

  it('a wall-clock jump does not move monotonic time', () => {
    const clock = new FakeClock(5);
    clock.jumpWall(-12 * 3600_000);
    expect(clock.now()).toBe(5);
  });
});

describe('backoffDelay', () => {
  it('stays within [floor, cap] for every attempt', () => {
    const policy = { baseMs: 1000, capMs: 60_000, floorMs: 500 };
    for (let attempt = 0; attempt < 50; attempt++) {
      for (const r of [0, 0.5, 0.999]) {
        const d = backoffDelay(policy, attempt, () => r);
        expect(d).toBeGreaterThanOrEqual(500);
        expect(d).toBeLessThanOrEqual(60_000);
      }
    }
    expect(backoffDelay(policy, 3, () => 1)).toBe(8000);
  });
});
