import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { RateLimiter, take } from './rate-limit.js';
import type { BucketState } from './rate-limit.js';

describe('leaky bucket (pure, injected time)', () => {
  const cfg = { limit: 40, windowMs: 60_000 };

  it('matches the spec example: limit 40, window 60000, remaining 39 after one call', () => {
    const d = take(undefined, cfg, 0);
    expect(d).toMatchObject({ allowed: true, remaining: 39, retryAfterMs: 0 });
  });

  it('refuses the request that would overflow, and refills continuously at limit/window', () => {
    let s: BucketState | undefined;
    for (let i = 0; i < 40; i++) {
      const d = take(s, cfg, 0);
      expect(d.allowed).toBe(true);
      s = d.state;
    }
    const refused = take(s, cfg, 0);
    expect(refused).toMatchObject({ allowed: false, remaining: 0 });
    // One unit drains every 1500 ms (60000 / 40).
    expect(refused.retryAfterMs).toBe(1500);
    expect(take(refused.state, cfg, 1499).allowed).toBe(false);
    const again = take(refused.state, cfg, 1500);
    expect(again).toMatchObject({ allowed: true, remaining: 0 });
    // Half a window later half the bucket is free again: 20 left.
    const later = take(again.state, cfg, 1500 + 30_000);
    expect(later.remaining).toBe(19);
  });

  it('never goes below empty, however long the idle time', () => {
    const d = take({ level: 3, at: 0 }, cfg, 10 * 3600_000);
    expect(d.state.level).toBe(1);
    expect(d.remaining).toBe(39);
  });

  it('allows at most limit + elapsed * limit / window requests over any schedule', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 100, max: 10_000 }),
        fc.array(fc.integer({ min: 0, max: 2_000 }), { minLength: 1, maxLength: 200 }),
        (limit, windowMs, gaps) => {
          let s: BucketState | undefined;
          let t = 0;
          let allowed = 0;
          for (const g of gaps) {
            t += g;
            const d = take(s, { limit, windowMs }, t);
            expect(d.remaining).toBeGreaterThanOrEqual(0);
            expect(d.remaining).toBeLessThanOrEqual(limit - 1);
            if (d.allowed) allowed++;
            s = d.state;
          }
          expect(allowed).toBeLessThanOrEqual(limit + Math.floor(((t - gaps[0]!) * limit) / windowMs));
        },
      ),
    );
  });

  it('keeps one bucket per user and path, with per-path overrides', () => {
    const rl = new RateLimiter({ limit: 1, windowMs: 1000, paths: { '/v2/devices/assets': { limit: 5, windowMs: 1000 } } });
    expect(rl.take('a', '/x', 0).allowed).toBe(true);
    expect(rl.take('a', '/x', 0).allowed).toBe(false);
    expect(rl.take('b', '/x', 0).allowed).toBe(true);
    expect(rl.take('a', '/y', 0).allowed).toBe(true);
    const assets = rl.take('a', '/v2/devices/assets', 0);
    expect(assets).toMatchObject({ allowed: true, remaining: 4, config: { limit: 5, windowMs: 1000 } });
  });
});
