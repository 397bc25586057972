// The controller after a 401 when the token source can refresh: refresh once,
// confirm with one GET /v2/devices/me, and never let a 401 become a loop.
// Time on the harness's FakeClock; the token source is the harness's hook.
import { describe, expect, it } from '@jest/globals';
import type { RefreshResult } from '../../agent/auth/token-source.js';
import { AgentError } from '../../agent/lib/errors.js';
import { HOUR, MIN, S, setup } from './controller-harness.js';
import type { Behaviour, Call } from './fake-api.js';

const T0 = 1_000_000;
const ok: Behaviour = { outcome: 'ok' };
const unauthorized: Behaviour = { outcome: 'unauthorized' };

/** The api calls made from `since` on, by kind. */
function callsSince(h: ReturnType<typeof setup>, since: number): Record<Call, number> {
  const out: Record<Call, number> = { getDevice: 0, heartbeat: 0, health: 0 };
  for (const c of h.api.calls) if (c.t >= since) out[c.call]++;
  return out;
}

const heartbeatGaps = (h: ReturnType<typeof setup>): number[] => {
  const t = h.api.calls.filter((c) => c.call === 'heartbeat').map((c) => c.t);
  return t.slice(1).map((x, i) => x - t[i]!);
};

describe('a heartbeat 401 with a token source that can refresh', () => {
  it('refreshed: one GET /v2/devices/me, heartbeats resume, online throughout, no needs-pairing', async () => {
    let tokenGood = true;
    const h = setup({
      behave: (c) => (!tokenGood && c !== 'health' ? unauthorized : ok),
      refresh: async () => {
        tokenGood = true;
        return 'refreshed';
      },
    });
    h.controller.start();
    await h.clock.advance(10 * MIN);
    expect(h.controller.currentState).toBe('online');
    const beats = h.api.count('heartbeat');
    const checks = h.api.count('getDevice');
    tokenGood = false; // the access token expired
    await h.clock.advance(6 * MIN);
    expect(h.refreshes()).toBe(1);
    expect(h.api.count('getDevice')).toBe(checks + 1);
    expect(h.controller.currentState).toBe('online');
    const resumed = h.api.count('heartbeat');
    expect(resumed).toBeGreaterThan(beats + 1);
    await h.clock.advance(20 * MIN);
    expect(h.api.count('heartbeat')).toBeGreaterThanOrEqual(resumed + 4);
    expect(h.api.count('getDevice')).toBe(checks + 1);
    expect(h.refreshes()).toBe(1);
    expect(h.transitions()).toEqual(['starting->online']);
    // The restarted scheduler keeps the 60 s rule across the 401.
    expect(Math.min(...heartbeatGaps(h))).toBeGreaterThanOrEqual(60 * S);
    await h.controller.stop();
  });

  it('a 401 at start-up: refreshed, checked again, online', async () => {
    let tokenGood = false;
    const h = setup({
      behave: (c) => (!tokenGood && c !== 'health' ? unauthorized : ok),
      refresh: async () => {
        tokenGood = true;
        return 'refreshed';
      },
    });
    h.controller.start();
    await h.clock.advance(5 * S);
    expect(h.refreshes()).toBe(1);
    expect(h.api.count('getDevice')).toBe(2);
    expect(h.controller.currentState).toBe('online');
    expect(h.transitions()).toEqual(['starting->online']);
    await h.controller.stop();
  });

  it('a 401 again right after a good refresh (GET 401 too): needs-pairing, then only needs-pairing checks', async () => {
    let revoked = false;
    const h = setup({ behave: (c) => (revoked && c !== 'health' ? unauthorized : ok), refresh: async () => 'refreshed' });
    h.controller.start();
    await h.clock.advance(10 * MIN);
    revoked = true;
    await h.clock.advance(6 * MIN);
    expect(h.controller.currentState).toBe('needs-pairing');
    expect(h.refreshes()).toBe(1);
    const since = h.clock.now();
    await h.clock.advance(2 * HOUR);
    const after = callsSince(h, since);
    expect(after.heartbeat).toBe(0);
    // needs-pairing looks again every 15 to 30 minutes: 4 to 8 GETs in 2 hours.
    expect(after.getDevice).toBeGreaterThanOrEqual(4);
    expect(after.getDevice).toBeLessThanOrEqual(8);
    expect(h.refreshes()).toBe(1);
    expect(h.transitions()).toEqual(['starting->online', 'online->needs-pairing']);
    await h.controller.stop();
  });

  it('heartbeats refused again right after a good refresh while GET /v2/devices/me passes: needs-pairing, no refresh loop', async () => {
    // The GET and the refresh succeed, every heartbeat is 401: without a refresh
    // hook the second 401 in a row settles it; a refresh must not reset that.
    const h = setup({ behave: (c, t) => (c === 'heartbeat' && t > T0 + 5 * MIN ? unauthorized : ok), refresh: async () => 'refreshed' });
    h.controller.start();
    await h.clock.advance(5 * MIN);
    const since = h.clock.now();
    await h.clock.advance(2 * HOUR);
    const after = callsSince(h, since);
    // One refresh for the whole streak: a refreshed token refused again is not refreshed again.
    expect(h.refreshes()).toBe(1);
    // needs-pairing still re-checks every 15 to 30 minutes (a spurious 401 storm heals by
    // itself); a check that passes earns one heartbeat, whose 401 ends it at once: at most
    // the 2 of the streak plus one per re-check, never a loop.
    expect(after.heartbeat).toBeLessThanOrEqual(2 + 8);
    expect(after.getDevice).toBeLessThanOrEqual(2 + 8);
    expect(h.controller.currentState).toBe('needs-pairing');
    await h.controller.stop();
  });
});

describe('a second 401 while the refresh is still in flight', () => {
  it('a GET sent with the old token (SIGHUP, or the hourly re-verify) answering 401 during a good refresh: no needs-pairing', async () => {
    let tokenGood = true;
    const h = setup({
      // A slow answer: the GET is still in flight when the refresh completes.
      behave: (c) => (!tokenGood && c !== 'health' ? { ...unauthorized, latencyMs: 10 * S } : ok),
      refresh: async () => {
        await new Promise<void>((resolve) => h.clock.setTimer(resolve, 5 * S));
        tokenGood = true;
        return 'refreshed';
      },
    });
    h.controller.start();
    await h.clock.advance(10 * MIN);
    tokenGood = false;
    // Step to the heartbeat that meets the 401 (it answers after 10 s) and its refresh starting.
    while (h.refreshes() === 0) await h.clock.advance(1 * S);
    h.controller.reload(); // checks at once, with the token the refresh is replacing
    await h.clock.advance(1 * MIN);
    expect(h.refreshes()).toBe(1);
    expect(h.controller.currentState).toBe('online');
    expect(h.transitions()).toEqual(['starting->online']);
    await h.controller.stop();
  });
});

describe('a refresh the service refuses', () => {
  it('refused + tokensRejected(): needs-pairing in one transition, no confirming GET, no heartbeats after', async () => {
    let revoked = false;
    const h = setup({
      behave: (c) => (revoked && c !== 'health' ? unauthorized : ok),
      refresh: async (): Promise<RefreshResult> => {
        // The token source calls onRejected before it resolves 'refused'.
        h.controller.tokensRejected('needs pairing: the service refused the refresh token (invalid_grant); run `c2c-agent pair`');
        return 'refused';
      },
    });
    h.controller.start();
    await h.clock.advance(10 * MIN);
    const checks = h.api.count('getDevice');
    const beats = h.api.count('heartbeat');
    revoked = true;
    await h.clock.advance(6 * MIN);
    expect(h.controller.currentState).toBe('needs-pairing');
    expect(h.api.count('heartbeat')).toBe(beats + 1);
    expect(h.api.count('getDevice')).toBe(checks);
    expect(h.transitions()).toEqual(['starting->online', 'online->needs-pairing']);
    expect(h.logs.find((l) => l.to === 'needs-pairing')?.reason).toMatch(/invalid_grant/);
    expect(h.published.filter((p) => p.transition && p.snap.state === 'needs-pairing')).toHaveLength(1);
    const since = h.clock.now();
    await h.clock.advance(2 * HOUR);
    const after = callsSince(h, since);
    expect(after.heartbeat).toBe(0);
    expect(after.getDevice).toBeLessThanOrEqual(8);
    expect(h.refreshes()).toBe(1);
    expect(h.transitions()).toEqual(['starting->online', 'online->needs-pairing']);
    await h.controller.stop();
  });

  it('tokensRejected() from a refresh ahead of expiry (no 401): needs-pairing; a new credentials file brings it back online', async () => {
    let print = 'file-1';
    let valid = true;
    const h = setup({ fingerprint: () => print, behave: (c) => (!valid && c !== 'health' ? unauthorized : ok) });
    h.controller.start();
    await h.clock.advance(10 * MIN);
    valid = false;
    h.controller.tokensRejected('needs pairing: the service refused the refresh token (invalid_grant)');
    h.controller.tokensRejected('needs pairing: again');
    expect(h.controller.currentState).toBe('needs-pairing');
    await h.clock.advance(10 * MIN);
    print = 'file-2';
    valid = true;
    await h.clock.advance(11 * S); // the next 10 s poll of the file, then the GET
    expect(h.controller.currentState).toBe('online');
    expect(h.transitions()).toEqual(['starting->online', 'online->needs-pairing', 'needs-pairing->online']);
    await h.controller.stop();
  });
});

describe('a refresh that cannot reach the service', () => {
  it('rejects with a network error: offline, a confirm check later, online once the network and the refresh work', async () => {
    let tokenGood = true;
    let netDown = false;
    let refreshAttempts = 0;
    const h = setup({
      behave: (c) => (netDown ? { outcome: 'network' } : !tokenGood && c !== 'health' ? unauthorized : ok),
      refresh: async () => {
        refreshAttempts++;
        if (netDown || refreshAttempts === 1) {
          netDown = true; // the network drops just as the 401 came back
          throw new AgentError('network', 'POST /v2/auth/token: connection refused', { code: 'ECONNREFUSED' });
        }
        tokenGood = true;
        return 'refreshed';
      },
    });
    h.controller.start();
    await h.clock.advance(10 * MIN);
    const checks = h.api.count('getDevice');
    tokenGood = false;
    await h.clock.advance(6 * MIN);
    expect(h.refreshes()).toBe(1);
    expect(h.controller.currentState).toBe('offline');
    expect(h.logs.find((l) => l.to === 'offline')?.reason).toMatch(/token refresh failed/);
    expect(h.controller.snapshot().nextCheck).toBeDefined();
    // Confirm checks go on (with backoff) while the network is down, and no heartbeats.
    const beats = h.api.count('heartbeat');
    await h.clock.advance(10 * MIN);
    expect(h.api.count('getDevice')).toBeGreaterThan(checks + 1);
    expect(h.api.count('heartbeat')).toBe(beats);
    expect(h.controller.currentState).toBe('offline');
    netDown = false;
    await h.clock.advance(6 * MIN);
    expect(h.controller.currentState).toBe('online');
    expect(h.refreshes()).toBe(2);
    expect(h.api.count('heartbeat')).toBeGreaterThan(beats);
    expect(h.transitions()).toEqual(['starting->online', 'online->offline', 'offline->online']);
    expect(h.transitions()).not.toContain('offline->needs-pairing');
    await h.controller.stop();
  });
});

describe('nothing to refresh with (C2C_TOKEN)', () => {
  it('unavailable keeps the old behaviour: one confirming GET, then needs-pairing and heartbeats stop', async () => {
    let revoked = false;
    const h = setup({ behave: (c) => (revoked && c !== 'health' ? unauthorized : ok), refresh: async () => 'unavailable' });
    h.controller.start();
    await h.clock.advance(10 * MIN);
    const beats = h.api.count('heartbeat');
    const checks = h.api.count('getDevice');
    revoked = true;
    await h.clock.advance(6 * MIN);
    expect(h.controller.currentState).toBe('needs-pairing');
    expect(h.api.count('heartbeat')).toBe(beats + 1);
    expect(h.api.count('getDevice')).toBe(checks + 1);
    const since = h.clock.now();
    await h.clock.advance(2 * HOUR);
    expect(callsSince(h, since).heartbeat).toBe(0);
    expect(h.transitions()).toEqual(['starting->online', 'online->needs-pairing']);
    await h.controller.stop();
  });
});
