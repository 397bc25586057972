// A service that is up (GET /health answers) while one path resets the
// connection: the daemon backs off as for any failure, not retrying every
// 62 agent-s (heartbeat) or every few seconds (start-up check) forever. In
// agent time (rig.ts): every wait is held to its backoff's bounds, exactly.
import { afterEach, describe, expect, it } from '@jest/globals';
import { MIN_SPACING_MS, SPACING_MARGIN_MS } from '../../agent/lib/timing.js';
import { MINUTE, Rig, SECOND } from './rig.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const gaps = (ts: number[]): number[] => ts.slice(1).map((t, i) => t - ts[i]!);
/** Full-jitter backoff's bounds (agent/lib/backoff.ts) for the n-th retry, 0-based. */
const ceiling = (baseMs: number, capMs: number, floorMs: number, n: number): number => Math.max(floorMs, Math.min(capMs, baseMs * 2 ** n));

describe('reset on one path while /health answers', () => {
  it('start-up check: backoff from 2 s up to 5 min, no probes (was 76 GETs and 73 /health in 10 agent-min)', async () => {
    const r = (rig = await Rig.up({ credentials: 'env' }));
    r.cloud.control.addFault({ kind: 'reset', path: '/v2/devices/me' });
    r.start();
    await r.advance(10 * MINUTE);
    const checks = r.sent.filter((s) => s.path === '/v2/devices/me').map((s) => s.t);
    // CHECK_BACKOFF (check-schedule.ts, through lib/backoff.ts): uniform in [2 s, min(5 min, 5 s * 2^n)] after the n-th failure (n from 1).
    gaps(checks).forEach((g, i) => {
      expect(g).toBeGreaterThanOrEqual(2 * SECOND);
      expect(g).toBeLessThanOrEqual(ceiling(5 * SECOND, 5 * MINUTE, 2 * SECOND, i + 1));
    });
    expect(checks.length).toBeGreaterThan(2);
    expect(checks.length).toBeLessThanOrEqual(20);
    expect(r.sent.filter((s) => s.path === '/health')).toEqual([]);
    expect(r.sent.filter((s) => s.path === '/v2/devices/heartbeat')).toEqual([]);
    expect(r.state()).toBe('offline');
  });

  it('heartbeat: attempts spaced by the backoff, 62 s to 5 min (was 19 in 20 agent-min, 62.4 s apart)', async () => {
    const r = (rig = await Rig.up({ credentials: 'env' }));
    const device = r.device;
    r.start();
    await r.until('a heartbeat accepted', () => r.cloud.referee(device.id).successfulHeartbeats > 0, 5 * MINUTE);
    const fault = r.cloud.control.addFault({ kind: 'reset', path: '/v2/devices/heartbeat' });
    const from = r.now();
    await r.advance(20 * MINUTE);
    fault.remove();
    const beats = r.sent.filter((s) => s.path === '/v2/devices/heartbeat' && s.t > from).map((s) => s.t);
    // HEARTBEAT_BACKOFF (policy.ts, through lib/backoff.ts): the spacing at least, else uniform in [60 s, min(5 min, 30 s * 2^n)].
    gaps(beats).forEach((g, i) => {
      expect(g).toBeGreaterThanOrEqual(MIN_SPACING_MS + SPACING_MARGIN_MS);
      expect(g).toBeLessThanOrEqual(Math.max(MIN_SPACING_MS + SPACING_MARGIN_MS, ceiling(30 * SECOND, 5 * MINUTE, MIN_SPACING_MS, i + 1)));
    });
    expect(beats.length).toBeGreaterThan(3);
    expect(beats.length).toBeLessThanOrEqual(13);
    expect(r.cloud.referee(device.id).tooSoon).toBe(0);
    // No probe while the service answers /health: a reset on one path says nothing of the others.
    expect(r.sent.filter((s) => s.path === '/health' && s.t > from).length).toBeLessThanOrEqual(beats.length);
  });
});
