// The OAuth endpoints (api/oauth.ts) over the real transport against the
// in-process fake cloud: device code, polling, refresh rotation, revoke,
// refusals as typed errors, damaged answers, headers, and secret scrubbing.
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startFakeCloud, type FakeCloud } from '../fake-cloud/index.js';
import { VirtualClock } from '../support/virtual-clock.js';
import { createServiceApi, type ServiceApi } from '../../agent/api/service.js';
import type { ClientCredentials } from '../../agent/api/oauth.js';
import { readClientSecret } from '../../agent/auth/client-secret.js';
import { SystemClock } from '../../agent/lib/clock.js';
import { scrub } from '../../agent/lib/secrets.js';
import { tempDir } from '../support/auth-fixtures.js';
import { failure } from './failure.js';

const FIRMWARE = '2.3.4-rc.1';
const cloudClock = new VirtualClock();
let cloud: FakeCloud;
let tmp: ReturnType<typeof tempDir>;
const apis: ServiceApi[] = [];
let nextDevice = 0;

beforeAll(async () => {
  cloud = await startFakeCloud({ devices: 14, clock: cloudClock.now });
  tmp = tempDir('c2c-oauth-');
});
afterEach(() => cloud.control.clearFaults());
afterAll(async () => {
  for (const a of apis) a.close();
  await cloud.close();
  tmp.cleanup();
});

function api(token: string | (() => string | undefined) = () => undefined): ServiceApi {
  const a = createServiceApi({ baseUrl: cloud.url, token, firmwareVersion: FIRMWARE, agentVersion: '9.9.9', clock: new SystemClock(1) });
  apis.push(a);
  return a;
}

/** A seeded, paired device of its own for each test (refresh tokens are single use). */
function device() {
  const d = cloud.devices[nextDevice++]!;
  return { d, client: { clientId: d.clientId, clientSecret: cloud.clientSecret } as ClientCredentials };
}

/** The client credentials as the agent gets them: the secret read from a 0600 file. */
function clientFromFile(clientId: string): ClientCredentials {
  const file = path.join(tmp.dir, `secret-${clientId}`);
  writeFileSync(file, `${cloud.clientSecret}\n`);
  chmodSync(file, 0o600);
  return { clientId, clientSecret: readClientSecret({ clientSecretFile: file, sources: {} }) };
}

describe('device-code pairing', () => {
  test('requestDeviceCode sends the client and scope and asks for verification_uri_complete; poll: pending, then tokens after approval', async () => {
    const clientId = 'c2c-test-client-0001';
    const o = api().oauth;
    const code = await o.requestDeviceCode({ clientId, clientSecret: cloud.clientSecret });
    expect(code.userCode).toMatch(/^\d{6}$/);
    expect(code.deviceCode.length).toBeGreaterThan(10);
    expect(code.expiresInSeconds).toBe(120);
    expect(code.intervalSeconds).toBe(5);
    expect(code.verificationUri).toMatch(/\/pair$/);
    // The fake sends it only when x-client-platypus-enabled: true came with the request.
    expect(code.verificationUriComplete).toBe(`${code.verificationUri}?user_code=${code.userCode}`);
    await expect(o.pollDeviceCode({ clientId, clientSecret: cloud.clientSecret }, code.deviceCode)).resolves.toEqual({ kind: 'pending' });
    expect(cloud.control.approve(code.userCode)).toBe(true);
    const outcome = await o.pollDeviceCode({ clientId, clientSecret: cloud.clientSecret }, code.deviceCode);
    if (outcome.kind !== 'tokens') throw new Error(`expected tokens, got ${outcome.kind}`);
    const g = outcome.grant;
    // The client_id named the device; the scope's `offline` is why a refresh token came.
    const deviceId = cloud.deviceIdForClient(clientId);
    expect(deviceId).toBeDefined();
    expect(g.refreshToken).toEqual(expect.any(String));
    expect(g.expiresInSeconds).toBe(28_800);
    expect(g.tokenType.toLowerCase()).toBe('bearer');
    expect(g.meta.clockOffsetMs).toEqual(expect.any(Number));
    const me = await api(g.accessToken).getDevice();
    expect(me.value.id).toBe(deviceId);
    // The code is used up now.
    const again = await failure(o.pollDeviceCode({ clientId, clientSecret: cloud.clientSecret }, code.deviceCode));
    expect(again.kind).toBe('unauthorized');
    expect(again.details.code).toBe('invalid_grant');
  });

  test('polling faster than the interval: slow-down; after 120 s: expired', async () => {
    const client = { clientId: 'c2c-test-client-0002', clientSecret: cloud.clientSecret };
    const o = api().oauth;
    const code = await o.requestDeviceCode(client);
    await expect(o.pollDeviceCode(client, code.deviceCode)).resolves.toEqual({ kind: 'pending' });
    await cloudClock.advance(1_000);
    await expect(o.pollDeviceCode(client, code.deviceCode)).resolves.toEqual({ kind: 'slow-down' });
    await cloudClock.advance(120_000);
    await expect(o.pollDeviceCode(client, code.deviceCode)).resolves.toEqual({ kind: 'expired' });
  });

  test('a wrong client secret: kind config, code invalid_client (exit 78)', async () => {
    const e = await failure(api().oauth.requestDeviceCode({ clientId: 'c2c-test-client-0003', clientSecret: 'not-the-model-secret' }));
    expect(e.kind).toBe('config');
    expect(e.exitCode).toBe(78);
    expect(e.details.code).toBe('invalid_client');
    expect(e.details.status).toBe(400);
  });
});

describe('refresh', () => {
  test('rotates the pair; the old refresh token a second time: unauthorized, invalid_request', async () => {
    const { d, client } = device();
    const o = api().oauth;
    const g = await o.refresh(client, d.refreshToken);
    expect(g.accessToken).not.toBe(d.accessToken);
    expect(g.refreshToken).toEqual(expect.any(String));
    expect(g.refreshToken).not.toBe(d.refreshToken);
    expect((await api(g.accessToken).getDevice()).value.id).toBe(d.id);
    const e = await failure(o.refresh(client, d.refreshToken));
    expect(e.kind).toBe('unauthorized');
    expect(e.exitCode).toBe(77);
    expect(e.details.code).toBe('invalid_request');
    // The new one still works.
    await expect(o.refresh(client, g.refreshToken!)).resolves.toMatchObject({ accessToken: expect.any(String) });
  });

  test('a wrong client secret: kind config, code invalid_client', async () => {
    const { d } = device();
    const e = await failure(api().oauth.refresh({ clientId: d.clientId, clientSecret: 'wrong-secret-000' }, d.refreshToken));
    expect(e.kind).toBe('config');
    expect(e.details.code).toBe('invalid_client');
  });

  test('an unknown refresh token: unauthorized, invalid_grant', async () => {
    const { client } = device();
    const e = await failure(api().oauth.refresh(client, 'no-such-refresh-token'));
    expect(e.kind).toBe('unauthorized');
    expect(e.details.code).toBe('invalid_grant');
  });

  test.each(['malformed-json', 'wrong-types'] as const)('a %s token answer: kind protocol', async (kind) => {
    const { d, client } = device();
    cloud.control.addFault({ kind, path: '/v2/auth/token' });
    const e = await failure(api().oauth.refresh(client, d.refreshToken));
    expect(e.kind).toBe('protocol');
    expect(e.exitCode).toBe(76);
  });

  test('429, 503 and a reset are transient kinds (the token source retries them), and the refresh token is not spent', async () => {
    const { d, client } = device();
    const o = api().oauth;
    const cases = [
      [{ kind: 'rate-limit', retryAfter: '7' }, 'rate-limited'],
      [{ kind: 'status', status: 503 }, 'server'],
      [{ kind: 'reset' }, 'network'],
    ] as const;
    for (const [fault, kind] of cases) {
      const f = cloud.control.addFault({ ...fault, path: '/v2/auth/token' });
      const e = await failure(o.refresh(client, d.refreshToken));
      f.remove();
      expect(e.kind).toBe(kind);
      if (kind === 'rate-limited') expect(e.details.retryAfterMs).toBe(7_000);
    }
    await expect(o.refresh(client, d.refreshToken)).resolves.toMatchObject({ refreshToken: expect.any(String) });
  });

  test('a wrong-types device-code answer: kind protocol', async () => {
    cloud.control.addFault({ kind: 'wrong-types', path: '/v2/auth/device/code' });
    const e = await failure(api().oauth.requestDeviceCode({ clientId: 'c2c-test-client-0004', clientSecret: cloud.clientSecret }));
    expect(e.kind).toBe('protocol');
  });
});

describe('revoke', () => {
  test('200, then neither token works', async () => {
    const { d, client } = device();
    const o = api().oauth;
    await expect(o.revoke(client, d.refreshToken)).resolves.toBeUndefined();
    expect((await failure(api(d.accessToken).getDevice())).kind).toBe('unauthorized');
    const e = await failure(o.refresh(client, d.refreshToken));
    expect(e.kind).toBe('unauthorized');
    expect(e.details.code).toBe('invalid_grant');
  });

  test('an unknown token is not an error (RFC 7009)', async () => {
    const { client } = device();
    await expect(api().oauth.revoke(client, 'never-issued-token-0')).resolves.toBeUndefined();
  });
});

describe('on the wire', () => {
  test('every request carries x-client-version, OAuth calls included', async () => {
    const before = cloud.journal.length;
    const { d, client } = device();
    const o = api().oauth;
    const code = await o.requestDeviceCode(client);
    await o.pollDeviceCode(client, code.deviceCode);
    const g = await o.refresh(client, d.refreshToken);
    await o.revoke(client, g.accessToken);
    await o.refresh({ ...client, clientSecret: 'wrong-secret-000' }, g.refreshToken!).catch(() => undefined);
    const entries = cloud.journal.slice(before);
    expect(entries.map((e) => e.path)).toEqual(['/v2/auth/device/code', '/v2/auth/token', '/v2/auth/token', '/v2/auth/revoke', '/v2/auth/token']);
    expect(entries.every((e) => e.method === 'POST' && e.clientVersion === FIRMWARE)).toBe(true);
  });

  test('the device code, both tokens and the client secret are registered with scrub()', async () => {
    const { d } = device();
    const client = clientFromFile(d.clientId);
    const o = api().oauth;
    const code = await o.requestDeviceCode(client);
    const g = await o.refresh(client, d.refreshToken);
    const text = `dc=${code.deviceCode} at=${g.accessToken} rt=${g.refreshToken} cs=${client.clientSecret} uc=${code.userCode}`;
    expect(scrub(text)).toBe(`dc=[redacted] at=[redacted] rt=[redacted] cs=[redacted] uc=${code.userCode}`);
  });
});
