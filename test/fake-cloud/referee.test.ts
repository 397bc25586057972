import { afterEach, describe, expect, it } from '@jest/globals';
import { startFakeCloud } from './index.js';
import type { FakeCloud } from './index.js';
import { Referee } from './referee.js';
import { makeClock } from './state.js';
import { call, heartbeat } from './test-helpers.js';
import { VirtualClock } from '../support/virtual-clock.js';

let cloud: FakeCloud | undefined;
afterEach(async () => {
  await cloud?.close();
  cloud = undefined;
});

async function setup(devices = 1): Promise<{ cloud: FakeCloud; clock: VirtualClock; id: string }> {
  const clock = new VirtualClock();
  cloud = await startFakeCloud({ devices, clock: clock.now });
  return { cloud, clock, id: cloud.devices[0]!.id };
}

describe('referee', () => {
  it('counts heartbeat attempts under 60 s apart as tooSoon, with a 50 ms tolerance at scale 1', async () => {
    const { cloud, clock, id } = await setup();
    await heartbeat(cloud);
    await clock.advance(60_000);
    await heartbeat(cloud);
    await clock.advance(59_951);
    await heartbeat(cloud);
    expect(cloud.referee(id).tooSoon).toBe(0);
    await clock.advance(59_949);
    await heartbeat(cloud);
    const r = cloud.referee(id);
    expect(r).toMatchObject({ heartbeats: 4, successfulHeartbeats: 4, tooSoon: 1, tooLate: 0, missingVersion: 0 });
    expect(r.heartbeatTimes).toEqual([0, 60_000, 119_951, 179_900]);
    expect(r.lastHeartbeatAt).toBe(179_900);
  });

  it('counts failed attempts (a 401 here) as attempts, but not as successful heartbeats', async () => {
    const { cloud, clock, id } = await setup();
    await heartbeat(cloud);
    cloud.control.revokeTokens(id);
    await clock.advance(1000);
    expect(await heartbeat(cloud)).toBe(401);
    expect(cloud.referee(id)).toMatchObject({ heartbeats: 2, successfulHeartbeats: 1, tooSoon: 1 });
  });

  it('scales the tolerance with the time scale: 2 real ms of agent time; none on a virtual clock', () => {
    const tolerance = (scale: number, source?: VirtualClock) => new Referee(makeClock(scale, source).toleranceMs, () => 0).toleranceMs;
    expect(tolerance(1)).toBe(50);
    expect(tolerance(60)).toBe(120);
    expect(tolerance(600)).toBe(1200);
    expect(tolerance(1, new VirtualClock())).toBe(0);
  });

  it('on a virtual clock, 59 999 ms is too soon and 60 000 is not', async () => {
    const clock = new VirtualClock();
    cloud = await startFakeCloud({ clock });
    const id = cloud.devices[0]!.id;
    await heartbeat(cloud);
    await clock.advance(60_000);
    await heartbeat(cloud);
    await clock.advance(59_999);
    await heartbeat(cloud);
    expect(cloud.referee(id)).toMatchObject({ heartbeats: 3, tooSoon: 1 });
  });

  it('counts closed gaps over 300 s between successful heartbeats as tooLate; an open gap never', async () => {
    const { cloud, clock, id } = await setup();
    await heartbeat(cloud);
    await clock.advance(300_000);
    await heartbeat(cloud);
    expect(cloud.referee(id).tooLate).toBe(0);
    await clock.advance(300_001);
    await heartbeat(cloud);
    expect(cloud.referee(id).tooLate).toBe(1);
    await clock.advance(3_600_000);
    expect(cloud.referee(id).tooLate).toBe(1);
  });

  it('does not blame the agent for gaps while connections were refused', async () => {
    const { cloud, clock, id } = await setup();
    await heartbeat(cloud);
    await clock.advance(100_000);
    cloud.control.refuseConnections();
    await clock.advance(200_000);
    await cloud.control.acceptConnections();
    await clock.advance(100_000);
    await heartbeat(cloud);
    expect(cloud.referee(id).tooLate).toBe(0);
    await clock.advance(301_000);
    await heartbeat(cloud);
    expect(cloud.referee(id).tooLate).toBe(1);
  });

  it('does not blame the agent for gaps in which a fault hit its requests, or its token was revoked', async () => {
    const { cloud, clock, id } = await setup(2);
    await heartbeat(cloud, 0);
    await heartbeat(cloud, 1);
    const f = cloud.control.addFault({ kind: 'status', status: 503, path: '/v2/devices/heartbeat', deviceId: id });
    await clock.advance(120_000);
    expect(await heartbeat(cloud, 0)).toBe(503);
    f.remove();
    await clock.advance(200_000);
    await heartbeat(cloud, 0);
    await heartbeat(cloud, 1);
    // Device 1 was served normally all along: its 320 s gap is its own.
    expect(cloud.referee(id).tooLate).toBe(0);
    expect(cloud.referee(cloud.devices[1]!.id).tooLate).toBe(1);
    // Revoked, then paired again 400 s later: that gap is the person's doing.
    const d1 = cloud.devices[1]!;
    await clock.advance(1000);
    cloud.control.revokeTokens(d1.id);
    await clock.advance(400_000);
    const form = (f: Record<string, string>) => new URLSearchParams({ client_id: d1.clientId, client_secret: d1.clientSecret, ...f });
    const code = (await (await call(cloud.url, '/v2/auth/device/code', { method: 'POST', body: form({ scope: 'asset_create offline' }) })).json()) as Record<string, string>;
    expect(cloud.control.approve(code.user_code!)).toBe(true);
    const grant = form({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: code.device_code! });
    const tokens = (await (await call(cloud.url, '/v2/auth/token', { method: 'POST', body: grant })).json()) as Record<string, string>;
    const r = await call(cloud.url, '/v2/devices/heartbeat', { method: 'POST', token: tokens.access_token! });
    expect(r.status).toBe(204);
    expect(cloud.referee(d1.id)).toMatchObject({ successfulHeartbeats: 3, tooLate: 1 });
  });

  it('counts requests of the device without x-client-version', async () => {
    const { cloud, clock, id } = await setup();
    await heartbeat(cloud, 0, null);
    await clock.advance(60_000);
    await heartbeat(cloud, 0, '1.0.0');
    await (await call(cloud.url, '/v2/devices/me', { token: cloud.devices[0]!.accessToken, version: null })).arrayBuffer();
    await (await call(cloud.url, '/health', { version: null })).arrayBuffer();
    expect(cloud.referee(id).missingVersion).toBe(2);
  });
});
