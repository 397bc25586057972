// The first heartbeat after a boot: spread as a steady fleet's heartbeats
// are when the runtime record is gone shortly after boot (a site-wide power
// cut), never delayed otherwise, never inside the 60 s rule, never later
// than the 300 s promise allows after the device check.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { BOOT, RECENT_BOOT_MS, boundsOf, earliestNext, firstAttemptAt, type Bounds } from '../../agent/daemon/heartbeat/policy.js';
import { MAX_AFTER_SUCCESS_MS, MIN_SPACING_MS, SPACING_MARGIN_MS } from '../../agent/lib/timing.js';
import { DEFAULT_TEST_BOUNDS } from '../support/bounds.js';

const S = 1000;
const bounds = boundsOf(DEFAULT_TEST_BOUNDS);
const EARLIEST_AFTER_BOOT = BOOT + MIN_SPACING_MS + SPACING_MARGIN_MS;
const never = (): number => {
  throw new Error('random() must not be drawn here');
};
const draws = (...values: number[]) => {
  let i = 0;
  return (): number => values[i++ % values.length] as number;
};
function lcg(seed: number): () => number {
  let x = seed;
  return () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

/** A thousand units booting within one minute of each other: when each first reaches the service (ms after the power came back). */
function rebootWave(b: Bounds, seed: number): number[] {
  const random = lcg(seed);
  return Array.from({ length: 1000 }, () => {
    const bootOffset = random() * 60 * S;
    const startedAt = 10 * S; // the agent starts (and its device check answers) 10 s after its own boot
    return bootOffset + firstAttemptAt(undefined, startedAt, b, random);
  });
}

const busiest = (times: number[], windowMs: number): number => {
  const sorted = [...times].sort((x, y) => x - y);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while ((sorted[i] as number) - (sorted[j] as number) >= windowMs) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
};

describe('firstAttemptAt', () => {
  it('no record shortly after boot: the earliest plus a share of a length-weighted interval, as the draws say', () => {
    const { minMs: a, maxMs: b } = bounds;
    expect(firstAttemptAt(undefined, 15 * S, bounds, draws(0.3, 0))).toBe(EARLIEST_AFTER_BOOT);
    const interval = Math.sqrt(a * a + 0.5 * (b * b - a * a));
    expect(firstAttemptAt(undefined, 15 * S, bounds, draws(0.5, 0.5))).toBeCloseTo(EARLIEST_AFTER_BOOT + 0.5 * interval);
    // The longest draw is capped: within MAX_AFTER_SUCCESS_MS of the start (the device check just before it).
    expect(firstAttemptAt(undefined, 15 * S, bounds, draws(0.999999, 0.999999))).toBeCloseTo(Math.min(EARLIEST_AFTER_BOOT + b, 15 * S + MAX_AFTER_SUCCESS_MS));
  });

  it('a thousand units rebooting within one minute reach the service at about the fleet usual rate, not in a one-minute wave', () => {
    for (const p of [DEFAULT_TEST_BOUNDS, { minSeconds: 90, maxSeconds: 180 }, { minSeconds: 60, maxSeconds: 120 }]) {
      const b = boundsOf(p);
      const usualPerMinute = (1000 * 60 * S) / ((b.minMs + b.maxMs) / 2);
      const firsts = rebootWave(b, 42);
      // Before: all 1000 within one minute. Now: about the usual rate (plus noise and the clipped tail).
      expect(busiest(firsts, 60 * S)).toBeLessThan(usualPerMinute * 1.5);
      expect(Math.max(...firsts) - Math.min(...firsts)).toBeGreaterThan(b.minMs);
    }
  });

  it('a process started long after boot with no record (first start, wiped runtime dir) goes at once', () => {
    const now = RECENT_BOOT_MS + 1;
    expect(firstAttemptAt(undefined, now, bounds, never)).toBe(now);
    expect(firstAttemptAt(undefined, 3 * 3600 * S, bounds, never)).toBe(3 * 3600 * S);
  });

  it('a record (a restart, not a reboot) is never spread: the spacing alone decides', () => {
    const rec = { startedAt: 100 * S, endedAt: 101 * S };
    expect(firstAttemptAt(rec, 120 * S, bounds, never)).toBe(earliestNext(101 * S));
    expect(firstAttemptAt(rec, 400 * S, bounds, never)).toBe(400 * S);
  });

  it('property: never before now or the 60 s rule from boot, never later than the draw or MAX_AFTER_SUCCESS_MS after now', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 * RECENT_BOOT_MS }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        fc.integer({ min: 60, max: 255 }),
        fc.integer({ min: 0, max: 195 }),
        (now, d1, d2, minSeconds, extra) => {
          const b = boundsOf({ minSeconds, maxSeconds: Math.min(255, minSeconds + extra) });
          const at = firstAttemptAt(undefined, now, b, draws(d1, d2));
          expect(at).toBeGreaterThanOrEqual(now);
          expect(at).toBeGreaterThanOrEqual(EARLIEST_AFTER_BOOT);
          expect(at).toBeLessThanOrEqual(Math.max(now, EARLIEST_AFTER_BOOT + b.maxMs));
          expect(at).toBeLessThanOrEqual(Math.max(EARLIEST_AFTER_BOOT, now + MAX_AFTER_SUCCESS_MS));
        },
      ),
    );
  });
});
