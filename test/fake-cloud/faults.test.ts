import { afterEach, describe, expect, it } from '@jest/globals';
import { startFakeCloud } from './index.js';
import type { FakeCloud, FakeCloudOptions } from './index.js';
import { call, heartbeat, raw } from './test-helpers.js';
import { VirtualClock } from '../support/virtual-clock.js';
import { notHung, until } from '../support/until.js';

let cloud: FakeCloud | undefined;
afterEach(async () => {
  await cloud?.close();
  cloud = undefined;
});

async function start(o: FakeCloudOptions = {}): Promise<FakeCloud> {
  cloud = await startFakeCloud({ devices: 2, ...o });
  return cloud;
}

const me = (c: FakeCloud, i = 0) => call(c.url, '/v2/devices/me', { token: c.devices[i]!.accessToken });
const authHeaders = (c: FakeCloud) => ({ authorization: `Bearer ${c.devices[0]!.accessToken}`, 'x-client-version': '1.0.0' });

describe('faults', () => {
  it("'status' answers the given status with the legacy body and the rate-limit headers", async () => {
    const c = await start();
    c.control.addFault({ kind: 'status', status: 503, path: '/v2/devices/me' });
    const r = await me(c);
    expect(r.status).toBe(503);
    expect(r.headers.get('x-ratelimit-remaining')).not.toBeNull();
    expect(await r.json()).toMatchObject({ code: 503, errors: [{ status: 503 }] });
    expect(await heartbeat(c)).toBe(204);
    expect(c.journal[0]!.faults).toEqual(['status']);
  });

  it('scopes faults by path prefix, method, device and count', async () => {
    const c = await start();
    c.control.addFault({ kind: 'status', status: 500, path: '/v2/devices/*', method: 'post', deviceId: c.devices[1]!.id, count: 2 });
    expect((await me(c, 1)).status).toBe(200);
    expect(await heartbeat(c, 0)).toBe(204);
    expect(await heartbeat(c, 1)).toBe(500);
    expect(await heartbeat(c, 1)).toBe(500);
    expect(await heartbeat(c, 1)).toBe(204);
    expect(c.control.listFaults()[0]!.hits).toBe(2);
  });

  it('hits the given fraction of matching requests', async () => {
    const rolls = [0.1, 0.9, 0.2, 0.8];
    let i = 0;
    const c = await start({ random: () => rolls[i++ % rolls.length]! });
    c.control.addFault({ kind: 'status', status: 502, path: '/health', fraction: 0.5 });
    const statuses: number[] = [];
    for (let k = 0; k < 4; k++) statuses.push((await call(c.url, '/health')).status);
    expect(statuses).toEqual([502, 200, 502, 200]);
  });

  it('applies only inside its agent-time window', async () => {
    const clock = new VirtualClock();
    const c = await start({ clock: clock.now });
    c.control.addFault({ kind: 'status', status: 500, fromMs: 1000, untilMs: 2000 });
    expect((await call(c.url, '/health')).status).toBe(200);
    await clock.advance(1000);
    expect((await call(c.url, '/health')).status).toBe(500);
    await clock.advance(1000);
    expect((await call(c.url, '/health')).status).toBe(200);
  });

  it("'rate-limit' answers 429, with Retry-After only when given", async () => {
    const c = await start();
    const f = c.control.addFault({ kind: 'rate-limit', path: '/v2/devices/heartbeat', retryAfter: '7' });
    const r = await call(c.url, '/v2/devices/heartbeat', { method: 'POST', token: c.devices[0]!.accessToken });
    expect(r.status).toBe(429);
    expect(r.headers.get('retry-after')).toBe('7');
    expect(await r.json()).toMatchObject({ code: 429, message: 'Rate Limited' });
    f.remove();
    c.control.addFault({ kind: 'rate-limit' });
    const r2 = await me(c);
    expect(r2.status).toBe(429);
    expect(r2.headers.get('retry-after')).toBeNull();
    expect(r2.headers.get('x-ratelimit-remaining')).toBe('0');
  });

  it("'malformed-json' sends JSON that does not parse (a 204 becomes a 200 with a body)", async () => {
    const c = await start();
    c.control.addFault({ kind: 'malformed-json' });
    const r = await me(c);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    const text = await r.text();
    expect(() => JSON.parse(text)).toThrow();
    const hb = await call(c.url, '/v2/devices/heartbeat', { method: 'POST', token: c.devices[0]!.accessToken });
    expect(hb.status).toBe(200);
    const hbText = await hb.text();
    expect(hbText.length).toBeGreaterThan(0);
    expect(() => JSON.parse(hbText)).toThrow();
  });

  it("'wrong-types' gives every top-level field the wrong type", async () => {
    const c = await start();
    c.control.addFault({ kind: 'wrong-types', path: '/v2/devices/me' });
    const body = (await (await me(c)).json()) as Record<string, unknown>;
    expect(typeof body.id).toBe('number');
    expect(typeof body.name).toBe('number');
    expect(typeof body.channel_count).toBe('string');
    expect(typeof body.channels).toBe('string');
    expect(Array.isArray(body.project)).toBe(true);
  });

  it("'wrong-content-type' keeps the body but labels it text/html", async () => {
    const c = await start();
    c.control.addFault({ kind: 'wrong-content-type', path: '/health' });
    const r = await call(c.url, '/health');
    expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await r.text()).toBe('{"status":"ok"}');
  });

  it("'truncated' promises a Content-Length, sends half, and drops the connection", async () => {
    const c = await start();
    c.control.addFault({ kind: 'truncated', path: '/v2/devices/me' });
    const r = await raw(`${c.url}/v2/devices/me`, { headers: authHeaders(c) });
    expect(r.status).toBe(200);
    expect(Number(r.headers!['content-length'])).toBeGreaterThan(r.body.length);
    expect(r.error).toBeDefined();
  });

  it("'huge' sends an enormous, well-formed body of the given size", async () => {
    const c = await start();
    c.control.addFault({ kind: 'huge', path: '/v2/devices/me', bytes: 3 * 1024 * 1024 });
    const r = await raw(`${c.url}/v2/devices/me`, { headers: authHeaders(c) });
    expect(r.headers!['content-length']).toBe(String(3 * 1024 * 1024));
    expect(r.body.length).toBe(3 * 1024 * 1024);
    expect((JSON.parse(r.body.toString()) as { padding: string }).padding.length).toBeGreaterThan(3_000_000);
  });

  it("'reset' destroys the connection mid-request and journals status 0", async () => {
    const c = await start();
    c.control.addFault({ kind: 'reset', path: '/v2/devices/heartbeat' });
    const r = await raw(`${c.url}/v2/devices/heartbeat`, { method: 'POST', headers: authHeaders(c) });
    expect(r.status).toBeUndefined();
    expect(r.error).toMatch(/ECONNRESET|socket hang up/);
    expect(c.journal[0]).toMatchObject({ status: 0, faults: ['reset'], deviceId: c.devices[0]!.id });
    expect(c.referee(c.devices[0]!.id)).toMatchObject({ heartbeats: 1, successfulHeartbeats: 0 });
  });

  it("'delay' holds one response in agent time without blocking others", async () => {
    const c = await start({ timeScale: 1000 });
    c.control.addFault({ kind: 'delay', path: '/v2/devices/me', delayMs: 200_000 });
    const t0 = performance.now();
    let slowDone = false;
    const slow = me(c).then(async (r) => ({ status: r.status, ms: performance.now() - t0, body: await r.json() }));
    void slow.then(() => (slowDone = true));
    const fast = await call(c.url, '/health');
    expect(fast.status).toBe(200);
    // Not blocked: the fast answer came while the held one was still held (an order, not a window).
    expect(slowDone).toBe(false);
    const s = await slow;
    expect(s.status).toBe(200);
    expect(s.ms).toBeGreaterThanOrEqual(190);
    expect(s.body).toMatchObject({ id: c.devices[0]!.id });
  });

  it('close() cancels delayed responses and keep-alive sockets promptly', async () => {
    const c = await start();
    c.control.addFault({ kind: 'delay', path: '/v2/devices/me', delayMs: 3_600_000 });
    const pending = raw(`${c.url}/v2/devices/me`, { headers: authHeaders(c) });
    await until('the request held', () => c.journal.length === 1);
    // Promptly: close() does not wait out the hour's delay (the bound is against a hang, not a speed test).
    await notHung('close() with a delayed response', 10_000, () => c.close());
    cloud = undefined;
    expect((await pending).error).toBeDefined();
  });

  it('refuses connections, then accepts again on the same port', async () => {
    const c = await start();
    // fetch keeps the connection alive: refusing must drop it too.
    expect((await call(c.url, '/health')).status).toBe(200);
    c.control.refuseConnections();
    await expect(call(c.url, '/health')).rejects.toThrow();
    const refused = await raw(`${c.url}/health`);
    expect(refused.error).toBe('ECONNREFUSED');
    expect(c.journal).toHaveLength(1);
    await c.control.acceptConnections();
    expect((await call(c.url, '/health')).status).toBe(200);
  });

  it('rejects a fault that cannot mean anything', async () => {
    const c = await start();
    expect(() => c.control.addFault({ kind: 'explode' } as never)).toThrow(/unknown fault kind/);
    expect(() => c.control.addFault({ kind: 'delay' })).toThrow(/delayMs/);
    expect(() => c.control.addFault({ kind: 'status', fraction: 2 })).toThrow(/fraction/);
  });
});
