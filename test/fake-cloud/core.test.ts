import { afterEach, describe, expect, it } from '@jest/globals';
import { startFakeCloud } from './index.js';
import type { FakeCloud } from './index.js';
import { SEMVER } from './http.js';
import { call, heartbeat, LEGACY_401 } from './test-helpers.js';
import { VirtualClock } from '../support/virtual-clock.js';

let cloud: FakeCloud | undefined;
afterEach(async () => {
  await cloud?.close();
  cloud = undefined;
});

describe('fake cloud: health, auth, device record', () => {
  it('answers /health without auth, with the rate-limit headers', async () => {
    cloud = await startFakeCloud();
    const r = await call(cloud.url, '/health', { version: null });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: 'ok' });
    expect(r.headers.get('x-ratelimit-limit')).toBe('100');
    expect(r.headers.get('x-ratelimit-remaining')).toBe('99');
    expect(r.headers.get('x-ratelimit-window')).toBe('1000');
    expect(cloud.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(cloud.adminUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('answers missing, unknown, expired and revoked bearers with the exact legacy 401', async () => {
    const clock = new VirtualClock();
    cloud = await startFakeCloud({ devices: 2, clock: clock.now, tokenLifetimeSeconds: 60 });
    const [a, b] = cloud.devices;
    const cases: Array<string | undefined> = [undefined, 'not-a-token', b!.refreshToken];
    for (const token of cases) {
      const r = await call(cloud.url, '/v2/devices/me', token === undefined ? {} : { token });
      expect(r.status).toBe(401);
      expect(r.headers.get('content-type')).toBe('application/json');
      expect(r.headers.get('x-ratelimit-limit')).not.toBeNull();
      expect(await r.text()).toBe(JSON.stringify(LEGACY_401));
    }
    cloud.control.revokeTokens(b!.id);
    expect((await call(cloud.url, '/v2/devices/heartbeat', { method: 'POST', token: b!.accessToken })).status).toBe(401);
    expect((await call(cloud.url, '/v2/devices/me', { token: a!.accessToken })).status).toBe(200);
    await clock.advance(60_000);
    const expired = await call(cloud.url, '/v2/me', { token: a!.accessToken });
    expect(expired.status).toBe(401);
    expect(await expired.json()).toEqual(LEGACY_401);
  });

  it('returns the device record, and /v2/me the user record', async () => {
    cloud = await startFakeCloud();
    const d = cloud.devices[0]!;
    const r = await call(cloud.url, '/v2/devices/me', { token: d.accessToken, version: '2.1.0-beta.1' });
    expect(r.status).toBe(200);
    const body = (await r.json()) as Record<string, any>;
    expect(body).toMatchObject({
      _type: 'project_device',
      id: d.id,
      name: d.name,
      status: 'online',
      project_id: d.projectId,
      project: { _type: 'project', id: d.projectId, name: d.projectName },
      asset_type: 'video',
      last_known_firmware_version: '2.1.0-beta.1',
      channels: [],
      channel_count: 0,
      authorization: { _type: 'project_device_authorization', project_device_id: d.id, expires_at: null },
    });
    expect(body.authorization.scopes).toMatchObject({ asset_create: true, offline: true, device_connect: true, team_create: false });
    expect(typeof body.last_seen_at).toBe('string');
    expect(Number.isNaN(Date.parse(body.inserted_at))).toBe(false);
    const me = await call(cloud.url, '/v2/me', { token: d.accessToken });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ _type: 'user', name: 'Fake Owner' });
  });

  it('is online while the last call is under 5 agent minutes old, then offline; paused overrides', async () => {
    const clock = new VirtualClock();
    cloud = await startFakeCloud({ clock: clock.now });
    const id = cloud.devices[0]!.id;
    expect(cloud.device(id)!.status).toBe('offline');
    expect(await heartbeat(cloud)).toBe(204);
    expect(cloud.device(id)!.status).toBe('online');
    await clock.advance(299_999);
    expect(cloud.device(id)!.status).toBe('online');
    await clock.advance(1);
    expect(cloud.device(id)!.status).toBe('offline');
    // Any API call counts, not only heartbeats; a 401 does not.
    await (await call(cloud.url, '/v2/devices/me', { token: 'bogus' })).arrayBuffer();
    expect(cloud.device(id)!.status).toBe('offline');
    await (await call(cloud.url, '/v2/me', { token: cloud.devices[0]!.accessToken })).arrayBuffer();
    expect(cloud.device(id)!.status).toBe('online');
    cloud.control.pause(id);
    expect(cloud.device(id)!.status).toBe('paused');
    cloud.control.unpause(id);
    expect(cloud.device(id)!.status).toBe('online');
  });

  it('runs the 5-minute rule on its clock: online until 5 agent minutes after the last heartbeat, then offline', async () => {
    const vc = new VirtualClock();
    cloud = await startFakeCloud({ clock: vc });
    const id = cloud.devices[0]!.id;
    expect(await heartbeat(cloud)).toBe(204);
    expect(cloud.device(id)!.status).toBe('online');
    await vc.advance(5 * 60_000 - 1);
    expect(cloud.device(id)!.status).toBe('online');
    await vc.advance(2);
    expect(cloud.device(id)!.status).toBe('offline');
  });

  it('answers 422 with the legacy body to an x-client-version that is not semver', async () => {
    cloud = await startFakeCloud();
    const d = cloud.devices[0]!;
    for (const version of ['1.2', 'v1.2.3', '01.2.3', '1.2.3-', 'latest']) {
      const r = await call(cloud.url, '/v2/devices/heartbeat', { method: 'POST', token: d.accessToken, version });
      expect(r.status).toBe(422);
      expect(r.headers.get('x-ratelimit-window')).toBe('1000');
      expect(await r.json()).toMatchObject({ code: 422, errors: [{ code: 422, status: 422, title: 'Invalid arguments' }] });
    }
    expect(cloud.device(d.id)!.status).toBe('offline');
    expect(await heartbeat(cloud, 0, '1.2.3-rc.1+build.5')).toBe(204);
    expect(await heartbeat(cloud, 0, null)).toBe(204);
    expect(cloud.device(d.id)!.last_known_firmware_version).toBe('0.0.0');
  });

  it('uses the strict semver.org grammar', () => {
    for (const ok of ['0.0.0', '1.2.3', '10.20.30', '1.0.0-alpha.1', '1.0.0-0A.is.legal', '1.0.0+20130313144700']) {
      expect(SEMVER.test(ok)).toBe(true);
    }
    for (const bad of ['1', '1.2', '1.2.3.4', '01.1.1', '1.01.1', '1.2.3-01', '1.2.3+', '+invalid', ' 1.2.3']) {
      expect(SEMVER.test(bad)).toBe(false);
    }
  });

  it('rate limits per device and path with a leaky bucket, 429 with the legacy body', async () => {
    const clock = new VirtualClock();
    cloud = await startFakeCloud({ devices: 2, clock: clock.now, rateLimit: { limit: 2, windowMs: 60_000 } });
    const [a, b] = cloud.devices;
    const me = (token: string) => call(cloud!.url, '/v2/devices/me', { token });
    const r1 = await me(a!.accessToken);
    expect(r1.headers.get('x-ratelimit-remaining')).toBe('1');
    expect((await me(a!.accessToken)).headers.get('x-ratelimit-remaining')).toBe('0');
    const r3 = await me(a!.accessToken);
    expect(r3.status).toBe(429);
    expect(r3.headers.get('x-ratelimit-limit')).toBe('2');
    expect(r3.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(r3.headers.get('x-ratelimit-window')).toBe('60000');
    // One unit drains in 30 s: that is when the next request fits.
    expect(r3.headers.get('retry-after')).toBe('30');
    expect(await r3.json()).toMatchObject({ code: 429, errors: [{ status: 429, title: 'Rate Limited' }], message: 'Rate Limited' });
    // Another device, and another path of the same device, have their own buckets.
    expect((await me(b!.accessToken)).status).toBe(200);
    expect(await heartbeat(cloud, 0)).toBe(204);
    // One request drains every 30 s.
    await clock.advance(30_000);
    expect((await me(a!.accessToken)).status).toBe(200);
    expect((await me(a!.accessToken)).status).toBe(429);
  });

  it('journals every request without secrets', async () => {
    cloud = await startFakeCloud();
    const d = cloud.devices[0]!;
    await heartbeat(cloud);
    await (await call(cloud.url, '/v2/devices/me', { token: 'wrong', version: null })).arrayBuffer();
    expect(cloud.journal).toHaveLength(2);
    expect(cloud.journal[0]).toMatchObject({ method: 'POST', path: '/v2/devices/heartbeat', deviceId: d.id, authValid: true, clientVersion: '1.0.0', status: 204 });
    expect(cloud.journal[1]).toMatchObject({ method: 'GET', path: '/v2/devices/me', authValid: false, status: 401 });
    expect(cloud.journal[1]!.clientVersion).toBeUndefined();
    expect(cloud.journal[1]!.t).toBeGreaterThanOrEqual(cloud.journal[0]!.t);
    const text = JSON.stringify(cloud.journal);
    expect(text).not.toContain(d.accessToken);
    expect(text).not.toContain('wrong');
  });

  it('answers unknown paths 404 and wrong methods 405, with the legacy body', async () => {
    cloud = await startFakeCloud();
    const token = cloud.devices[0]!.accessToken;
    expect((await call(cloud.url, '/v2/nope', { token })).status).toBe(404);
    const r = await call(cloud.url, '/v2/devices/heartbeat', { token });
    expect(r.status).toBe(405);
    expect(await r.json()).toMatchObject({ code: 405 });
  });
});

describe('fake cloud: authorization expiry', () => {
  it('shows expires_at in the device record and refuses the tokens once it has passed', async () => {
    const clock = new VirtualClock();
    cloud = await startFakeCloud({ clock: clock.now });
    const d = cloud.devices[0]!;
    cloud.control.setAuthorizationExpiry(d.id, 60_000);
    const r = await call(cloud.url, '/v2/devices/me', { token: d.accessToken });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { authorization: { expires_at: string | null } };
    expect(Date.parse(body.authorization.expires_at ?? '')).toBeGreaterThan(Date.now());
    await clock.advance(60_000);
    expect((await call(cloud.url, '/v2/devices/me', { token: d.accessToken })).status).toBe(401);
    cloud.control.setAuthorizationExpiry(d.id, null);
    const back = await call(cloud.url, '/v2/devices/me', { token: d.accessToken });
    expect(back.status).toBe(200);
    expect(((await back.json()) as { authorization: { expires_at: unknown } }).authorization.expires_at).toBeNull();
  });
});
