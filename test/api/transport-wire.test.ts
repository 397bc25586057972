// The transport's wire seam: only the HTTP exchange is replaced; headers,
// body encoding, error typing, the size cap and the rate-limit and
// clock-offset views are the transport's own, as over got.
import { describe, expect, it } from '@jest/globals';
import { createTransport, MAX_RESPONSE_BYTES, type WireRequest, type WireResponse } from '../../agent/api/transport.js';
import { AgentError } from '../../agent/lib/errors.js';
import { FakeClock } from '../support/fake-clock.js';

const WALL = Date.UTC(2026, 0, 1, 12);

function rig(answer: (req: WireRequest) => Promise<WireResponse>) {
  const seen: WireRequest[] = [];
  const t = createTransport({
    baseUrl: 'http://service.invalid',
    token: 'token-abcdef-1',
    firmwareVersion: '2.1.0',
    agentVersion: '0.1.0',
    clock: new FakeClock(1_000_000, WALL),
    wire: (req) => {
      seen.push(req);
      return answer(req);
    },
  });
  return { t, seen };
}

const ok = (status: number, headers: Record<string, string> = {}, body = ''): Promise<WireResponse> => Promise.resolve({ status, headers, body: Buffer.from(body) });

describe('transport over a wire', () => {
  it('sends the headers the got path sends: x-client-version, user agent, accept, bearer', async () => {
    const { t, seen } = rig(() => ok(204));
    const res = await t.request({ method: 'POST', path: '/v2/devices/heartbeat' });
    expect(res.status).toBe(204);
    expect(seen[0]).toMatchObject({ method: 'POST', path: '/v2/devices/heartbeat', timeoutMs: 30_000 });
    expect(seen[0]!.headers).toMatchObject({ 'x-client-version': '2.1.0', accept: 'application/json', authorization: 'Bearer token-abcdef-1' });
    expect(seen[0]!.headers['user-agent']).toMatch(/^c2c-agent\/0\.1\.0 firmware\/2\.1\.0 node\//);
  });

  it('encodes a form as got does, without the bearer; JSON with its type', async () => {
    const { t, seen } = rig(() => ok(200, { 'content-type': 'application/json' }, '{}'));
    await t.postForm('/v2/auth/token', { grant_type: 'refresh_token', refresh_token: 'r t&x' });
    expect(seen[0]!.headers.authorization).toBeUndefined();
    expect(seen[0]!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(seen[0]!.body?.toString()).toBe('grant_type=refresh_token&refresh_token=r+t%26x');
    expect(seen[0]!.headers['content-length']).toBe(String(seen[0]!.body?.length));
    await t.request({ method: 'POST', path: 'v2/devices/channels', json: { a: 1 } });
    expect(seen[1]).toMatchObject({ path: '/v2/devices/channels', headers: { 'content-type': 'application/json' } });
    expect(seen[1]!.body?.toString()).toBe('{"a":1}');
  });

  it('a shorter limit reaches the wire', async () => {
    const { t, seen } = rig(() => ok(200, { 'content-type': 'application/json' }, '{"status":"ok"}'));
    await t.getJson('/health', { auth: false, timeoutMs: 5_000 });
    expect(seen[0]!.timeoutMs).toBe(5_000);
  });

  it('a wire timeout, refusal or reset is the same typed network error as over got', async () => {
    for (const [code, extra] of [['ETIMEDOUT', { name: 'TimeoutError' }], ['ECONNREFUSED', {}], ['ECONNRESET', {}]] as const) {
      const { t } = rig(() => Promise.reject(Object.assign(new Error('x'), { code, ...extra })));
      const err = await t.request({ method: 'POST', path: '/v2/devices/heartbeat' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentError);
      expect(err).toMatchObject({ kind: 'network', details: { code } });
    }
  });

  it('reads rate limits and the clock offset from the answer, and types a 429', async () => {
    const { t } = rig(() =>
      ok(429, { 'content-type': 'application/json', 'x-ratelimit-limit': '100', 'x-ratelimit-remaining': '0', 'x-ratelimit-window': '1000', 'retry-after': '7', date: new Date(WALL + 60_000).toUTCString() }, '{}'),
    );
    const res = await t.request({ method: 'POST', path: '/v2/devices/heartbeat' });
    expect(res.meta.rateLimit).toEqual({ limit: 100, remaining: 0, windowMs: 1000 });
    expect(res.meta.clockOffsetMs).toBe(60_500);
    expect(t.errorFor(res)).toMatchObject({ kind: 'rate-limited', details: { retryAfterMs: 7000 } });
  });

  it('refuses an answer larger than the size cap', async () => {
    const { t } = rig(() => Promise.resolve({ status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.alloc(MAX_RESPONSE_BYTES + 1, 32) }));
    await expect(t.getJson('/v2/devices/me')).rejects.toMatchObject({ kind: 'protocol' });
  });
});
