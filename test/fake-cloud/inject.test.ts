// The in-process entry: the same pipeline as the HTTP server (auth, faults,
// referee, journal), with no socket and, optionally, no server at all.
import { afterEach, describe, expect, it } from '@jest/globals';
import { startFakeCloud } from './index.js';
import type { FakeCloud } from './index.js';
import { VirtualClock } from '../support/virtual-clock.js';

let cloud: FakeCloud | undefined;
afterEach(async () => {
  await cloud?.close();
  cloud = undefined;
});

const beat = (c: FakeCloud, token: string) =>
  c.inject({ method: 'POST', path: '/v2/devices/heartbeat', headers: { authorization: `Bearer ${token}`, 'x-client-version': '1.0.0' } });

describe('fake cloud: inject()', () => {
  it('runs a heartbeat through the pipeline: 204, rate-limit and Date headers, the referee and the journal count it', async () => {
    const clock = new VirtualClock();
    cloud = await startFakeCloud({ listen: false, clock: clock.now, wallStart: Date.UTC(2026, 0, 1) });
    expect(cloud.url).toBe('');
    const d = cloud.devices[0]!;
    const r = await beat(cloud, d.accessToken);
    expect(r.status).toBe(204);
    expect(r.headers['x-ratelimit-limit']).toBe('100');
    expect(r.headers.date).toBe('Thu, 01 Jan 2026 00:00:00 GMT');
    expect(cloud.referee(d.id)).toMatchObject({ heartbeats: 1, successfulHeartbeats: 1, missingVersion: 0 });
    expect(cloud.journal.at(-1)).toMatchObject({ method: 'POST', path: '/v2/devices/heartbeat', deviceId: d.id, status: 204, authValid: true });
    const me = await cloud.inject({ method: 'GET', path: '/v2/devices/me', headers: { authorization: `Bearer ${d.accessToken}`, 'x-client-version': '1.0.0' } });
    expect(me.status).toBe(200);
    expect(JSON.parse(me.body.toString())).toMatchObject({ id: d.id });
  });

  it('reads a form body (a refresh) as the server does', async () => {
    cloud = await startFakeCloud({ listen: false });
    const d = cloud.devices[0]!;
    const body = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: d.refreshToken, client_id: d.clientId, client_secret: d.clientSecret }).toString();
    const r = await cloud.inject({ method: 'POST', path: '/v2/auth/token', headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(body.length), 'x-client-version': '1.0.0' }, body });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body.toString())).toHaveProperty('access_token');
    expect(cloud.tokenState(d.refreshToken)).toBe('used');
  });

  it('refuses while connections are refused (ECONNREFUSED), and the referee knows', async () => {
    cloud = await startFakeCloud({ listen: false });
    const d = cloud.devices[0]!;
    cloud.control.refuseConnections();
    await expect(beat(cloud, d.accessToken)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(cloud.referee(d.id).heartbeats).toBe(0);
    await cloud.control.acceptConnections();
    expect((await beat(cloud, d.accessToken)).status).toBe(204);
  });

  it('a reset fault rejects with ECONNRESET; a truncated body too', async () => {
    cloud = await startFakeCloud({ listen: false });
    const d = cloud.devices[0]!;
    const reset = cloud.control.addFault({ kind: 'reset', path: '/v2/devices/heartbeat', count: 1 });
    await expect(beat(cloud, d.accessToken)).rejects.toMatchObject({ code: 'ECONNRESET' });
    reset.remove();
    cloud.control.addFault({ kind: 'truncated', path: '/v2/devices/me', count: 1 });
    await expect(cloud.inject({ method: 'GET', path: '/v2/devices/me', headers: { authorization: `Bearer ${d.accessToken}` } })).rejects.toMatchObject({ code: 'ECONNRESET' });
  });

  it('a delay fault holds the answer on the injected clock, not real timers', async () => {
    const clock = new VirtualClock();
    cloud = await startFakeCloud({ listen: false, clock });
    const d = cloud.devices[0]!;
    cloud.control.addFault({ kind: 'delay', delayMs: 45_000, path: '/v2/devices/heartbeat' });
    let answered = false;
    const p = beat(cloud, d.accessToken).then((r) => {
      answered = true;
      return r;
    });
    await new Promise((r) => setImmediate(r));
    expect(answered).toBe(false);
    await clock.advance(44_999);
    expect(answered).toBe(false);
    expect(await clock.advance(1)).toBe(1);
    expect(answered).toBe(true);
    expect((await p).status).toBe(204);
  });

  it('the HTTP server and inject() share one state: a heartbeat through each counts twice', async () => {
    cloud = await startFakeCloud();
    const d = cloud.devices[0]!;
    await beat(cloud, d.accessToken);
    const r = await fetch(`${cloud.url}/v2/devices/heartbeat`, { method: 'POST', headers: { authorization: `Bearer ${d.accessToken}`, 'x-client-version': '1.0.0' } });
    expect(r.status).toBe(204);
    expect(cloud.referee(d.id).heartbeats).toBe(2);
  });

  it('deviceAway: a gap over 5 minutes across the time the device said it was away is no tooLate', async () => {
    const clock = new VirtualClock();
    cloud = await startFakeCloud({ listen: false, clock: clock.now, devices: 2 });
    const [a, b] = cloud.devices as [typeof cloud.devices[0], typeof cloud.devices[0]];
    await beat(cloud, a.accessToken);
    await beat(cloud, b.accessToken);
    cloud.control.deviceAway(a.id, 100_000, 200_000);
    await clock.advance(400_000);
    await beat(cloud, a.accessToken);
    await beat(cloud, b.accessToken);
    expect(cloud.referee(a.id).tooLate).toBe(0);
    expect(cloud.referee(b.id).tooLate).toBe(1);
  });
});
