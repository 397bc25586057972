import { describe, expect, it } from '@jest/globals';
import { FakeClock } from '../../agent/lib/fake-clock.js';
import { AgentError } from '../../agent/lib/errors.js';
import { createLogger } from '../../agent/lib/logger.js';
import type { Clock } from '../../agent/lib/clock.js';
import { Controller } from '../../agent/daemon/controller.js';
import { clampBounds, MAX_RETRY_AFTER_MS } from '../../agent/daemon/heartbeat-policy.js';
import type { DaemonSnapshot } from '../../agent/daemon/snapshot.js';
import { FakeApi, seeded, type Behaviour, type Call } from './fake-api.js';

const S = 1000;
const MIN = 60 * S;
const HOUR = 60 * MIN;

interface Opts {
  behave?: (call: Call, now: number) => Behaviour;
  fingerprint?: () => string | undefined;
  noCredentials?: () => boolean;
  clock?: Clock;
  fake?: FakeClock;
}

function setup(o: Opts = {}) {
  const fake = o.fake ?? new FakeClock();
  const clock = o.clock ?? fake;
  const api = new FakeApi(fake, o.behave);
  const logs: { msg: string; from?: string; to?: string; reason?: string }[] = [];
  const logger = createLogger('debug', { write: (line: string) => void logs.push(JSON.parse(line)) });
  const published: { snap: DaemonSnapshot; transition: boolean }[] = [];
  let reloads = 0;
  const controller = new Controller({
    clock,
    random: seeded(5),
    logger,
    api,
    reloadCredentials: () => {
      reloads++;
      if (o.noCredentials?.()) throw new AgentError('unauthorized', 'not paired: no credentials in /x/credentials.json');
    },
    ...(o.fingerprint && { credentialsFingerprint: o.fingerprint }),
    bounds: clampBounds(undefined),
    persistAttempt: async () => {},
    publish: (snap, transition) => void published.push({ snap, transition }),
    info: { firmwareVersion: '1.2.3', profile: 'generic', agentVersion: '0.1.0', timeScale: 1, pid: 4242 },
  });
  const transitions = (): string[] => logs.filter((l) => l.to !== undefined).map((l) => `${l.from}->${l.to}`);
  return { clock: fake, api, controller, logs, published, transitions, reloads: () => reloads };
}

const when = (pred: (call: Call, now: number) => boolean, bad: Behaviour) => (call: Call, now: number): Behaviour =>
  pred(call, now) ? bad : { outcome: 'ok' };

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

  it('stop(): stopping then stopped, final snapshot published, no timer left', async () => {
    const h = setup({ behave: () => ({ outcome: 'ok', latencyMs: 10 * S }) });
    h.controller.start();
    await h.clock.advance(12 * S);
    await h.controller.stop();
    expect(h.transitions().slice(-2)).toEqual(['online->stopping', 'stopping->stopped']);
    expect(h.published.at(-1)?.snap.state).toBe('stopped');
    expect(h.clock.pendingCount).toBe(0);
    expect(h.api.inFlight).toBe(0);
  });

  it('a 2xx device record that fails validation still proves the token: heartbeats start, one warning, re-verify at the normal rate', async () => {
    const h = setup({ behave: (c) => (c === 'getDevice' ? { outcome: 'protocol', status: 200 } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(10 * MIN);
    expect(h.controller.currentState).toBe('online');
    expect(h.api.count('getDevice')).toBe(1);
    expect(h.api.count('heartbeat')).toBeGreaterThanOrEqual(3);
    // About hourly (0.85 to 1.15 h), never as a tight retry loop.
    await h.clock.advance(3 * HOUR);
    expect(h.api.count('getDevice')).toBeGreaterThanOrEqual(3);
    expect(h.api.count('getDevice')).toBeLessThanOrEqual(5);
    expect(h.logs.filter((l) => /device record unreadable/.test(l.msg))).toHaveLength(1);
    expect(h.transitions()).toEqual(['starting->online']);
    await h.controller.stop();
  });

  it('an unreadable record on a re-verify keeps the device facts already known', async () => {
    let broken = false;
    const h = setup({ behave: (c) => (c === 'getDevice' && broken ? { outcome: 'protocol', status: 200 } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(1 * S);
    broken = true;
    h.controller.reload();
    await h.clock.advance(10 * MIN);
    expect(h.controller.currentState).toBe('online');
    expect(h.controller.snapshot().device?.name).toBe('cam-07');
    expect(h.controller.snapshot().project?.name).toBe('Testbed');
    await h.controller.stop();
  });

  it('an unreadable answer that was not a 2xx proves nothing: start-up keeps retrying, no heartbeats', async () => {
    const h = setup({ behave: (c) => (c === 'getDevice' ? { outcome: 'protocol', status: 502 } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(30 * MIN);
    expect(h.controller.currentState).toBe('offline');
    expect(h.api.count('heartbeat')).toBe(0);
    expect(h.api.count('getDevice')).toBeGreaterThan(5);
    await h.controller.stop();
  });

  it('a start-up 429 with a day-long Retry-After waits at most MAX_RETRY_AFTER_MS', async () => {
    let limited = true;
    const h = setup({ behave: (c) => (c === 'getDevice' && limited ? { outcome: 'rate-limited', retryAfterMs: 24 * HOUR } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(1 * S);
    expect(h.controller.currentState).toBe('rate-limited');
    limited = false;
    await h.clock.advance(MAX_RETRY_AFTER_MS - 2 * S);
    expect(h.api.count('getDevice')).toBe(1);
    await h.clock.advance(2 * S);
    expect(h.api.count('getDevice')).toBe(2);
    expect(h.controller.currentState).toBe('online');
    await h.controller.stop();
  });

  it('a network-less boot: health probes every 5 to 30 s notice the network return, the device check follows at once', async () => {
    const t0 = 1_000_000;
    const back = t0 + 30 * MIN;
    const h = setup({ behave: (_c, t) => (t < back ? { outcome: 'network' } : { outcome: 'ok' }) });
    h.controller.start();
    await h.clock.advance(30 * MIN);
    expect(h.controller.currentState).toBe('offline');
    expect(h.api.count('health')).toBeGreaterThan(50);
    // A probe or the check itself asks at least every 30 s (plus the 50 ms a refusal takes).
    const asks = h.api.calls.map((c) => c.t);
    asks.slice(1).forEach((t, i) => expect(t - (asks[i] as number)).toBeLessThanOrEqual(30 * S + 100));
    await h.clock.advance(31 * S);
    const check = h.api.calls.find((c) => c.call === 'getDevice' && c.t >= back);
    expect(check).toBeDefined();
    expect((check?.t ?? Infinity) - back).toBeLessThanOrEqual(31 * S);
    expect(h.controller.currentState).toBe('online');
    expect(h.api.count('heartbeat')).toBe(1);
    // One request at a time: a probe never overlaps the check it hurries along.
    expect(h.api.maxInFlight).toBe(1);
    // Heartbeating now: the scheduler owns reachability, the start-up probes stopped.
    const n = h.api.count('health');
    await h.clock.advance(10 * MIN);
    expect(h.api.count('health')).toBe(n);
    await h.controller.stop();
    expect(h.clock.pendingCount).toBe(0);
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
});
