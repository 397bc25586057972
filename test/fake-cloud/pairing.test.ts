import { afterEach, describe, expect, it } from '@jest/globals';
import { startFakeCloud } from './index.js';
import type { FakeCloud, FakeCloudOptions } from './index.js';
import { call } from './test-helpers.js';
import { VirtualClock } from '../support/virtual-clock.js';

let cloud: FakeCloud | undefined;
afterEach(async () => {
  await cloud?.close();
  cloud = undefined;
});

const GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
type Json = Record<string, any>;

async function start(o: FakeCloudOptions = {}): Promise<{ c: FakeCloud; clock: VirtualClock }> {
  const clock = new VirtualClock();
  cloud = await startFakeCloud({ clock: clock.now, ...o });
  return { c: cloud, clock };
}

/** Posts a form, urlencoded or multipart (fetch encodes FormData as multipart/form-data). */
async function post(c: FakeCloud, path: string, fields: Record<string, string>, multipart = false, headers: Record<string, string> = {}) {
  let body: URLSearchParams | FormData = new URLSearchParams(fields);
  if (multipart) {
    const fd = new FormData();
    for (const [k, v] of Object.entries(fields)) fd.append(k, v);
    body = fd;
  }
  const r = await call(c.url, path, { method: 'POST', body, headers });
  return { status: r.status, body: (await r.json()) as Json, headers: r.headers };
}

function client(c: FakeCloud, clientId = 'unit-0001') {
  const base = { client_id: clientId, client_secret: c.clientSecret };
  return {
    code: (multipart = false, headers: Record<string, string> = {}) =>
      post(c, '/v2/auth/device/code', { ...base, scope: 'asset_create offline' }, multipart, headers),
    poll: (deviceCode: string, multipart = false) =>
      post(c, '/v2/auth/token', { ...base, grant_type: GRANT, device_code: deviceCode }, multipart),
    refresh: (refreshToken: string, multipart = false) =>
      post(c, '/v2/auth/token', { ...base, grant_type: 'refresh_token', refresh_token: refreshToken }, multipart),
    revoke: (token: string, multipart = false) => post(c, '/v2/auth/revoke', { ...base, token }, multipart),
  };
}

describe('pairing and tokens', () => {
  it('issues a device code from a urlencoded or a multipart form', async () => {
    const { c } = await start();
    for (const multipart of [false, true]) {
      const r = await client(c).code(multipart);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ expires_in: 120, interval: 5, verification_uri: `${c.url}/pair`, verification_uri_complete: null });
      expect(r.body.user_code).toMatch(/^\d{6}$/);
      expect(typeof r.body.device_code).toBe('string');
      expect(typeof r.body.name).toBe('string');
      expect(r.headers.get('x-ratelimit-limit')).not.toBeNull();
    }
    const qr = await client(c).code(false, { 'x-client-platypus-enabled': 'true' });
    expect(qr.body.verification_uri_complete).toBe(`${c.url}/pair?user_code=${qr.body.user_code}`);
  });

  it('refuses a wrong client secret, a body that is not a form, and missing fields', async () => {
    const { c } = await start();
    const wrong = await post(c, '/v2/auth/device/code', { client_id: 'u', client_secret: 'nope', scope: 'offline' });
    expect(wrong).toMatchObject({ status: 400, body: { error: 'invalid_client' } });
    const asJson = await call(c.url, '/v2/auth/device/code', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: 'u', client_secret: c.clientSecret }),
    });
    expect(asJson.status).toBe(400);
    expect(await asJson.json()).toEqual({ error: 'invalid_request' });
    expect((await post(c, '/v2/auth/token', { client_id: 'u', client_secret: c.clientSecret })).body).toEqual({ error: 'invalid_request' });
    const badVersion = await call(c.url, '/v2/auth/device/code', { method: 'POST', version: 'one', body: new URLSearchParams({}) });
    expect(badVersion.status).toBe(422);
  });

  it('reads multipart fields sent as file parts, and refuses a multipart body without a boundary', async () => {
    const { c } = await start();
    const fd = new FormData();
    fd.append('client_id', 'unit-file-parts');
    fd.append('client_secret', new Blob([c.clientSecret]), 'secret.txt');
    fd.append('scope', 'offline');
    const r = await call(c.url, '/v2/auth/device/code', { method: 'POST', body: fd });
    expect(r.status).toBe(200);
    expect(((await r.json()) as Json).user_code).toMatch(/^\d{6}$/);
    const noBoundary = await call(c.url, '/v2/auth/device/code', {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data' },
      body: 'client_id=x',
    });
    expect(noBoundary.status).toBe(400);
    expect(await noBoundary.json()).toEqual({ error: 'invalid_request' });
  });

  it('walks pending, slow_down, approval and a consumed code', async () => {
    const { c, clock } = await start();
    const u = client(c);
    const code = (await u.code()).body;
    expect((await u.poll(code.device_code)).body).toEqual({ error: 'authorization_pending' });
    await clock.advance(1000);
    expect((await u.poll(code.device_code, true)).body).toEqual({ error: 'slow_down' });
    // slow_down added 5 s: the interval is now 10 s.
    await clock.advance(6000);
    expect((await u.poll(code.device_code)).body).toEqual({ error: 'slow_down' });
    // and another 5 s: 15 s.
    await clock.advance(14_900);
    expect((await u.poll(code.device_code)).body).toEqual({ error: 'slow_down' });
    await clock.advance(20_000);
    expect((await u.poll(code.device_code)).body).toEqual({ error: 'authorization_pending' });
    expect(c.control.approve('000000x')).toBe(false);
    expect(c.control.approve(code.user_code)).toBe(true);
    await clock.advance(15_000);
    const t = await u.poll(code.device_code);
    expect(t.status).toBe(200);
    expect(t.body).toMatchObject({ expires_in: 28800, token_type: 'bearer' });
    expect(typeof t.body.access_token).toBe('string');
    expect(typeof t.body.refresh_token).toBe('string');
    expect((await u.poll(code.device_code)).body).toEqual({ error: 'invalid_grant' });
    const id = c.deviceIdForClient('unit-0001')!;
    const me = await call(c.url, '/v2/devices/me', { token: t.body.access_token });
    expect(((await me.json()) as Json).id).toBe(id);
    expect(c.device(id)!.status).toBe('online');
  });

  it('expires an unapproved code after 120 agent seconds', async () => {
    const { c, clock } = await start();
    const u = client(c);
    const code = (await u.code()).body;
    await clock.advance(120_000);
    expect(c.control.approve(code.user_code)).toBe(false);
    expect((await u.poll(code.device_code)).body).toEqual({ error: 'expired_token' });
  });

  it('approves automatically after autoApproveSeconds', async () => {
    const { c, clock } = await start({ autoApproveSeconds: 10 });
    const u = client(c);
    const code = (await u.code()).body;
    await clock.advance(5000);
    expect((await u.poll(code.device_code)).body).toEqual({ error: 'authorization_pending' });
    await clock.advance(5000);
    expect((await u.poll(code.device_code)).status).toBe(200);
  });

  it('makes refresh tokens single use (reuse: invalid_request) and gives each refresh a new pair', async () => {
    const { c } = await start();
    const d = c.devices[0]!;
    const u = client(c, d.clientId);
    const first = await u.refresh(d.refreshToken, true);
    expect(first.status).toBe(200);
    expect(first.body.refresh_token).not.toBe(d.refreshToken);
    expect(await u.refresh(d.refreshToken)).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    const second = await u.refresh(first.body.refresh_token);
    expect(second.status).toBe(200);
    expect((await call(c.url, '/v2/devices/me', { token: second.body.access_token })).status).toBe(200);
    // A refresh token of another unit is not this client's to use.
    expect((await client(c, 'someone-else').refresh(second.body.refresh_token)).body).toEqual({ error: 'invalid_grant' });
  });

  it('expires refresh tokens after 14 days and access tokens after their lifetime', async () => {
    const { c, clock } = await start({ tokenLifetimeSeconds: 3600 });
    const d = c.devices[0]!;
    await clock.advance(3600_000);
    expect((await call(c.url, '/v2/devices/me', { token: d.accessToken })).status).toBe(401);
    await clock.advance(14 * 24 * 3600_000);
    expect((await client(c, d.clientId).refresh(d.refreshToken)).body).toEqual({ error: 'invalid_grant' });
  });

  it('revokes: every token of the unit stops working', async () => {
    const { c } = await start();
    const d = c.devices[0]!;
    const r = await client(c, d.clientId).revoke(d.accessToken, true);
    expect(r.status).toBe(200);
    expect((await call(c.url, '/v2/devices/me', { token: d.accessToken })).status).toBe(401);
    expect((await client(c, d.clientId).refresh(d.refreshToken)).body).toEqual({ error: 'invalid_grant' });
    // RFC 7009: revoking an unknown token is not an error.
    expect((await client(c, d.clientId).revoke('unknown')).status).toBe(200);
    expect(c.journal.find((e) => e.path === '/v2/auth/revoke')!.deviceId).toBe(d.id);
  });

  it('re-pairing a known unit keeps its device and replaces its tokens', async () => {
    const { c } = await start({ autoApproveSeconds: 0 });
    const d = c.devices[0]!;
    const u = client(c, d.clientId);
    const code = (await u.code()).body;
    const t = await u.poll(code.device_code);
    expect(t.status).toBe(200);
    expect(c.deviceIdForClient(d.clientId)).toBe(d.id);
    expect((await call(c.url, '/v2/devices/me', { token: d.accessToken })).status).toBe(401);
    expect((await call(c.url, '/v2/devices/me', { token: t.body.access_token })).status).toBe(200);
    const text = JSON.stringify(c.journal);
    expect(text).not.toContain(code.device_code);
    expect(text).not.toContain(t.body.refresh_token);
  });
});
