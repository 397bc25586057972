// `c2c-agent check` end to end: the built bundle as a child process against
// the in-process fake cloud, one scenario per exit code of the contract.
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeCloud, type FakeCloud, type Fault } from '../fake-cloud/index.js';
import { buildBundle, type Bundle } from './bundle.js';
import { runBundle, type RunResult } from './spawn.js';

const FIRMWARE = '1.2.3';
// Fake and agent share the scale, so the 30 s timeout case takes 0.3 s.
const SCALE = 100;
let cloud: FakeCloud;
let bundle: Bundle;
let work: string;

beforeAll(async () => {
  [cloud, bundle] = await Promise.all([startFakeCloud({ devices: 3, timeScale: SCALE }), buildBundle()]);
  work = mkdtempSync(path.join(tmpdir(), 'c2c-check-'));
}, 60_000);
afterEach(() => cloud.control.clearFaults());
afterAll(async () => {
  await cloud?.close();
  bundle?.cleanup();
  rmSync(work, { recursive: true, force: true });
});

let n = 0;
function stateDir(): string {
  const dir = path.join(work, `state-${n++}`);
  mkdirSync(dir);
  return dir;
}

interface Checked extends RunResult {
  json?: Record<string, unknown>;
  /** "METHOD path" of every request the fake journaled during the run. */
  requests: string[];
}

/** Runs check; asserts the contract's output shape and that every request carried the firmware version. */
async function check(env: Record<string, string>, opts: { json?: boolean; args?: string[]; fault?: Fault } = {}): Promise<Checked> {
  if (opts.fault) cloud.control.addFault(opts.fault);
  const before = cloud.journal.length;
  const args = ['check', ...(opts.json === false ? [] : ['--json']), ...(opts.args ?? [])];
  const run = await runBundle(bundle.file, args, {
    env: { C2C_API_URL: cloud.url, C2C_FIRMWARE_VERSION: FIRMWARE, C2C_STATE_DIR: stateDir(), C2C_TIME_SCALE: String(SCALE), ...env },
  });
  const entries = cloud.journal.slice(before);
  for (const entry of entries) expect(entry.clientVersion).toBe(env.C2C_FIRMWARE_VERSION ?? FIRMWARE);
  const r: Checked = { ...run, requests: entries.map((e) => `${e.method} ${e.path}`) };
  if (r.status !== 0) expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  if (opts.json !== false) {
    // Exactly one JSON object on stdout.
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(1);
    r.json = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(r.json).toMatchObject({ ok: r.status === 0, exitCode: r.status });
  }
  return r;
}

const token = (i = 0): Record<string, string> => ({ C2C_TOKEN: cloud.devices[i]!.accessToken });

describe('exit 0: paired, token valid', () => {
  test('--json carries the device, project, firmware, profile, clock offset and rate limit', async () => {
    const sentAt = Date.now();
    const r = await check(token());
    const tookMs = Date.now() - sentAt;
    const d = cloud.devices[0]!;
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.json).toMatchObject({
      device: { id: d.id, name: d.name, status: expect.any(String), project_id: d.projectId, project: d.projectName, channels: expect.any(Array) },
      firmwareVersion: FIRMWARE,
      profile: 'audio-2ch',
      clockOffsetMs: expect.any(Number),
      rateLimit: { limit: expect.any(Number), remaining: expect.any(Number), windowMs: expect.any(Number) },
      missingScopes: [],
    });
    // Wall time on purpose: the offset is the service's Date header against this host's wall clock.
    // One host: the Date header's rounding (its whole second plus 500, less the wall time the answer was read
    // at) and whatever the process took, which load only lengthens: a bound a stall widens, never breaks.
    expect(r.json!.clockOffsetMs as number).toBeLessThanOrEqual(500);
    expect(r.json!.clockOffsetMs as number).toBeGreaterThanOrEqual(-500 - tookMs);
    expect(r.requests).toEqual(['GET /v2/devices/me']);
  });

  test('human output from a token file: device, project, scopes, firmware and profile', async () => {
    const dir = stateDir();
    const d = cloud.devices[0]!;
    writeFileSync(path.join(dir, 'credentials.json'), JSON.stringify({ access_token: d.accessToken, refresh_token: d.refreshToken, token_type: 'bearer' }), { mode: 0o600 });
    const r = await check({ C2C_STATE_DIR: dir }, { json: false });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`paired: ${d.name} (device ${d.id})`);
    expect(r.stdout).toContain(`project: ${d.projectName} (id ${d.projectId})`);
    expect(r.stdout).toContain('scopes: asset_create yes, offline yes, device_connect yes');
    expect(r.stdout).toContain(`firmware version sent: ${FIRMWARE} (from environment C2C_FIRMWARE_VERSION)`);
    expect(r.stdout).toContain('profile: audio-2ch');
    expect(r.stdout).toMatch(/clock: service clock \d+\.\d s (ahead of|behind) this unit/);
    expect(r.stdout).not.toContain('warning:');
  });

  test('works from a directory holding only the bundle (no node_modules)', async () => {
    const r = await runBundle(bundle.file, ['check', '--json'], { cwd: bundle.dir, env: { C2C_API_URL: cloud.url, C2C_STATE_DIR: stateDir(), ...token() } });
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, firmwareVersion: '0.0.0', profile: 'generic' });
  });
});

describe('exit 77: not authorized', () => {
  test('a token the fake rejects', async () => {
    const r = await check({ C2C_TOKEN: 'fca_this_token_was_never_issued' });
    expect(r.status).toBe(77);
    // A 401 proves the service is up: no /health probe.
    expect(r.requests).toEqual(['GET /v2/devices/me']);
    expect(r.json).toMatchObject({ error: { kind: 'unauthorized', status: 401 }, firmwareVersion: FIRMWARE, device: null });
    expect(r.stderr).toMatch(/^c2c-agent: unit not authorized: GET \/v2\/devices\/me: HTTP 401/);
    expect(r.stdout + r.stderr).not.toContain('fca_this_token_was_never_issued');
    // Pairing cannot help while C2C_TOKEN wins: the advice says what can, in the line and in --json.
    expect(r.stderr).toContain('C2C_TOKEN is set and wins over pairing: give a valid token in C2C_TOKEN, or unset it and run `c2c-agent pair`');
    expect(r.stderr).not.toMatch(/; run `c2c-agent pair`\)?$/m);
    expect((r.json?.error as { message: string }).message).toContain('C2C_TOKEN is set and wins over pairing');
  });

  test('a revoked token', async () => {
    cloud.control.revokeTokens(cloud.devices[2]!.id);
    const r = await check(token(2));
    expect(r.status).toBe(77);
    expect(r.json).toMatchObject({ error: { kind: 'unauthorized' } });
  });

  test('no credentials at all: names the file and says to pair; no request made', async () => {
    const dir = stateDir();
    const r = await check({ C2C_STATE_DIR: dir });
    expect(r.status).toBe(77);
    expect(r.requests).toEqual([]);
    expect(r.stderr).toContain(`no credentials in ${path.join(dir, 'credentials.json')} and C2C_TOKEN is unset`);
    expect(r.stderr).toContain('c2c-agent pair');
  });
});

describe('exit 69: service unavailable', () => {
  test('nothing listening on the port', async () => {
    const dead = await startFakeCloud({ devices: 1 });
    const url = dead.url;
    await dead.close();
    const r = await check({ ...token(), C2C_API_URL: url });
    expect(r.status).toBe(69);
    expect(r.json).toMatchObject({ error: { kind: 'network', code: 'ECONNREFUSED' }, service: 'unreachable' });
    expect(r.stderr).toMatch(/^c2c-agent: service unreachable: .*connection refused/);
  });

  test.each(['reset', 'truncated'] as const)('%s on the device call while /health is fine: a coherent message, still 69', async (kind) => {
    const r = await check(token(), { fault: { kind, path: '/v2/devices/me' } });
    expect(r.status).toBe(69);
    expect(r.json).toMatchObject({ error: { kind: 'network', code: expect.any(String) }, service: 'up' });
    expect(r.requests).toEqual(['GET /v2/devices/me', 'GET /health']);
    expect(r.stderr).toMatch(/^c2c-agent: the connection broke while reading GET \/v2\/devices\/me \([A-Z_]+\); the service's \/health answers, so retry\n$/);
    expect(r.stderr).not.toContain('check the network');
  });

  test('no answer from the device call while /health is fine: says the service may be overloaded, still 69', async () => {
    const r = await check(token(), { fault: { kind: 'delay', delayMs: 120_000, path: '/v2/devices/me' } });
    expect(r.status).toBe(69);
    expect(r.json).toMatchObject({ error: { kind: 'network', code: 'ETIMEDOUT' }, service: 'up' });
    expect(r.stderr).toContain("GET /v2/devices/me got no answer in time (ETIMEDOUT), but the service's /health answers");
  });

  test('no answer within 30 agent seconds', async () => {
    const r = await check(token(), { fault: { kind: 'delay', delayMs: 120_000 } });
    expect(r.status).toBe(69);
    expect(r.json).toMatchObject({ error: { kind: 'network', code: 'ETIMEDOUT' }, service: 'unreachable' });
  });
});

describe('exit 75: temporary failure', () => {
  test('500 from the device call while /health is fine', async () => {
    const r = await check(token(), { fault: { kind: 'status', status: 500, path: '/v2/devices/me' } });
    expect(r.status).toBe(75);
    expect(r.json).toMatchObject({ error: { kind: 'server', status: 500 }, service: 'up' });
    // One try, then the probe: no hidden retries.
    expect(r.requests).toEqual(['GET /v2/devices/me', 'GET /health']);
    expect(r.stderr).toContain('service is up (GET /health ok) but the device call failed');
  });

  test('500 everywhere: the service is unhealthy', async () => {
    const r = await check(token(), { fault: { kind: 'status', status: 503 } });
    expect(r.status).toBe(75);
    expect(r.json).toMatchObject({ service: 'unhealthy' });
  });

  test('429 with the rate-limit view', async () => {
    const r = await check(token(), { fault: { kind: 'rate-limit', path: '/v2/devices/me', retryAfter: '5' } });
    expect(r.status).toBe(75);
    expect(r.json).toMatchObject({ error: { kind: 'rate-limited', status: 429 }, rateLimit: { limit: expect.any(Number) } });
  });
});

describe('exit 76: protocol error', () => {
  test.each(['malformed-json', 'wrong-types'] as const)('%s', async (kind) => {
    const r = await check(token(), { fault: { kind, path: '/v2/devices/me' } });
    expect(r.status).toBe(76);
    expect(r.json).toMatchObject({ error: { kind: 'protocol', status: 200 }, service: 'up' });
  });
});

describe('exit 78: configuration error, before any request', () => {
  const brokenProfiles = (): string => {
    const dir = path.join(work, `profiles-${n++}`);
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'cam.json'), '{"id": "cam", "name": ');
    return dir;
  };

  test.each([
    ['an invalid firmware version', () => ({ C2C_FIRMWARE_VERSION: 'v1.2' }), "firmware version 'v1.2' from environment C2C_FIRMWARE_VERSION"],
    ['a non-loopback http:// URL', () => ({ C2C_API_URL: 'http://cloud.example.com', C2C_TIME_SCALE: '' }), "API URL 'http://cloud.example.com'"],
    ['a broken profile directory', () => ({ C2C_PROFILES_DIR: brokenProfiles() }), 'cam.json'],
  ])('%s', async (_label, env, text) => {
    const r = await check({ ...token(), ...env() });
    expect(r.status).toBe(78);
    expect(r.requests).toEqual([]);
    expect(r.json).toMatchObject({ error: { kind: 'config' } });
    expect(r.stderr).toContain(text);
  });
});

describe('authorization expiry (the person gave the authorization an end date)', () => {
  // Its own fake at scale 1: the fake's timestamps run at its time scale, and
  // "expires in 3 h" must mean 3 h of the same clock the agent reads Date from.
  let local: FakeCloud;
  beforeAll(async () => {
    local = await startFakeCloud({ devices: 1 });
  });
  afterAll(async () => {
    await local?.close();
  });
  const run = (args: string[]) =>
    runBundle(bundle.file, ['check', ...args], {
      env: { C2C_API_URL: local.url, C2C_STATE_DIR: stateDir(), C2C_TOKEN: local.devices[0]!.accessToken },
    });

  test('under 24 h away: exit 0 with a warning, in human and --json form', async () => {
    local.control.setAuthorizationExpiry(local.devices[0]!.id, 3 * 3_600_000);
    const human = await run([]);
    expect(human.status).toBe(0);
    expect(human.stdout).toMatch(/warning: authorization expires in [23] h/);
    const json = JSON.parse((await run(['--json'])).stdout) as Record<string, any>;
    expect(json).toMatchObject({ ok: true, exitCode: 0, expiresAt: expect.any(String) });
    expect(json.warnings.join(' ')).toMatch(/authorization expires in/);
  });

  test('more than a day away: no warning', async () => {
    local.control.setAuthorizationExpiry(local.devices[0]!.id, 3 * 86_400_000);
    const r = await run([]);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/authorization expires: \S+ \(in /);
    expect(r.stdout).not.toContain('warning:');
  });

  test('past: the fake refuses the token, exit 77', async () => {
    local.control.setAuthorizationExpiry(local.devices[0]!.id, -1_000);
    const r = await run(['--json']);
    expect(r.status).toBe(77);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, error: { kind: 'unauthorized', status: 401 } });
    local.control.setAuthorizationExpiry(local.devices[0]!.id, null);
  });
});
