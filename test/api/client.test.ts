// The API client against the fake cloud: typed errors per status and fault,
// the rate-limit view, the size cap, timeouts at a scaled clock, and no
// hidden retries (exactly one journaled request per call).
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { startFakeCloud, type FakeCloud } from '../fake-cloud/index.js';
import { createServiceApi, type ServiceApi } from '../../agent/api/service.js';
import { SystemClock } from '../../agent/lib/clock.js';
import { failure } from './failure.js';
import { until } from '../support/until.js';

// The fake runs at scale 200. The client runs at scale 1 (its 30 s limit is 30
// real s, which no loaded machine reaches), except in the tests of its limits,
// at the fake's scale, where the 30 s cap is 150 real ms.
const SCALE = 200;
let cloud: FakeCloud;
const clients: ServiceApi[] = [];

beforeAll(async () => {
  cloud = await startFakeCloud({ devices: 2, timeScale: SCALE });
});
afterEach(() => {
  cloud.control.clearFaults();
});
afterAll(async () => {
  for (const c of clients) c.close();
  await cloud.close();
});

function client(token: string | (() => string | undefined) = cloud.devices[0]!.accessToken, timeoutMs?: number, scale = 1): ServiceApi {
  const api = createServiceApi({
    baseUrl: cloud.url,
    token,
    firmwareVersion: '2.3.4-rc.1',
    agentVersion: '9.9.9',
    clock: new SystemClock(scale),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  });
  clients.push(api);
  return api;
}


/** Runs `fn` and returns the journal entries it produced. */
async function journaled(fn: () => Promise<unknown>): Promise<typeof cloud.journal> {
  const before = cloud.journal.length;
  await fn().catch(() => undefined);
  return cloud.journal.slice(before);
}

describe('successful calls', () => {
  test('getDevice returns the validated record with rate-limit and clock-offset meta', async () => {
    const sentAt = Date.now();
    const { value, meta } = await client().getDevice();
    const tookMs = Date.now() - sentAt;
    expect(value.id).toBe(cloud.devices[0]!.id);
    expect(value.project_id).toBe(cloud.devices[0]!.projectId);
    expect(meta.status).toBe(200);
    expect(meta.rateLimit).toEqual({ limit: expect.any(Number), remaining: expect.any(Number), windowMs: expect.any(Number) });
    // Wall time on purpose: the offset is the service's Date header against this host's wall clock.
    // Same host: the offset is only the Date header's rounding (the header's whole second plus 500, less the
    // wall time the answer was read at) and whatever the call took: a stall only widens the bound, never
    // breaks it, unlike a fixed window of real ms.
    expect(meta.clockOffsetMs).toBeLessThanOrEqual(500);
    expect(meta.clockOffsetMs).toBeGreaterThanOrEqual(-500 - tookMs);
  });

  test('heartbeat and health', async () => {
    const api = client();
    await expect(api.heartbeat()).resolves.toMatchObject({ value: undefined, meta: { status: 204 } });
    await expect(api.health()).resolves.toMatchObject({ value: { status: 'ok' } });
    expect(api.lastMeta?.status).toBe(200);
  });

  test('x-client-version is on every request, the unauthenticated ones too', async () => {
    const api = client();
    const entries = await journaled(async () => {
      await api.getDevice();
      await api.heartbeat();
      await api.health();
      await api.transport.postForm('/v2/auth/token', { grant_type: 'refresh_token', refresh_token: 'x', client_id: 'y', client_secret: 'z' });
    });
    expect(entries).toHaveLength(4);
    for (const e of entries) expect(e.clientVersion).toBe('2.3.4-rc.1');
  });

  test('a token function is read on every call, so a refresh takes effect at once', async () => {
    let token = 'not-a-valid-token-1';
    const api = client(() => token);
    expect((await failure(api.getDevice())).kind).toBe('unauthorized');
    token = cloud.devices[1]!.accessToken;
    expect((await api.getDevice()).value.id).toBe(cloud.devices[1]!.id);
  });
});

describe('typed errors, one request each', () => {
  test('a token the fake rejects: unauthorized, exit 77', async () => {
    const api = client('fca_rejected_token_value');
    const entries = await journaled(async () => {
      const err = await failure(api.getDevice());
      expect(err).toMatchObject({ kind: 'unauthorized', details: { status: 401 } });
      expect(err.exitCode).toBe(77);
      expect(err.message).not.toContain('fca_rejected_token_value');
    });
    expect(entries).toHaveLength(1);
  });

  test('a revoked token: unauthorized', async () => {
    cloud.control.revokeTokens(cloud.devices[1]!.id);
    const err = await failure(client(cloud.devices[1]!.accessToken).getDevice());
    expect(err.kind).toBe('unauthorized');
  });

  test.each([
    [403, 'forbidden', 77],
    [404, 'not-found', 76],
    [409, 'conflict', 75],
    [422, 'protocol', 76],
    [500, 'server', 75],
    [503, 'server', 75],
  ])('status %i -> %s', async (status, kind, exit) => {
    cloud.control.addFault({ kind: 'status', path: '/v2/devices/me', status });
    const entries = await journaled(async () => {
      const err = await failure(client().getDevice());
      expect(err).toMatchObject({ kind, details: { status } });
      expect(err.exitCode).toBe(exit);
      expect(err.message).toMatch(new RegExp(`^GET /v2/devices/me: HTTP ${status}`));
      expect(err.details.rateLimit).toBeDefined();
    });
    expect(entries).toHaveLength(1);
  });

  test('429 with Retry-After in seconds', async () => {
    cloud.control.addFault({ kind: 'rate-limit', path: '/v2/devices/heartbeat', retryAfter: '7' });
    const entries = await journaled(async () => {
      const err = await failure(client().heartbeat());
      expect(err).toMatchObject({ kind: 'rate-limited', details: { status: 429, retryAfterMs: 7000 } });
      expect(err.exitCode).toBe(75);
    });
    expect(entries).toHaveLength(1);
  });

  test('429 with Retry-After as an HTTP-date', async () => {
    const at = new Date(Date.now() + 12_000).toUTCString();
    cloud.control.addFault({ kind: 'rate-limit', path: '/v2/devices/me', retryAfter: at });
    const err = await failure(client().getDevice());
    expect(err.kind).toBe('rate-limited');
    // Whole-second dates: between 10 and 13 s depending on where in the second we are.
    expect(err.details.retryAfterMs).toBeGreaterThanOrEqual(10_000);
    expect(err.details.retryAfterMs).toBeLessThanOrEqual(13_000);
  });

  test('429 without Retry-After: a delay derived from the window, at least 1 s', async () => {
    cloud.control.addFault({ kind: 'rate-limit', path: '/v2/devices/me' });
    const err = await failure(client().getDevice());
    expect(err.details.retryAfterMs).toBeGreaterThanOrEqual(1000);
  });

  test.each(['malformed-json', 'wrong-types', 'wrong-content-type'] as const)('%s -> protocol, exit 76', async (kind) => {
    cloud.control.addFault({ kind, path: '/v2/devices/me' });
    const entries = await journaled(async () => {
      const err = await failure(client().getDevice());
      expect(err.kind).toBe('protocol');
      expect(err.exitCode).toBe(76);
      expect(err.message).toMatch(/^GET \/v2\/devices\/me: /);
    });
    expect(entries).toHaveLength(1);
  });

  test('wrong-types names the field', async () => {
    cloud.control.addFault({ kind: 'wrong-types', path: '/v2/devices/me' });
    const err = await failure(client().getDevice());
    expect(err.message).toMatch(/field '\w+' is .*, expected /);
  });

  test('a response over 1 MiB is refused without reading it all', async () => {
    cloud.control.addFault({ kind: 'huge', path: '/v2/devices/me', bytes: 64 * 1024 * 1024 });
    const entries = await journaled(async () => {
      const err = await failure(client().getDevice());
      expect(err.kind).toBe('protocol');
      expect(err.message).toContain('larger than 1048576 bytes');
    });
    expect(entries).toHaveLength(1);
  });

  test('a connection reset: network with its code, no retry', async () => {
    cloud.control.addFault({ kind: 'reset', path: '/v2/devices/heartbeat' });
    const entries = await journaled(async () => {
      const err = await failure(client().heartbeat());
      expect(err.kind).toBe('network');
      expect(err.exitCode).toBe(69);
      expect(typeof err.details.code).toBe('string');
    });
    expect(entries).toHaveLength(1);
  });

  test('a truncated body is never taken for a valid answer', async () => {
    cloud.control.addFault({ kind: 'truncated', path: '/v2/devices/me' });
    const err = await failure(client().getDevice());
    expect(['network', 'protocol']).toContain(err.kind);
  });

  test('a slow answer times out at 30 agent seconds, in real time divided by the scale', async () => {
    // The answer never comes within the test: only the client's limit can end the call.
    cloud.control.addFault({ kind: 'delay', path: '/v2/devices/me', delayMs: 3_600_000 });
    const started = Date.now();
    const err = await failure(client(undefined, undefined, SCALE).getDevice());
    expect(err).toMatchObject({ kind: 'network', details: { code: 'ETIMEDOUT' } });
    expect(err.message).toContain('within 30 s');
    // Not before 30 agent s (150 real ms): a timer never fires early, so a loaded machine only adds to this.
    // Not judged from above: a limit not divided by the scale (30 real s) outlasts the test's own timeout.
    expect(Date.now() - started).toBeGreaterThanOrEqual(30_000 / SCALE - 20);
  }, 10_000);

  test('a per-call limit shorter than the client cap', async () => {
    // Two calls at once, neither ever answered: the one with a 2 s limit gives up before the one held to
    // the client-wide 30 s cap. An order, not a window: both limits are timers of this process.
    cloud.control.addFault({ kind: 'delay', path: '/health', delayMs: 3_600_000 });
    const api = client(undefined, undefined, SCALE);
    const ended: string[] = [];
    const short = failure(api.health(undefined, 2_000)).finally(() => ended.push('2 s limit'));
    const capped = failure(api.health()).finally(() => ended.push('30 s cap'));
    const [shortErr, cappedErr] = await Promise.all([short, capped]);
    expect(shortErr.message).toContain('within 2 s');
    expect(cappedErr.message).toContain('within 30 s');
    expect(ended).toEqual(['2 s limit', '30 s cap']);
  }, 10_000);

  test('nothing listening: network ECONNREFUSED', async () => {
    const dead = await startFakeCloud({ devices: 1 });
    const url = dead.url;
    await dead.close();
    const api = createServiceApi({ baseUrl: url, token: 'whatever-token', firmwareVersion: '1.0.0', agentVersion: '1', clock: new SystemClock() });
    clients.push(api);
    const err = await failure(api.getDevice());
    expect(err).toMatchObject({ kind: 'network', details: { code: 'ECONNREFUSED' } });
  });

  test('an aborted call rejects with the signal reason, not as a network fault', async () => {
    cloud.control.addFault({ kind: 'delay', path: '/v2/devices/me', delayMs: 3_600_000 });
    const ac = new AbortController();
    const before = cloud.journal.length;
    const p = client().getDevice(ac.signal);
    // Aborted once the request reached the fake (it holds the answer 20 agent s).
    await until('the request at the fake', () => cloud.journal.slice(before).some((e) => e.path === '/v2/devices/me'));
    ac.abort(new Error('shutting down'));
    await expect(p).rejects.toThrow('shutting down');
  });
});
