// `c2c-agent unpair` end to end: the built bundle against the in-process
// fake cloud. A unit is paired through `pair` first, so the service knows
// its client id and the revocation really ends an authorization.
import { describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { FAKE_SECRET, runCommand, settingsArgs } from './pair-process.js';
import { REVOKE_PATH, accessTokenOf, getMe, pairNow, posts, reach, startDaemon, usePairingCloud } from './pairing-fixture.js';

const fx = usePairingCloud(40);

describe('unpair', () => {
  it('revokes at the service, forgets the file, and a running daemon goes to needs-pairing', async () => {
    const u = fx.unit();
    const paired = await pairNow(u);
    const deviceId = (paired.device as { id: string }).id;
    const accessToken = accessTokenOf(u);
    const daemon = startDaemon(u);
    await reach(u, daemon, 'online', 10_000);

    const since = fx.cloud.journal.length;
    const r = await runCommand(['unpair', '--json', ...settingsArgs(u.s)], u.dirs);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(r.events).toEqual([{ ok: true, exitCode: 0, revoked: true, removed: true, credentials: u.credentials, daemon: 'signalled', warnings: [] }]);
    expect(posts(fx.cloud, since, REVOKE_PATH)).toEqual([expect.objectContaining({ deviceId, status: 200 })]);
    expect(existsSync(u.credentials)).toBe(false);
    // The service ended the authorization: the old token is refused.
    expect(await getMe(fx.cloud, accessToken)).toBe(401);
    expect(r.stdout).not.toMatch(FAKE_SECRET);

    const after = await reach(u, daemon, 'needs-pairing', 3_000);
    expect(after.exitCode).toBe(77);
    expect(after.json.pid).toBe(daemon.pid);
    expect(daemon.child.exitCode).toBeNull();
    expect(daemon.output()).toContain('reload requested');
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
});
