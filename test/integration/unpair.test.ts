// `c2c-agent unpair` end to end: the built bundle against the in-process
// fake cloud. A unit is paired through `pair` first, so the service knows
// its client id and the revocation really ends an authorization.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { startAgent } from './agent-process.js';
import { FAKE_SECRET, runCommand, settingsArgs } from './pair-process.js';
import { DAEMON_SCALE, REVOKE_PATH, accessTokenOf, getMe, pairNow, posts, reach, startDaemon, usePairingCloud } from './pairing-fixture.js';

const fx = usePairingCloud(40);

describe('unpair', () => {
  it('with a daemon running, the daemon revokes and forgets (POST /v1/unpair) and goes to needs-pairing at once, same pid', async () => {
    const u = fx.unit();
    const paired = await pairNow(u);
    const deviceId = (paired.device as { id: string }).id;
    const accessToken = accessTokenOf(u);
    const daemon = startDaemon(u);
    await reach(u, daemon, 'online', 10_000);

    const since = fx.cloud.journal.length;
    const r = await runCommand(['unpair', '--json', ...settingsArgs(u.s)], u.dirs);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(r.events).toEqual([{ ok: true, exitCode: 0, revoked: true, removed: true, credentials: u.credentials, daemon: 'running', warnings: [] }]);
    expect(posts(fx.cloud, since, REVOKE_PATH)).toEqual([expect.objectContaining({ deviceId, status: 200 })]);
    expect(existsSync(u.credentials)).toBe(false);
    // The service ended the authorization: the old token is refused.
    expect(await getMe(fx.cloud, accessToken)).toBe(401);
    expect(r.stdout).not.toMatch(FAKE_SECRET);

    const after = await reach(u, daemon, 'needs-pairing', 3_000);
    expect(after.exitCode).toBe(77);
    expect(after.json.pid).toBe(daemon.pid);
    expect(daemon.child.exitCode).toBeNull();
    expect(daemon.output()).toContain('unpaired through the local API');
  });

  it('with the service refusing connections: still forgets locally, exits 0, warns the service still lists the device', async () => {
    const u = fx.unit();
    await pairNow(u);
    const accessToken = accessTokenOf(u);
    fx.cloud.control.refuseConnections();
    const r = await runCommand(['unpair', ...settingsArgs(u.s)], u.dirs).finally(() => fx.cloud.control.acceptConnections());
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(r.stdout).not.toContain('\u001b');
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines).toEqual([
      'not revoked at the service',
      `forgot the credentials (${u.credentials})`,
      'no daemon runs',
      expect.stringMatching(/^warning: could not revoke at the service \(.+\); forgot the credentials here only: the service still lists the device \(remove it in the app\)$/),
    ]);
    expect(existsSync(u.credentials)).toBe(false);
    // And it does: the authorization is still alive there.
    expect(await getMe(fx.cloud, accessToken)).toBe(200);
  });

  it('--json with the service down: ok, revoked false, the warning in warnings', async () => {
    const u = fx.unit();
    await pairNow(u);
    fx.cloud.control.refuseConnections();
    const r = await runCommand(['unpair', '--json', ...settingsArgs(u.s)], u.dirs).finally(() => fx.cloud.control.acceptConnections());
    expect(r.code).toBe(0);
    expect(r.events).toEqual([
      {
        ok: true,
        exitCode: 0,
        revoked: false,
        removed: true,
        credentials: u.credentials,
        daemon: 'not-running',
        warnings: [expect.stringContaining('the service still lists the device')],
      },
    ]);
    expect(existsSync(u.credentials)).toBe(false);
  });

  it('with no client secret configured: exit 78 before forgetting anything, the token still valid; --local then forgets here only', async () => {
    const u = fx.unit();
    await pairNow(u);
    const accessToken = accessTokenOf(u);
    const stored = readFileSync(u.credentials, 'utf8');
    const { secretFile: _unused, ...withoutSecret } = u.s;
    const noSecret = settingsArgs(withoutSecret);
    const since = fx.cloud.journal.length;
    const r = await runCommand(['unpair', '--json', ...noSecret], u.dirs);
    expect(r.code).toBe(78);
    expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^c2c-agent: cannot revoke the authorization at the service, so nothing was forgotten: no client secret: .*; or run `c2c-agent unpair --local` to forget the credentials here only/)]);
    expect(r.events).toEqual([expect.objectContaining({ ok: false, exitCode: 78 })]);
    expect(readFileSync(u.credentials, 'utf8')).toBe(stored);
    expect(posts(fx.cloud, since, REVOKE_PATH)).toEqual([]);

    const local = await runCommand(['unpair', '--json', '--local', ...noSecret], u.dirs);
    expect({ code: local.code, stderr: local.stderr }).toEqual({ code: 0, stderr: '' });
    expect(local.events).toEqual([expect.objectContaining({ ok: true, revoked: false, removed: true, warnings: [expect.stringContaining('forgot the credentials here only')] })]);
    expect(existsSync(u.credentials)).toBe(false);
    expect(posts(fx.cloud, since, REVOKE_PATH)).toEqual([]);
    // Said, and so: the service still honours the token.
    expect(await getMe(fx.cloud, accessToken)).toBe(200);
    expect(r.stdout + r.stderr + local.stdout).not.toMatch(FAKE_SECRET);
  });

  it('with no API URL configured: exit 78, nothing forgotten', async () => {
    const u = fx.unit();
    await pairNow(u);
    const stored = readFileSync(u.credentials, 'utf8');
    const r = await runCommand(['unpair', ...settingsArgs({ ...u.s, apiUrl: '' }).filter((a, i, all) => a !== '--api-url' && all[i - 1] !== '--api-url')], u.dirs, { C2C_API_URL: '' });
    expect(r.code).toBe(78);
    expect(r.stderr).toMatch(/^c2c-agent: no API URL configured .*nothing was forgotten; or run `c2c-agent unpair --local`/);
    expect(readFileSync(u.credentials, 'utf8')).toBe(stored);
  });

  it('a daemon without a client secret refuses to unpair (78), nothing forgotten, still online; --local then makes it forget and need pairing', async () => {
    const u = fx.unit();
    await pairNow(u);
    const stored = readFileSync(u.credentials, 'utf8');
    const accessToken = accessTokenOf(u);
    const daemon = startAgent({ apiUrl: fx.cloud.url, dirs: u.dirs, timeScale: DAEMON_SCALE });
    await reach(u, daemon, 'online', 10_000);
    const since = fx.cloud.journal.length;
    const r = await runCommand(['unpair', '--json', ...settingsArgs(u.s)], u.dirs);
    expect(r.code).toBe(78);
    expect(r.events).toEqual([expect.objectContaining({ ok: false, exitCode: 78, error: expect.objectContaining({ kind: 'config', message: expect.stringContaining('nothing was forgotten') }) })]);
    expect(readFileSync(u.credentials, 'utf8')).toBe(stored);
    expect(posts(fx.cloud, since, REVOKE_PATH)).toEqual([]);
    expect((await reach(u, daemon, 'online', 1_000)).json.pid).toBe(daemon.pid);

    const local = await runCommand(['unpair', '--json', '--local', ...settingsArgs(u.s)], u.dirs);
    expect(local.code).toBe(0);
    expect(local.events).toEqual([expect.objectContaining({ ok: true, revoked: false, removed: true, daemon: 'running' })]);
    expect(existsSync(u.credentials)).toBe(false);
    await reach(u, daemon, 'needs-pairing', 3_000);
    // Forgotten here only, as asked: the service still honours the token.
    expect(await getMe(fx.cloud, accessToken)).toBe(200);
    expect(r.stdout + local.stdout).not.toMatch(FAKE_SECRET);
  });
});
