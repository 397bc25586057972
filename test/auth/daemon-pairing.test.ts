// The daemon's own pairing (auth/daemon-pairing.ts) against the in-process
// fake cloud: the code comes back to the caller and goes out on the bus, the
// grant is verified, stored by the credentials writer and announced
// (credentialsReplaced) so the controller uses it at once; a cancel stores
// nothing; no client secret is refused before the service is asked; unpair
// revokes and forgets. The device code never appears in any event.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createServiceApi } from '../../agent/api/service.js';
import { removeCredentials, saveCredentials, type CredentialsFile } from '../../agent/auth/credentials-store.js';
import { DaemonPairing } from '../../agent/auth/daemon-pairing.js';
import type { Settings } from '../../agent/config/types.js';
import { EventBus, type AgentEvents } from '../../agent/core/event-bus.js';
import type { PairingProgress } from '../../agent/auth/events.js';
import { startFakeCloud, type FakeCloud } from '../fake-cloud/index.js';
import { settingsIn, tempDir } from '../support/auth-fixtures.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';

// One FakeClock for the daemon's side and the fake's: the code's poll interval, its expiry and the
// service's answers all play in agent time, turned by the test (untilAgent).
const clock = new FakeClock();
const origin = clock.now();
let cloud: FakeCloud;
const dirs: Array<() => void> = [];
beforeAll(async () => {
  cloud = await startFakeCloud({ devices: 0, clock: { now: () => clock.now() - origin, setTimer: (fn, ms) => clock.setTimer(fn, ms) }, wallStart: clock.wallNow() });
});
afterAll(async () => {
  await cloud?.close();
  for (const d of dirs) d();
});

let n = 0;
function rig(o: { secret?: boolean; installFails?: NodeJS.ErrnoException } = {}) {
  const t = tempDir('c2c-daemon-pair-');
  dirs.push(t.cleanup);
  const secretFile = path.join(t.dir, 'client.secret');
  writeFileSync(secretFile, `${cloud.clientSecret}\n`, { mode: 0o600 });
  const settings: Settings = settingsIn(path.join(t.dir, 'state'), { apiUrl: cloud.url, ...(o.secret !== false && { clientSecretFile: secretFile }) });
  settings.tokenFile = path.join(settings.stateDir, 'credentials.json');
  const bus = new EventBus();
  const progress: PairingProgress[] = [];
  const replaced: Array<AgentEvents['credentialsReplaced']> = [];
  const owner = {};
  bus.on('pairing', owner, (p) => progress.push(p));
  bus.on('credentialsReplaced', owner, (r) => replaced.push(r));
  const api = createServiceApi({ baseUrl: cloud.url, token: () => undefined, firmwareVersion: '1.0.0', agentVersion: 'test', clock });
  const installs: CredentialsFile[] = [];
  const clientId = `daemon-pair-${++n}`;
  const pairing = new DaemonPairing({
    settings,
    clock,
    random: Math.random,
    bus,
    oauth: api.oauth,
    verifier: (token) => createServiceApi({ baseUrl: cloud.url, token: () => token, firmwareVersion: '1.0.0', agentVersion: 'test', clock }),
    clientId: async () => clientId,
    credentials: {
      install: async (f) => {
        if (o.installFails) throw o.installFails;
        installs.push(f);
        await saveCredentials(settings.tokenFile, f);
      },
      forget: () => removeCredentials(settings.tokenFile),
    },
  });
  pairing.start();
  return { settings, pairing, progress, replaced, installs, close: () => api.close() };
}

const codeRequests = (): number => cloud.journal.filter((e) => e.path === '/v2/auth/device/code').length;
/**
 * Half an agent second a turn, the flow's requests (real HTTP to the in-process fake) answered between
 * turns; never past 100 agent s, inside the code's 120 s life.
 */
const untilAgent = (what: string, ok: () => boolean): Promise<unknown> => until(what, ok, { clock, stepMs: 500, agentMs: 100_000 });

describe('DaemonPairing', () => {
  it('a file-system failure storing the approved grant ends the flow failed with its kind (disk, 75) and the file named, not internal (1)', async () => {
    const full = Object.assign(new Error('ENOSPC: no space left on device, open'), { code: 'ENOSPC', errno: -28, syscall: 'open' });
    const r = rig({ installFails: full });
    const code = await r.pairing.begin();
    expect(cloud.control.approve(code.user_code)).toBe(true);
    await untilAgent('failed', () => r.progress.some((p) => p.phase === 'failed'));
    const failed = r.progress.find((p) => p.phase === 'failed');
    expect(failed).toMatchObject({ phase: 'failed', exitCode: 75, error: { kind: 'disk', message: expect.stringContaining(r.settings.tokenFile) } });
    expect(r.replaced).toEqual([]);
    await r.pairing.stop();
    r.close();
  });

  it('begin() answers with the code; approved, the grant is verified, stored and announced; no device code anywhere', async () => {
    const r = rig();
    const code = await r.pairing.begin();
    expect(code).toMatchObject({ phase: 'code', user_code: expect.any(String), verification_uri: expect.stringMatching(/^http/), expires_in: expect.any(Number) });
    // A second caller joins the flow under way: same code, no second request.
    const before = codeRequests();
    expect(await r.pairing.begin()).toEqual(code);
    expect(codeRequests()).toBe(before);
    expect(cloud.control.approve(code.user_code)).toBe(true);
    await untilAgent('paired', () => r.progress.some((p) => p.phase === 'paired'));
    const paired = r.progress.find((p) => p.phase === 'paired');
    expect(paired).toEqual({ phase: 'paired', verified: true, device: expect.objectContaining({ id: expect.any(String) }), warnings: [] });
    expect(r.progress.map((p) => p.phase)).toEqual(expect.arrayContaining(['code', 'verifying', 'paired']));
    expect(r.replaced).toEqual([{ why: 'paired' }]);
    const stored = JSON.parse(readFileSync(r.settings.tokenFile, 'utf8')) as CredentialsFile;
    expect(stored.access_token).toBe(r.installs[0]!.access_token);
    expect(r.pairing.active).toBe(false);
    // The device code is the one secret of the flow: it is never in an event.
    expect(JSON.stringify(r.progress)).not.toMatch(/fcd_/);
    expect(JSON.stringify(r.progress)).not.toContain(stored.access_token);
    await r.pairing.stop();
    r.close();
  });

  it('cancel() while waiting: a cancelled event, nothing stored; cancel() again says not pairing', async () => {
    const r = rig();
    await r.pairing.begin();
    await untilAgent('waiting', () => r.progress.some((p) => p.phase === 'waiting'));
    expect(r.pairing.cancel()).toBe('cancelled');
    await untilAgent('cancelled', () => r.progress.some((p) => p.phase === 'cancelled'));
    expect(r.pairing.cancel()).toBe('not-pairing');
    expect(existsSync(r.settings.tokenFile)).toBe(false);
    expect(r.installs).toEqual([]);
    expect(r.replaced).toEqual([]);
    r.close();
  });

  it('no client secret: refused (config, exit 78) before the service is asked for a code', async () => {
    const r = rig({ secret: false });
    const before = codeRequests();
    await expect(r.pairing.begin()).rejects.toMatchObject({ kind: 'config', exitCode: 78 });
    expect(codeRequests()).toBe(before);
    expect(r.pairing.active).toBe(false);
    r.close();
  });

  it('unpair(): revokes at the service, forgets the file, announces it; the old token is refused', async () => {
    const r = rig();
    const code = await r.pairing.begin();
    cloud.control.approve(code.user_code);
    await untilAgent('paired', () => r.progress.some((p) => p.phase === 'paired'));
    const token = r.installs[0]!.access_token;
    const out = await r.pairing.unpair(false);
    expect(out).toEqual({ revoked: true, removed: true, warnings: [] });
    expect(existsSync(r.settings.tokenFile)).toBe(false);
    expect(r.replaced).toEqual([{ why: 'paired' }, { why: 'unpaired' }]);
    const me = await fetch(`${cloud.url}/v2/devices/me`, { headers: { authorization: `Bearer ${token}` } });
    expect(me.status).toBe(401);
    r.close();
  });

  it('unpair() without a client secret forgets nothing (78) unless local', async () => {
    const r = rig({ secret: false });
    mkdirSync(r.settings.stateDir, { recursive: true });
    writeFileSync(r.settings.tokenFile, JSON.stringify({ access_token: 'fca_local_only_0001', refresh_token: 'fcr_local_only_0001', token_type: 'bearer', expires_in: 3600 }), { mode: 0o600 });
    await expect(r.pairing.unpair(false)).rejects.toMatchObject({ kind: 'config', message: expect.stringContaining('nothing was forgotten') });
    expect(existsSync(r.settings.tokenFile)).toBe(true);
    expect(await r.pairing.unpair(true)).toMatchObject({ revoked: false, removed: true });
    expect(existsSync(r.settings.tokenFile)).toBe(false);
    r.close();
  });
});
