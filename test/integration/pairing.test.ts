// `c2c-agent pair` end to end: the built bundle as a real process against
// the in-process fake cloud on loopback, at a time scale so a five-second
// poll interval is a fraction of a real second. Every wait is a poll on a
// condition (an event line, a status, the fake's clock). unpair: unpair.test.ts.
import { describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { daemonState, startAgent, status, waitFor, type StatusResult, cloudFetch } from './agent-process.js';
import { heartbeatsSince } from './agent-time.js';
import { FAKE_SECRET, runCommand, settingsArgs, startCommand, writeSecretFile } from './pair-process.js';
import {
  CODE_PATH,
  TOKEN_PATH,
  approveAfterWaiting,
  clientIdOf,
  expectExit,
  expectNothingStored,
  getMe,
  isEvent,
  oneLine,
  pair,
  pairNow,
  posts,
  reach,
  startDaemon,
  DAEMON_SCALE,
  usePairingCloud,
} from './pairing-fixture.js';

/** Agent and fake time: the 5 s poll interval is 125 real ms, a code's 120 s are 3 real s. */
const SCALE = 40;
/** A poll's round trip and timer lateness, in agent ms: 250 real ms on a loaded 2-core machine. */
const POLL_SLACK_MS = 250 * SCALE;
const fx = usePairingCloud(SCALE);

describe('pair --json', () => {
  it('shows a code, reports waiting, and once approved stores 0600 credentials that check accepts', async () => {
    const u = fx.unit();
    const p = pair(u);
    const code = await p.waitForEvent('the code', isEvent('code'));
    expect(code).toEqual({
      event: 'code',
      user_code: expect.stringMatching(/^\d{6}$/),
      verification_uri: `${fx.cloud.url}/pair`,
      verification_uri_complete: `${fx.cloud.url}/pair?user_code=${String(code.user_code)}`,
      expires_in: 120,
      interval: 5,
      name: expect.any(String),
    });
    const waiting = await p.waitForEvent('a waiting event', isEvent('waiting'));
    expect(waiting).toEqual({ event: 'waiting', expires_in: expect.any(Number) });
    expect(waiting.expires_in as number).toBeLessThanOrEqual(115);
    // Pending: nothing stored yet.
    expect(existsSync(u.credentials)).toBe(false);
    expect(u.cloud.control.approve(code.user_code as string)).toBe(true);
    await expectExit(p, 0);

    const events = p.events();
    expect(events.map((e) => e.event)).toEqual(['code', ...events.slice(1, -1).map(() => 'waiting'), 'paired']);
    const paired = events.at(-1)!;
    expect(paired).toMatchObject({ event: 'paired', ok: true, exitCode: 0, device: { id: expect.any(String) }, credentials: u.credentials, daemon: 'not-running', warnings: [] });
    const deviceId = (paired.device as { id: string }).id;
    // The service paired the client id this unit keeps, as the device the agent reports.
    expect(fx.cloud.deviceIdForClient(clientIdOf(u))).toBe(deviceId);

    expect(statSync(u.credentials).mode & 0o777).toBe(0o600);
    const file = JSON.parse(readFileSync(u.credentials, 'utf8')) as Record<string, unknown>;
    expect(file).toMatchObject({ access_token: expect.stringMatching(/^fca_/), refresh_token: expect.stringMatching(/^fcr_/), token_type: 'bearer', expires_in: 28800 });
    expect(await getMe(fx.cloud, file.access_token as string)).toBe(200);
    // Neither the device code nor a token ever reaches the output.
    expect(p.stdout() + p.stderr()).not.toMatch(FAKE_SECRET);
    expect(p.stderr()).toBe('');
    expect(readdirSync(u.dirs.stateDir).sort()).toEqual(['agent-state.json', 'credentials.json']);

    const check = await runCommand(['check', '--json', ...settingsArgs(u.s)], u.dirs);
    expect({ code: check.code, stderr: check.stderr }).toEqual({ code: 0, stderr: '' });
    expect(check.events).toEqual([expect.objectContaining({ ok: true, exitCode: 0 })]);
  });

  it('slow_down: each one lengthens the interval by 5 s, the agent waits the longer interval, and approval still pairs', async () => {
    // The agent never polls early by its own clock; against a service whose
    // clock runs ten times slower (agent scale 40, fake scale 4), every poll
    // after the first is early by the service's clock, and it says slow_down.
    const slow = await fx.otherCloud({ timeScale: 4, devices: 0 });
    const u = fx.unit(slow, SCALE);
    const p = pair(u);
    const code = await p.waitForEvent('the code', isEvent('code'));
    const first = await p.waitForEvent('a slow_down event', isEvent('slow_down'));
    expect(first).toEqual({ event: 'slow_down', interval: (code.interval as number) + 5 });
    expect(slow.control.approve(code.user_code as string)).toBe(true);
    await expectExit(p, 0);

    const events = p.events();
    expect(events.at(-1)).toMatchObject({ event: 'paired', ok: true, exitCode: 0 });
    const intervals = events.filter(isEvent('slow_down')).map((e) => e.interval as number);
    expect(intervals).toEqual(intervals.map((_, i) => 5 + 5 * (i + 1)));
    // One poll per answer: pending, then slow_down per event, then the tokens.
    const polls = posts(slow, 0, TOKEN_PATH);
    expect(polls.map((e) => e.status)).toEqual([400, ...intervals.map(() => 400), 200]);
    // After the k-th slow_down the agent waited intervals[k] agent s (a tenth of that on the fake's clock) before polling again.
    for (let k = 0; k < intervals.length; k++) {
      const gap = polls[k + 2]!.t - polls[k + 1]!.t;
      expect(gap).toBeGreaterThanOrEqual((intervals[k]! * 1000) / 10 - 10);
    }
  });

  it('a 503 while polling is a retrying event, and polling goes on to pair', async () => {
    const u = fx.unit();
    const fault = fx.cloud.control.addFault({ kind: 'status', status: 503, path: TOKEN_PATH, method: 'POST', count: 2 });
    try {
      const p = pair(u);
      await p.waitForEvent('the second retrying event', (e) => e.event === 'retrying' && p.events().filter(isEvent('retrying')).length >= 2);
      await approveAfterWaiting(p, fx.cloud);
      await expectExit(p, 0);
      const events = p.events();
      expect(events.filter(isEvent('retrying'))).toEqual([
        { event: 'retrying', error: expect.objectContaining({ kind: 'server', status: 503 }) },
        { event: 'retrying', error: expect.objectContaining({ kind: 'server', status: 503 }) },
      ]);
      expect(events.map((e) => e.event).slice(0, 3)).toEqual(['code', 'retrying', 'retrying']);
      expect(events.at(-1)).toMatchObject({ event: 'paired', ok: true, exitCode: 0 });
    } finally {
      fault.remove();
    }
  });

  it('replaces an expired code: after 120 agent s a new code with another user_code; approving it pairs', async () => {
    const u = fx.unit();
    const since = fx.cloud.journal.length;
    const p = pair(u);
    const first = await p.waitForEvent('the first code', isEvent('code'));
    const firstAt = p.events().findIndex(isEvent('code'));
    // Nobody approves: 3 real s later the agent asks for another code.
    const second = await p.waitForEvent('a second code', isEvent('code'), 10_000, firstAt + 1);
    expect(second).toMatchObject({ event: 'code', user_code: expect.stringMatching(/^\d{6}$/), expires_in: 120, interval: 5 });
    expect(second.user_code).not.toBe(first.user_code);
    // The old code is gone at the service too: approving it now approves nothing.
    expect(fx.cloud.control.approve(first.user_code as string)).toBe(false);
    const between = p.events().slice(firstAt + 1, p.events().findIndex((e, i) => i > firstAt && e.event === 'code'));
    expect(between.every(isEvent('waiting'))).toBe(true);
    // The first code was polled through its life (outcomes: polls came, none early, each answered by a
    // waiting event) and replaced once it expired. Too early a poll would have been a slow_down, not a
    // waiting event. How far apart the polls are is the process's pace on a loaded machine times the
    // scale, so the interval itself is judged exactly on a FakeClock (test/auth/pairing.test.ts:
    // 'polled every interval', 'local expiry passing').
    const [issued, reissued] = posts(fx.cloud, since, CODE_PATH);
    const polls = posts(fx.cloud, since, TOKEN_PATH).filter((e) => e.t > issued!.t && e.t < reissued!.t).map((e) => e.t);
    expect(polls.length).toBeGreaterThanOrEqual(2);
    expect(reissued!.t - issued!.t).toBeGreaterThanOrEqual(120_000 - POLL_SLACK_MS);
    expect(between.length).toBeGreaterThanOrEqual(polls.length - 1);

    const secondAt = p.events().findIndex((e, i) => i > firstAt && e.event === 'code');
    await p.waitForEvent('a waiting event for the second code', isEvent('waiting'), 10_000, secondAt + 1);
    expect(fx.cloud.control.approve(second.user_code as string)).toBe(true);
    await expectExit(p, 0);
    const paired = p.events().at(-1)!;
    expect(paired).toMatchObject({ event: 'paired', ok: true, exitCode: 0 });
    expect(fx.cloud.deviceIdForClient(clientIdOf(u))).toBe((paired.device as { id: string }).id);
    expect(statSync(u.credentials).mode & 0o777).toBe(0o600);
  });

  it('a wrong client secret is invalid_client: exit 78, one stderr line, a failed event, nothing stored', async () => {
    const u = fx.unit();
    const wrongSecret = 'not-the-model-secret-0123456789';
    const wrong = writeSecretFile(u.dirs, wrongSecret, 0o600, 'wrong-secret');
    const r = await runCommand(['pair', '--json', ...settingsArgs({ ...u.s, secretFile: wrong })], u.dirs);
    expect(r.code).toBe(78);
    const line = oneLine(r.stderr);
    expect(line).toContain('invalid_client');
    expect(line).toContain('--client-secret-file');
    expect(r.events.at(-1)).toMatchObject({ event: 'failed', ok: false, exitCode: 78, error: { kind: 'config', code: 'invalid_client' } });
    expect(r.stdout + r.stderr).not.toContain(wrongSecret);
    expectNothingStored(u);
  });

  it('a client secret file readable by group or others: exit 78 naming chmod, before any request', async () => {
    const u = fx.unit();
    const loose = writeSecretFile(u.dirs, fx.cloud.clientSecret, 0o644, 'loose-secret');
    const before = fx.cloud.journal.length;
    const r = await runCommand(['pair', ...settingsArgs({ ...u.s, secretFile: loose })], u.dirs);
    expect(r.code).toBe(78);
    const line = oneLine(r.stderr);
    expect(line).toContain(`chmod 600 ${loose}`);
    expect(line).toContain('0644');
    expect(r.stdout).toBe('');
    expect(fx.cloud.journal.slice(before)).toEqual([]);
    expect(existsSync(u.credentials)).toBe(false);

    // Not a regular file: the same exit, one line saying so.
    const dir = join(u.dirs.root, 'secret-dir');
    mkdirSync(dir, { mode: 0o700 });
    const d = await runCommand(['pair', ...settingsArgs({ ...u.s, secretFile: dir })], u.dirs);
    expect(d.code).toBe(78);
    expect(oneLine(d.stderr)).toContain('not a regular file');
  });

  // A failure before the flow starts (settings, the client secret, the client id) ends in the same
  // {"event":"failed"} line as any other (the JSON Lines contract). One process for both facts.
  it('--json with a bad client secret file: exit 78, one stderr line, one JSON line, an {"event":"failed"} line', async () => {
    const u = fx.unit();
    const loose = writeSecretFile(u.dirs, fx.cloud.clientSecret, 0o640, 'loose-secret');
    const r = await runCommand(['pair', '--json', ...settingsArgs({ ...u.s, secretFile: loose })], u.dirs);
    expect(r.code).toBe(78);
    expect(oneLine(r.stderr)).toContain(`chmod 600 ${loose}`);
    expect(r.events).toEqual([expect.objectContaining({ event: 'failed', ok: false, exitCode: 78, error: expect.objectContaining({ kind: 'config' }) })]);
  });

  it('a code the service no longer knows is invalid_grant: exit 77, a failed event, nothing stored', async () => {
    // The fake forgets a code 60 s after its expiry, on the next code request.
    // Its clock runs 100 times faster than the agent's (scale 200 against 2),
    // so the agent's first poll (5 agent s = 2.5 real s) comes after that.
    const fast = await fx.otherCloud({ timeScale: 200, devices: 0 });
    const u = fx.unit(fast, 2);
    const p = pair(u);
    await p.waitForEvent('the code', isEvent('code'));
    const issuedAt = posts(fast, 0, CODE_PATH)[0]!.t;
    await waitFor('the fake to be 180 s past the code', () => fast.now() >= issuedAt + 181_000, 5_000);
    expect(posts(fast, 0, TOKEN_PATH)).toEqual([]); // the agent has not polled yet
    const other = await cloudFetch(`${fast.url}${CODE_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: 'another-unit', client_secret: fast.clientSecret, scope: 'asset_create offline' }).toString(),
    });
    expect(other.status).toBe(200);
    await other.arrayBuffer();

    await expectExit(p, 77);
    expect(p.events().map((e) => e.event)).toEqual(['code', 'failed']);
    expect(p.events().at(-1)).toMatchObject({ event: 'failed', ok: false, exitCode: 77, error: { kind: 'unauthorized', code: 'invalid_grant' } });
    expect(oneLine(p.stderr())).toContain('invalid_grant');
    expect(posts(fast, 0, TOKEN_PATH).map((e) => e.status)).toEqual([400]);
    expectNothingStored(u);
  });

  it('--timeout 5 with nobody approving: exit 75, a failed timeout event, nothing stored', async () => {
    const u = fx.unit();
    const p = pair(u, ['--timeout', '5']);
    await expectExit(p, 75);
    const events = p.events();
    expect(events[0]).toMatchObject({ event: 'code' });
    expect(events.at(-1)).toEqual({ event: 'failed', ok: false, exitCode: 75, error: { kind: 'timeout', message: expect.stringContaining('within 5 s') } });
    expect(oneLine(p.stderr())).toContain('--timeout');
    expectNothingStored(u);
    expect(fx.cloud.deviceIdForClient(clientIdOf(u))).toBeUndefined();
  });

  it('an unreachable service for the first code: exit 69, a failed event', async () => {
    const u = fx.unit();
    fx.cloud.control.refuseConnections();
    try {
      const r = await runCommand(['pair', '--json', ...settingsArgs(u.s)], u.dirs);
      expect(r.code).toBe(69);
      expect(r.events).toEqual([expect.objectContaining({ event: 'failed', ok: false, exitCode: 69, error: expect.objectContaining({ kind: 'network' }) })]);
      oneLine(r.stderr);
      expectNothingStored(u);
    } finally {
      await fx.cloud.control.acceptConnections();
    }
  });

  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('%s while polling: exit %i, a failed event last, no credentials and no temp files', async (signal, exitCode) => {
    const u = fx.unit();
    const p = pair(u);
    await p.waitForEvent('the code', isEvent('code'));
    await p.waitForEvent('a waiting event', isEvent('waiting'));
    p.child.kill(signal);
    await expectExit(p, exitCode);
    expect(p.events().at(-1)).toEqual({ event: 'failed', ok: false, exitCode, error: { kind: 'cancelled', message: expect.stringContaining(signal) } });
    expect(oneLine(p.stderr())).toContain('nothing was stored');
    expectNothingStored(u);
    expect(fx.cloud.deviceIdForClient(clientIdOf(u))).toBeUndefined();
  });
});

describe('pair with a running daemon', () => {
  it('a daemon in needs-pairing pairs itself (POST /v1/pair) and goes online at once, same pid, no SIGHUP; pair shows its flow', async () => {
    // The daemon polls in real time here: a cloud at the same scale, so its codes live 120 real s.
    const u = fx.unit(await fx.otherCloud({ timeScale: DAEMON_SCALE, devices: 0 }), DAEMON_SCALE);
    const daemon = startDaemon(u);
    const before = await reach(u, daemon, 'needs-pairing', 10_000);
    expect(before.exitCode).toBe(77);
    expect(before.json.pid).toBe(daemon.pid);

    // pair is run WITHOUT the client secret: the daemon holds it, the command never reads it.
    const { secretFile: _secret, ...noSecret } = u.s;
    const p = pair(u, [], noSecret);
    const code = await waitFor('the code', () => p.events().find(isEvent('code')), 10_000);
    expect(code).toMatchObject({ event: 'code', user_code: expect.any(String), verification_uri: expect.any(String), expires_in: expect.any(Number) });
    expect(u.cloud.control.approve(code.user_code as string)).toBe(true);
    await expectExit(p, 0);
    expect(p.events().at(-1)).toMatchObject({ event: 'paired', ok: true, exitCode: 0, daemon: 'running', credentials: u.credentials, device: { id: expect.any(String) }, warnings: [] });
    expect(p.stdout()).not.toMatch(FAKE_SECRET);
    expect(p.events().filter(isEvent('code'))).toHaveLength(1);
    const online = await reach(u, daemon, 'online', 3_000);
    expect(online.exitCode).toBe(0);
    expect(online.json.pid).toBe(daemon.pid);
    expect(daemon.child.exitCode).toBeNull();
    expect(daemon.output()).toContain('paired through the local API');
    // The daemon used them at once: neither a signal nor its own look at the file every 10 s.
    expect(daemon.output()).not.toContain('credentials file changed');
    expect(daemon.output()).not.toMatch(FAKE_SECRET);
  });

  it('the same plain lines off a terminal when the daemon pairs, the daemon line saying it uses them now', async () => {
    const u = fx.unit(await fx.otherCloud({ timeScale: DAEMON_SCALE, devices: 0 }), DAEMON_SCALE);
    const daemon = startDaemon(u);
    await reach(u, daemon, 'needs-pairing', 10_000);
    const p = startCommand(['pair', ...settingsArgs(u.s)], u.dirs, { TERM: 'xterm-256color' });
    const codeLine = await waitFor('the code line', () => p.lines().find((l) => l.startsWith('pairing code: ')), 10_000);
    const m = /^pairing code: (\d{3}) (\d{3})$/.exec(codeLine);
    expect(m).not.toBeNull();
    expect(u.cloud.control.approve(`${m![1]}${m![2]}`)).toBe(true);
    await expectExit(p, 0);
    expect(p.stderr()).toBe('');
    expect(p.stdout()).not.toContain('\u001b');
    expect(p.stdout()).not.toMatch(FAKE_SECRET);
    expect(p.lines()).toEqual([
      `pairing code: ${m![1]} ${m![2]}`,
      `open: ${u.cloud.url}/pair`,
      `or open: ${u.cloud.url}/pair?user_code=${m![1]}${m![2]}`,
      expect.stringMatching(/^proposed name: Camera \S+$/),
      'the code expires in 120 s',
      'waiting for approval…',
      'approved; verifying the new credentials with the service…',
      expect.stringMatching(/^paired: Camera \S+ \(device [0-9a-f-]+\)$/),
      expect.stringMatching(/^project: .+ \(id .+\)$/),
      `credentials: ${u.credentials}`,
      `daemon: the running daemon (pid ${daemon.pid}) paired and uses the credentials now`,
    ]);
    await reach(u, daemon, 'online', 3_000);
  });

  it('Ctrl-C on a pair the daemon runs cancels the daemon\'s flow (DELETE /v1/pair): exit 130, nothing stored, the daemon still waits for pairing', async () => {
    const u = fx.unit();
    const daemon = startDaemon(u);
    await reach(u, daemon, 'needs-pairing', 10_000);
    const p = pair(u);
    await waitFor('the code', () => p.events().find(isEvent('code')), 10_000);
    p.child.kill('SIGINT');
    await expectExit(p, 130);
    expect(p.events().at(-1)).toEqual({ event: 'failed', ok: false, exitCode: 130, error: { kind: 'cancelled', message: expect.stringContaining('nothing was stored') } });
    await waitFor('the daemon logged the cancel', () => daemon.output().includes('pairing cancelled through the local API'), 5_000);
    expect(existsSync(u.credentials)).toBe(false);
    expect((await reach(u, daemon, 'needs-pairing', 1_000)).json.pid).toBe(daemon.pid);
  });

  it('a daemon without a client secret: pair is refused by the daemon before any code (exit 78, a failed line), nothing stored, no code asked', async () => {
    const u = fx.unit();
    const daemon = startAgent({ apiUrl: fx.cloud.url, dirs: u.dirs, timeScale: DAEMON_SCALE });
    await reach(u, daemon, 'needs-pairing', 10_000);
    const since = fx.cloud.journal.length;
    const p = pair(u);
    await expectExit(p, 78);
    expect(p.events()).toEqual([{ event: 'failed', ok: false, exitCode: 78, error: { kind: 'config', message: expect.stringContaining('no client secret'), status: 409 } }]);
    expect(oneLine(p.stderr())).toContain('no client secret');
    expect(posts(fx.cloud, since, CODE_PATH)).toEqual([]);
    expect(existsSync(u.credentials)).toBe(false);
  });

  // Re-pairing revokes the old tokens. Even when pair's verification GET fails
  // (pair exits 75 with the file stored), the daemon is told first and moves to
  // the new pair: it must never sit in needs-pairing with good credentials on disk.
  it('a re-pair whose verification fails still moves the running daemon to the new credentials', async () => {
    const u = fx.unit();
    await pairNow(u);
    // Heartbeats at most 5 real s apart, so the revocation would be met soon.
    const daemon = startAgent({ apiUrl: fx.cloud.url, dirs: u.dirs, timeScale: SCALE, env: { C2C_CLIENT_SECRET_FILE: u.secretFile } });
    const state = async (): Promise<StatusResult> => status(u.dirs, fx.cloud.url, SCALE);
    await waitFor('online', async () => (await state()).json.state === 'online', 10_000, 50);
    // 503s for every try pair makes (and the nudged daemon's checks) until the fault is removed.
    const fault = fx.cloud.control.addFault({ kind: 'status', status: 503, path: '/v2/devices/me', method: 'GET' });
    const p = pair(u);
    await approveAfterWaiting(p, fx.cloud);
    await expectExit(p, 75); // paired and stored, verification failed
    fault.remove();
    const check = await runCommand(['check', ...settingsArgs(u.s)], u.dirs);
    expect(check.code).toBe(0);
    // A heartbeat interval and more (two heartbeats from now): the daemon keeps heartbeating with the new pair,
    // never in needs-pairing on the way, as its status document says at every look.
    const since = fx.cloud.journal.length;
    const seen = new Set<string>();
    await waitFor('two heartbeats with the new pair', () => {
      const now = daemonState(u.dirs, daemon.pid);
      if (now !== undefined) seen.add(now);
      return heartbeatsSince(fx.cloud, since) >= 2;
    }, 30_000, 20);
    expect(seen.has('needs-pairing')).toBe(false);
    expect(seen.size).toBeGreaterThan(0);
    expect((await state()).json).toMatchObject({ pid: daemon.pid, running: true });
    const beats = fx.cloud.journal.slice(since).filter((e) => e.path === '/v2/devices/heartbeat');
    expect(beats.every((e) => e.status === 204 || e.status === 0)).toBe(true);
  }, 60_000);
});

describe('pair without --json, not on a terminal', () => {
  it('writes plain lines, no escape character, with the grouped code', async () => {
    const u = fx.unit();
    const since = fx.cloud.journal.length;
    const p = startCommand(['pair', ...settingsArgs(u.s)], u.dirs, { TERM: 'xterm-256color' });
    const codeLine = await waitFor('the code line', () => p.lines().find((l) => l.startsWith('pairing code: ')), 10_000);
    const m = /^pairing code: (\d{3}) (\d{3})$/.exec(codeLine);
    expect(m).not.toBeNull();
    const userCode = `${m![1]}${m![2]}`;
    await waitFor('the waiting line', () => p.lines().includes('waiting for approval…'), 10_000);
    // Let it poll at least once (the fake journals the poll) before approving.
    await waitFor('a poll', () => posts(fx.cloud, since, TOKEN_PATH).some((e) => e.status === 400), 10_000);
    expect(fx.cloud.control.approve(userCode)).toBe(true);
    await expectExit(p, 0);

    expect(p.stdout()).not.toContain('\u001b');
    expect(p.stderr()).not.toContain('\u001b');
    expect(p.stderr()).toBe('');
    expect(p.stdout()).not.toMatch(FAKE_SECRET);
    expect(p.lines()).toEqual([
      `pairing code: ${m![1]} ${m![2]}`,
      `open: ${fx.cloud.url}/pair`,
      `or open: ${fx.cloud.url}/pair?user_code=${userCode}`,
      expect.stringMatching(/^proposed name: Camera \S+$/),
      'the code expires in 120 s',
      'waiting for approval…',
      'approved; verifying the new credentials with the service…',
      'verified; storing the credentials…',
      expect.stringMatching(/^paired: Camera \S+ \(device [0-9a-f-]+\)$/),
      expect.stringMatching(/^project: .+ \(id .+\)$/),
      `credentials: ${u.credentials}`,
      'daemon: no daemon runs; start it with `sudo systemctl start c2c-agent`',
    ]);
  });
});
