import { describe, expect, it } from '@jest/globals';
import { FakeClock } from '../support/fake-clock.js';
import type { Clock } from '../../agent/lib/clock.js';
import { HOUR, MIN, S, setup, when } from './controller-harness.js';
describe('Controller', () => {
  it('starts without waiting for the network, verifies, then heartbeats: starting -> online', async () => {
    const h = setup();
    h.controller.start();
    expect(h.controller.currentState).toBe('starting');
    expect(h.published[0]?.snap.state).toBe('starting');
    await h.clock.advance(1 * S);
    expect(h.controller.currentState).toBe('online');
    expect(h.api.count('getDevice')).toBe(1);
    expect(h.api.count('heartbeat')).toBe(1);
    expect(h.controller.statusLine()).toMatch(/^online; cam-07 in project Testbed; next heartbeat in \d+m\d\ds$/);
    const snap = h.controller.snapshot();
    expect(snap.device).toEqual({ id: 'dev-1', name: 'cam-07', status: 'online' });
    expect(snap.project).toEqual({ id: 'prj-1', name: 'Testbed' });
    expect(snap.lastHeartbeat?.result).toBe('ok');
    expect(snap.lastHeartbeat?.status).toBe(204);
    expect(snap.clockOffsetMs).toBe(120);
    expect(h.controller.isHealthy()).toBe(true);
    await h.controller.stop();
  });

  it('unreachable at start-up: offline, retries with backoff, logs the transition once, stays healthy', async () => {
    let down = true;
    const h = setup({ behave: () => (down ? { outcome: 'network' } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(30 * MIN);
    expect(h.controller.currentState).toBe('offline');
    expect(h.api.count('getDevice')).toBeGreaterThan(5);
    expect(h.api.count('getDevice')).toBeLessThan(40);
    expect(h.api.count('heartbeat')).toBe(0);
    expect(h.controller.isHealthy()).toBe(true);
    down = false;
    await h.clock.advance(6 * MIN);
    expect(h.controller.currentState).toBe('online');
    expect(h.transitions()).toEqual(['starting->offline', 'offline->online']);
    expect(h.logs.find((l) => l.to === 'offline')?.reason).toMatch(/network ECONNREFUSED/);
    await h.controller.stop();
  });

  it('5xx on heartbeats: online -> offline once, back to online when they succeed', async () => {
    let failing = false;
    const h = setup({ behave: (c) => (failing && c === 'heartbeat' ? { outcome: 'server' } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(10 * MIN);
    failing = true;
    await h.clock.advance(30 * MIN);
    expect(h.controller.currentState).toBe('offline');
    expect(h.controller.snapshot().consecutiveFailures).toBeGreaterThan(2);
    failing = false;
    await h.clock.advance(10 * MIN);
    expect(h.transitions()).toEqual(['starting->online', 'online->offline', 'offline->online']);
    await h.controller.stop();
  });

  it('429: rate-limited, with the figures in the snapshot', async () => {
    const h = setup({ behave: when((c, t) => c === 'heartbeat' && t > 1_000_000 + 5 * MIN, { outcome: 'rate-limited', retryAfterMs: 90 * S }) });
    h.controller.start();
    await h.clock.advance(20 * MIN);
    expect(h.controller.currentState).toBe('rate-limited');
    expect(h.controller.snapshot().rateLimit).toEqual({ limit: 60, remaining: 0, windowMs: 60_000 });
    expect(h.transitions()).toEqual(['starting->online', 'online->rate-limited']);
    await h.controller.stop();
  });

  it('paused: from GET /v2/devices/me and from a heartbeat refused as paused; unpausing is picked up', async () => {
    let paused = true;
    const h = setup({ behave: (c) => (c === 'getDevice' ? { outcome: 'ok', device: { status: paused ? 'paused' : 'online' } } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(1 * S);
    expect(h.controller.currentState).toBe('paused');
    expect(h.api.count('heartbeat')).toBe(1);
    paused = false;
    h.controller.reload();
    await h.clock.advance(1 * S);
    expect(h.controller.currentState).toBe('online');
    await h.controller.stop();

    const p = setup({ behave: when((c, t) => c === 'heartbeat' && t > 1_000_000 + 1 * S, { outcome: 'paused' }) });
    p.controller.start();
    await p.clock.advance(10 * MIN);
    expect(p.controller.currentState).toBe('paused');
    await p.controller.stop();
  });

  it('401 at start-up: needs-pairing, no heartbeats, re-checks at a low rate, never loops', async () => {
    const h = setup({ behave: () => ({ outcome: 'unauthorized' }) });
    h.controller.start();
    await h.clock.advance(6 * HOUR);
    expect(h.controller.currentState).toBe('needs-pairing');
    expect(h.api.count('heartbeat')).toBe(0);
    // Every 15 to 30 minutes: 12 to 24 checks in 6 hours, plus the first.
    expect(h.api.count('getDevice')).toBeGreaterThanOrEqual(12);
    expect(h.api.count('getDevice')).toBeLessThanOrEqual(25);
    expect(h.transitions()).toEqual(['starting->needs-pairing']);
    expect(h.controller.snapshot().nextCheck).toBeDefined();
    expect(h.controller.isHealthy()).toBe(true);
    await h.controller.stop();
  });

  it('no credentials at all: needs-pairing without a request; SIGHUP after pairing checks at once and goes online', async () => {
    let paired = false;
    const h = setup({ noCredentials: () => !paired });
    h.controller.start();
    await h.clock.advance(1 * S);
    expect(h.controller.currentState).toBe('needs-pairing');
    expect(h.api.calls).toEqual([]);
    paired = true;
    h.controller.reload();
    await h.clock.advance(1 * S);
    expect(h.api.count('getDevice')).toBe(1);
    expect(h.controller.currentState).toBe('online');
    expect(h.api.count('heartbeat')).toBe(1);
    await h.controller.stop();
  });

  it('needs-pairing: a changed credentials file is noticed within 10 s', async () => {
    let print = 'a';
    let valid = false;
    const h = setup({ fingerprint: () => print, behave: () => (valid ? { outcome: 'ok' } : { outcome: 'unauthorized' }) });
    h.controller.start();
    await h.clock.advance(1 * MIN);
    expect(h.controller.currentState).toBe('needs-pairing');
    const checks = h.api.count('getDevice');
    await h.clock.advance(1 * MIN);
    expect(h.api.count('getDevice')).toBe(checks);
    print = 'b';
    valid = true;
    await h.clock.advance(10 * S);
    expect(h.api.count('getDevice')).toBe(checks + 1);
    expect(h.controller.currentState).toBe('online');
    await h.controller.stop();
    expect(h.clock.pendingCount).toBe(0);
  });

  it('a 401 on a heartbeat: one GET /v2/devices/me to confirm, then needs-pairing and heartbeats stop', async () => {
    let revoked = false;
    const h = setup({ behave: () => (revoked ? { outcome: 'unauthorized' } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(10 * MIN);
    const beats = h.api.count('heartbeat');
    const checks = h.api.count('getDevice');
    revoked = true;
    await h.clock.advance(5 * MIN);
    expect(h.controller.currentState).toBe('needs-pairing');
    expect(h.api.count('heartbeat')).toBe(beats + 1);
    expect(h.api.count('getDevice')).toBe(checks + 1);
    await h.clock.advance(2 * HOUR);
    expect(h.api.count('heartbeat')).toBe(beats + 1);
    expect(h.transitions()).toEqual(['starting->online', 'online->needs-pairing']);
    await h.controller.stop();
  });

  it('a heartbeat 401 the device check contradicts resumes heartbeats; a second one in a row settles it', async () => {
    const h = setup({ behave: (c, t) => (c === 'heartbeat' && t > 1_000_000 + 1 * S ? { outcome: 'unauthorized' } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(20 * MIN);
    expect(h.api.count('heartbeat')).toBe(3);
    expect(h.api.count('getDevice')).toBe(2);
    expect(h.controller.currentState).toBe('needs-pairing');
    await h.controller.stop();
  });

  it('re-verifies about hourly and at once on reload, picking up a renamed project', async () => {
    let project = 'Testbed';
    const h = setup({ behave: (c) => (c === 'getDevice' ? { outcome: 'ok', device: { project: { id: 'prj-1', name: project } } } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(5 * HOUR + 1 * S);
    expect(h.api.count('getDevice')).toBeGreaterThanOrEqual(5);
    expect(h.api.count('getDevice')).toBeLessThanOrEqual(7);
    project = 'Renamed';
    const before = h.api.count('getDevice');
    h.controller.reload();
    await h.clock.advance(1 * S);
    expect(h.api.count('getDevice')).toBe(before + 1);
    expect(h.controller.snapshot().project?.name).toBe('Renamed');
    expect(h.transitions()).toEqual(['starting->online']);
    await h.controller.stop();
  });

  it('stop(): stopping then stopped, final snapshot published, no timer left, its bus listeners removed', async () => {
    const h = setup({ behave: () => ({ outcome: 'ok', latencyMs: 10 * S }) });
    h.controller.start();
    expect(h.bus.listenerCount('tokensRejected')).toBe(1);
    await h.clock.advance(12 * S);
    await h.controller.stop();
    expect(h.transitions().slice(-2)).toEqual(['online->stopping', 'stopping->stopped']);
    expect(h.published.at(-1)?.snap.state).toBe('stopped');
    expect(h.clock.pendingCount).toBe(0);
    expect(h.api.inFlight).toBe(0);
    // Only the harness's own stateChanged listener is left.
    expect(h.bus.listenerCount()).toBe(1);
  });

  it('isHealthy() is false when the loop is wedged (its timers never fire)', async () => {
    const fake = new FakeClock();
    let wedged = false;
    const clock: Clock = {
      now: () => fake.now(),
      wallNow: () => fake.wallNow(),
      scale: 1,
      setTimer: (fn, ms) => (wedged ? { cancel: () => {} } : fake.setTimer(fn, ms)),
    };
    // The controller uses the wrapper; the fake api (and time) the FakeClock underneath.
    const h = setup({ clock, fake });
    h.controller.start();
    await fake.advance(1 * S);
    expect(h.controller.isHealthy()).toBe(true);
    wedged = true;
    h.controller.reload(); // re-arms its timers on the broken clock
    await fake.advance(1 * S);
    await fake.advance(10 * MIN);
    expect(h.controller.isHealthy()).toBe(false);
  });

  it("a clock problem: offline saying only the clock's sentence (status, STATUS=), kept while it lasts, gone once an answer goes through", async () => {
    const SENTENCE = "this unit's clock is 3 days behind the service; certificates cannot be checked until the time is set (NTP)";
    let wrong = true;
    const h = setup({ behave: () => (wrong ? { outcome: 'clock' } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(20 * MIN);
    expect(h.controller.currentState).toBe('offline');
    expect(h.api.count('getDevice')).toBeGreaterThan(3);
    const snap = h.controller.snapshot();
    expect(snap.reason).toBe(SENTENCE);
    expect(snap.clockProblem).toBe(SENTENCE);
    expect(snap.clockOffsetMs).toBe(3 * 24 * 3600_000);
    // systemctl status shows the whole sentence, not the first 60 characters.
    expect(h.controller.statusLine()).toMatch(new RegExp(`^offline: ${SENTENCE.replace(/[()]/g, '\\$&')}; next check in `));
    wrong = false;
    await h.clock.advance(6 * MIN);
    expect(h.controller.currentState).toBe('online');
    expect(h.controller.snapshot().clockProblem).toBeUndefined();
    // The clock going wrong under heartbeats says the same.
    wrong = true;
    await h.clock.advance(10 * MIN);
    expect(h.controller.currentState).toBe('offline');
    expect(h.controller.snapshot().clockProblem).toBe(SENTENCE);
    await h.controller.stop();
  });

  it('a certificate it cannot verify: offline with the problem in words first (STATUS= keeps them), no clock problem', async () => {
    const h = setup({ behave: () => ({ outcome: 'tls' }) });
    h.controller.start();
    await h.clock.advance(10 * MIN);
    expect(h.controller.currentState).toBe('offline');
    const snap = h.controller.snapshot();
    expect(snap.reason).toMatch(/^tls: the service's certificate is not signed by a CA this unit trusts; /);
    expect(snap.clockProblem).toBeUndefined();
    expect(h.controller.statusLine()).toMatch(/^offline \(tls: the service's certificate is not signed by a CA/);
    expect(h.api.count('getDevice')).toBeGreaterThan(2); // it keeps trying
    await h.controller.stop();
  });
});
