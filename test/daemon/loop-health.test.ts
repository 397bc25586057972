import { describe, expect, it } from '@jest/globals';
import { HEALTH_GRACE_MS, loopHealthy } from '../../agent/daemon/loop-health.js';
import { ATTEMPT_GUARD_MS } from '../../agent/lib/timing.js';

const idle = { running: true, nextAt: 100_000, probeAt: undefined, inFlightSince: undefined };

describe('loopHealthy (the watchdog question)', () => {
  it('a heartbeat armed and not overdue is healthy; far past its time is not', () => {
    expect(loopHealthy({ now: 100_000 + HEALTH_GRACE_MS, checkingSince: undefined, scheduler: idle, checkAt: undefined })).toBe(true);
    expect(loopHealthy({ now: 100_001 + HEALTH_GRACE_MS, checkingSince: undefined, scheduler: idle, checkAt: undefined })).toBe(false);
  });

  it('a request in flight is healthy until well past its guard', () => {
    const inFlight = { ...idle, inFlightSince: 0 };
    expect(loopHealthy({ now: ATTEMPT_GUARD_MS + HEALTH_GRACE_MS, checkingSince: undefined, scheduler: inFlight, checkAt: undefined })).toBe(true);
    expect(loopHealthy({ now: ATTEMPT_GUARD_MS + HEALTH_GRACE_MS + 1, checkingSince: undefined, scheduler: inFlight, checkAt: undefined })).toBe(false);
  });

  it('before heartbeats run (offline, needs-pairing): an armed device check counts; nothing armed is a wedge', () => {
    expect(loopHealthy({ now: 10, checkingSince: undefined, scheduler: undefined, checkAt: 1_000 })).toBe(true);
    expect(loopHealthy({ now: 10, checkingSince: 5, scheduler: undefined, checkAt: undefined })).toBe(true);
    expect(loopHealthy({ now: 10, checkingSince: undefined, scheduler: undefined, checkAt: undefined })).toBe(false);
    expect(loopHealthy({ now: ATTEMPT_GUARD_MS + HEALTH_GRACE_MS + 1, checkingSince: 0, scheduler: undefined, checkAt: undefined })).toBe(false);
  });
});
