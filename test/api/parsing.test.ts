// Pure parsing of what the service sends back: rate-limit headers, Retry-After,
// Date, the legacy error body, and the Device record.
import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import { clockOffset, parseRateLimit, parseRetryAfter, retryDelayFromWindow, UNANCHORED_RETRY_AFTER_CAP_MS } from '../../agent/api/rate-limit.js';
import { MAX_RETRY_AFTER_MS } from '../../agent/lib/timing.js';
import { honoured } from '../../agent/lib/backoff.js';
import { checkFacts } from '../../agent/cli/check-report.js';
import { describeLegacyError, errorForStatus, kindForStatus, networkError, parseLegacyError } from '../../agent/api/http-errors.js';
import { validateDevice } from '../../agent/api/validate.js';
import { AgentError } from '../../agent/lib/errors.js';
import { registerSecret } from '../../agent/lib/secrets.js';

const NOW = Date.UTC(2026, 10, 22, 10, 0, 0);

describe('rate-limit headers', () => {
  test('parses limit, remaining and window', () => {
    expect(parseRateLimit({ 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '0', 'x-ratelimit-window': '60000' })).toEqual({
      limit: 60,
      remaining: 0,
      windowMs: 60000,
    });
  });

  test('ignores garbage instead of producing NaN', () => {
    expect(parseRateLimit({ 'x-ratelimit-limit': 'lots', 'x-ratelimit-remaining': '-1', 'x-ratelimit-window': '1e3' })).toEqual({});
  });

  test('Retry-After in seconds', () => {
    expect(parseRetryAfter({ 'retry-after': '7' }, NOW)).toBe(7000);
  });

  test('Retry-After as an HTTP-date is measured against the server Date, not the local clock', () => {
    const headers = { 'retry-after': new Date(NOW + 5000).toUTCString(), date: new Date(NOW).toUTCString() };
    // The local clock is 1 h behind (a Pi before NTP): the wait is still 5 s.
    expect(parseRetryAfter(headers, NOW - 3600_000)).toBe(5000);
    expect(parseRetryAfter({ 'retry-after': new Date(NOW + 3000).toUTCString() }, NOW)).toBe(3000);
  });

  test('Retry-After in the past or garbage', () => {
    expect(parseRetryAfter({ 'retry-after': new Date(NOW - 3000).toUTCString() }, NOW)).toBe(0);
    expect(parseRetryAfter({ 'retry-after': 'soon' }, NOW)).toBeUndefined();
    expect(parseRetryAfter({}, NOW)).toBeUndefined();
  });

  test('delay derived from the window when Retry-After is absent', () => {
    expect(retryDelayFromWindow({ limit: 10, windowMs: 60000 })).toBe(6000);
    expect(retryDelayFromWindow({ limit: 100, windowMs: 1000 })).toBe(1000);
    expect(retryDelayFromWindow({})).toBe(1000);
  });

  test('clock offset from the Date header, centred in its one-second resolution', () => {
    expect(clockOffset({ date: new Date(NOW + 120_000).toUTCString() }, NOW)).toBe(120_500);
    expect(clockOffset({ date: 'yesterday-ish' }, NOW)).toBeUndefined();
    expect(clockOffset({}, NOW)).toBeUndefined();
  });
});

describe('wall-clock dependent parsing under clock jumps (local clock up to 12 h off the server)', () => {
  const H12 = 12 * 3600_000;
  // Server times on whole seconds, as an HTTP-date carries them.
  const serverNow = fc.integer({ min: Date.UTC(2024, 0, 1) / 1000, max: Date.UTC(2030, 0, 1) / 1000 }).map((s) => s * 1000);
  const skew = fc.integer({ min: -H12, max: H12 });
  const http = (ms: number): string => new Date(ms).toUTCString();

  test('an HTTP-date Retry-After relative to the server Date gives the server-intended delay whatever the local wall time', () => {
    fc.assert(
      fc.property(serverNow, skew, fc.integer({ min: 0, max: 7 * 24 * 3600 }), (now, off, delaySeconds) => {
        const headers = { date: http(now), 'retry-after': http(now + delaySeconds * 1000) };
        // The delay the server asked for; how long of it is honoured (MAX_RETRY_AFTER_MS) is lib/backoff.ts's, applied once.
        expect(parseRetryAfter(headers, now + off)).toBe(delaySeconds * 1000);
        expect(honoured(parseRetryAfter(headers, now + off))).toBe(Math.min(delaySeconds * 1000, MAX_RETRY_AFTER_MS));
        // A stale offset learnt earlier never overrides this answer's own Date.
        expect(parseRetryAfter(headers, now + off, -off + 3600_000)).toBe(delaySeconds * 1000);
      }),
    );
  });

  test('a Retry-After date already past by the server clock is 0, even when the local clock is far behind', () => {
    const now = Date.UTC(2026, 5, 1, 12);
    expect(parseRetryAfter({ date: http(now), 'retry-after': http(now - 60_000) }, now - H12)).toBe(0);
    expect(parseRetryAfter({ date: http(now), 'retry-after': http(now - 60_000) }, now + H12)).toBe(0);
  });

  test('without a server Date, a Retry-After date is never negative and never above the unanchored cap', () => {
    fc.assert(
      fc.property(serverNow, skew, fc.integer({ min: -3600, max: 7 * 24 * 3600 }), (now, off, delaySeconds) => {
        const ms = parseRetryAfter({ 'retry-after': http(now + delaySeconds * 1000) }, now + off);
        expect(ms).toBeGreaterThanOrEqual(0);
        expect(ms).toBeLessThanOrEqual(UNANCHORED_RETRY_AFTER_CAP_MS);
      }),
    );
    // Local clock 12 h behind: the date looks 12 h away; the wait stays at the cap, not half a day.
    const now = Date.UTC(2026, 5, 1, 12);
    expect(parseRetryAfter({ 'retry-after': http(now + 5000) }, now - H12)).toBe(UNANCHORED_RETRY_AFTER_CAP_MS);
    // Local clock 12 h ahead: the date looks long past: retry at once rather than a negative wait.
    expect(parseRetryAfter({ 'retry-after': http(now + 5000) }, now + H12)).toBe(0);
  });

  test('without a server Date, an offset learnt from an earlier answer measures the date in server time', () => {
    fc.assert(
      fc.property(serverNow, skew, fc.integer({ min: 0, max: 3600 }), (now, off, delaySeconds) => {
        expect(parseRetryAfter({ 'retry-after': http(now + delaySeconds * 1000) }, now + off, -off)).toBe(delaySeconds * 1000);
      }),
    );
  });

  test('delta-seconds never depend on the wall clock', () => {
    fc.assert(
      fc.property(serverNow, skew, (now, off) => {
        expect(parseRetryAfter({ date: http(now), 'retry-after': '30' }, now + off)).toBe(30_000);
        expect(parseRetryAfter({ 'retry-after': '30' }, now + off)).toBe(30_000);
      }),
    );
  });

  test('the clock offset is the server Date minus local wall time for any skew, centred in the Date second', () => {
    fc.assert(
      fc.property(serverNow, skew, fc.integer({ min: 0, max: 999 }), (now, off, intoSecond) => {
        // The server is `intoSecond` ms into the second its Date names; the estimate is off by at most 0.5 s.
        const estimate = clockOffset({ date: http(now) }, now + intoSecond + off);
        expect(estimate).toBeDefined();
        expect(Math.abs(estimate! - -off)).toBeLessThanOrEqual(500);
      }),
    );
  });
});

describe('legacy error body', () => {
  test('the documented 401 body', () => {
    const body = {
      code: 401,
      errors: [{ code: 401, detail: 'You are not allowed to access that resource', status: 401, title: 'Not Authorized' }],
      message: 'Not Authorized',
    };
    expect(describeLegacyError(parseLegacyError(body))).toBe('Not Authorized: You are not allowed to access that resource');
  });

  test('garbage never throws and yields printable one-line text', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (body) => {
        const text = describeLegacyError(parseLegacyError(body));
        expect(text).not.toMatch(/[\n\r\u0000-\u001f]/);
        expect(text.length).toBeLessThanOrEqual(200);
      }),
      { numRuns: 300 },
    );
  });

  test('wrong-typed fields are skipped, multi-line text flattened', () => {
    expect(parseLegacyError({ message: 42, errors: 'nope' })).toEqual({});
    expect(parseLegacyError({ errors: [null, 3, { title: ['x'], detail: 'line1\nline2' }] })).toEqual({ detail: 'line1 line2' });
    expect(parseLegacyError('<html>oops</html>')).toEqual({});
  });

  test('a secret echoed by the server is cut out of the message', () => {
    registerSecret('echoed-secret-token-xyz');
    const err = errorForStatus({ what: 'GET /x', status: 400, headers: {}, body: { message: 'bad token echoed-secret-token-xyz' }, rateLimit: {}, localWallMs: NOW });
    expect(err.message).not.toContain('echoed-secret-token-xyz');
  });

  test.each([
    [401, {}, 'unauthorized', 77],
    [403, {}, 'forbidden', 77],
    [404, {}, 'not-found', 76],
    [409, { errors: [{ title: 'Channel Paused' }] }, 'paused', 75],
    [409, { message: 'Conflict' }, 'conflict', 75],
    [422, {}, 'protocol', 76],
    [429, {}, 'rate-limited', 75],
    [500, {}, 'server', 75],
    [503, {}, 'server', 75],
  ])('status %i -> %s', (status, body, kind, exit) => {
    expect(kindForStatus(status, parseLegacyError(body))).toBe(kind);
    const err = errorForStatus({ what: 'GET /v2/devices/me', status, headers: {}, body, rateLimit: {}, localWallMs: NOW });
    expect(err.kind).toBe(kind);
    expect(err.exitCode).toBe(exit);
    expect(err.details.status).toBe(status);
  });

  test('429 carries the rate-limit view and a retry delay', () => {
    const rateLimit = { limit: 10, remaining: 0, windowMs: 60000 };
    const err = errorForStatus({ what: 'GET /x', status: 429, headers: {}, body: undefined, rateLimit, localWallMs: NOW });
    expect(err.details).toMatchObject({ rateLimit, retryAfterMs: 6000 });
    const withHeader = errorForStatus({ what: 'GET /x', status: 429, headers: { 'retry-after': '2' }, body: undefined, rateLimit, localWallMs: NOW });
    expect(withHeader.details.retryAfterMs).toBe(2000);
  });
});

describe('network errors', () => {
  test('keeps the code and never the got options (which hold the bearer header)', () => {
    const gotLike = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED', options: { headers: { authorization: 'Bearer x' } } });
    const err = networkError('GET /v2/devices/me', gotLike, 30000, Date.now());
    expect(err).toMatchObject({ kind: 'network', details: { code: 'ECONNREFUSED' } });
    expect(err.exitCode).toBe(69);
    expect(JSON.stringify(err.details)).not.toContain('Bearer');
  });

  test('timeouts name the limit in agent seconds', () => {
    const err = networkError('GET /x', Object.assign(new Error('t'), { name: 'TimeoutError', code: 'ETIMEDOUT', event: 'request' }), 30000, Date.now());
    expect(err.message).toContain('within 30 s');
    expect(err.details.code).toBe('ETIMEDOUT');
  });
});

describe('Device validation', () => {
  const good = {
    _type: 'project_device',
    id: 'dev-1',
    name: 'Cam A',
    status: 'online',
    project_id: 'p1',
    project: { _type: 'project', id: 'p1', name: 'Shoot' },
    channels: [{ id: 'c1', name: 'Main', asset_type: 'video', external_index: 0 }],
    authorization: { id: 'a1', expires_at: null, scopes: { id: 's', asset_create: true, offline: true } },
    brand_new_field: { anything: [1, 2] },
  };

  test('accepts a full record and keeps unknown fields', () => {
    expect(validateDevice(good, 'GET /v2/devices/me')).toMatchObject({ id: 'dev-1', brand_new_field: { anything: [1, 2] } });
    expect(validateDevice({ id: 'x' }, 'w').id).toBe('x');
  });

  test('null in any optional field reads as absent and is dropped, as the real service sends for fields never set', () => {
    const fresh = {
      ...good,
      name: null,
      status: null,
      project_id: null,
      asset_type: null,
      last_seen_at: null,
      last_known_firmware_version: null,
      project: { id: null, name: null },
      channels: [{ id: 'c1', name: null, asset_type: null, status: null }],
      authorization: { id: null, expires_at: null, scopes: { asset_create: true, offline: null } },
    };
    const before = JSON.stringify(fresh);
    const d = validateDevice(fresh, 'GET /v2/devices/me');
    for (const key of ['name', 'status', 'project_id', 'asset_type', 'last_seen_at', 'last_known_firmware_version']) expect(key in d).toBe(false);
    expect(d.project).toEqual({});
    expect(d.channels).toEqual([{ id: 'c1' }]);
    // expires_at null is meaningful ("never expires") and typed string | null: kept.
    expect(d.authorization).toEqual({ expires_at: null, scopes: { asset_create: true } });
    // The caller's parsed body is not mutated.
    expect(JSON.stringify(fresh)).toBe(before);
    expect(validateDevice({ id: 'x', project: null, channels: null, authorization: null }, 'w')).toEqual({ id: 'x' });
  });

  test('check facts from a record with every optional field null', () => {
    const d = validateDevice({ id: 'dev-1', name: null, status: null, project_id: null, project: null, channels: null, authorization: null, last_seen_at: null }, 'w');
    const facts = checkFacts(d, Date.now());
    expect(facts.device).toEqual({ id: 'dev-1', name: null, status: null, project_id: null, project: null, channels: [] });
    expect(facts.expiresAt).toBeNull();
  });

  test.each([
    [{ ...good, channels: 'c1' }, "field 'channels' is a string, expected an array"],
    [{ ...good, id: 7 }, "field 'id' is a number, expected a string"],
    [{ ...good, name: 7 }, "field 'name' is a number, expected a string"],
    [{ ...good, project: 'p1' }, "field 'project' is a string, expected an object"],
    [{ ...good, project: { name: 5 } }, "field 'project.name' is a number"],
    [{ ...good, channels: [{ name: 'x' }] }, "field 'channels[0].id' is missing, expected a string"],
    [{ ...good, authorization: { expires_at: 3 } }, "field 'authorization.expires_at' is a number, expected a string or null"],
    [{ ...good, authorization: { scopes: { offline: 'yes' } } }, "field 'authorization.scopes.offline' is a string, expected a boolean"],
    [[good], "field '(body)' is an array"],
  ])('rejects a wrong type (case %#)', (value, message) => {
    expect(() => validateDevice(value, 'GET /v2/devices/me')).toThrow(message);
    try {
      validateDevice(value, 'GET /v2/devices/me');
    } catch (err) {
      expect(err).toBeInstanceOf(AgentError);
      expect((err as AgentError).kind).toBe('protocol');
      expect((err as AgentError).message).toMatch(/^GET \/v2\/devices\/me: /);
    }
  });
});
