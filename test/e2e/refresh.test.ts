// Token refresh end to end in agent time (rig.ts): the daemon in-process
// against the fake cloud on one clock. Hours (a week with C2C_SOAK=full) of
// rotation with no gap in authorization and every refresh at 50 to 75 % of
// its token's lifetime to the ms, a revoke by the person, and a refresh whose
// answer was lost. (Refreshes through kill -9s: e2e/refresh-crash.test.ts; a
// kill inside the credentials' write, and the temp file it leaves, a
// process's: integration/kill9.test.ts.)
import { afterEach, describe, expect, it } from '@jest/globals';
import { MIN_SPACING_MS, SPACING_MARGIN_MS } from '../../agent/lib/timing.js';
import { soak } from '../support/soak.js';
import { HOUR, MINUTE, Rig } from './rig.js';

const TOKEN = '/v2/auth/token';
const HEARTBEAT = '/v2/devices/heartbeat';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('refresh rotation', () => {
  // A soak (test/support/soak.ts): `npm test` runs 6 agent hours of 1 h tokens (some 10 refreshes, a
  // few real seconds); `npm run test:soak` a week of the service's 8 h tokens (some 30).
  const { figure } = soak('token rotation', ['rotationHours', 'rotationTokenHours'], { random: false });
  const SPAN = figure('rotationHours') * HOUR;
  const LIFETIME = figure('rotationTokenHours') * HOUR;
  it(`rotates the pair at 50-75 % of its lifetime, exactly, with no gap in authorization (${SPAN / HOUR} agent h)`, async () => {
    const r = (rig = await Rig.up({ cloud: { tokenLifetimeSeconds: LIFETIME / 1000 } }));
    r.start(r.mediaEnv());
    await r.runTo(SPAN);
    await r.stop();

    const calls = r.entries('POST', TOKEN);
    const count = (es: typeof calls) => es.reduce<Record<number, number>>((m, e) => ({ ...m, [e.status]: (m[e.status] ?? 0) + 1 }), {});
    const beats = r.entries('POST', HEARTBEAT);
    const ref = r.cloud.referee(r.device.id);
    // Heartbeat gaps (at the service) that hold a refresh: what a refresh could disturb.
    const around = (times: number[]) =>
      calls.flatMap((c) => {
        const i = times.findIndex((t, k) => t <= c.t && (times[k + 1] ?? Infinity) > c.t);
        return i >= 0 && i + 1 < times.length ? [times[i + 1]! - times[i]!] : [];
      });
    const all = r.entries();
    // The service asks for GET /v2/devices/me after every refresh (docs/service-api.md, "Tokens"): counted, not asserted.
    const meAfter = calls.filter((c) => all.find((e) => e.t > c.t && e.path !== TOKEN)?.path === '/v2/devices/me').length;
    console.log(JSON.stringify({ hours: SPAN / HOUR, lifetimeH: LIFETIME / HOUR, refreshes: count(calls), heartbeats: count(beats), referee: { tooSoon: ref.tooSoon, tooLate: ref.tooLate }, refreshesFollowedByGetMe: meAfter }));

    // ~ the span / 0.5-0.75 of the lifetime, every one answered 200: a 400 would be an old refresh token sent again.
    expect(count(calls)).toEqual({ 200: calls.length });
    expect(calls.length).toBeGreaterThanOrEqual(Math.floor(SPAN / (0.75 * LIFETIME)));
    expect(calls.length).toBeLessThanOrEqual(Math.ceil(SPAN / (0.5 * LIFETIME)));
    // Each at 50-75 % of the lifetime of the pair it replaces, counted from when that pair was issued
    // (the seeded one at 0): no slack, one clock.
    const issued = [0, ...calls.map((c) => c.t)];
    calls.forEach((c, i) => {
      expect(c.t - issued[i]!).toBeGreaterThanOrEqual(0.5 * LIFETIME);
      expect(c.t - issued[i]!).toBeLessThanOrEqual(0.75 * LIFETIME);
    });
    // Drawn, not fixed.
    expect(new Set(calls.map((c, i) => c.t - issued[i]!)).size).toBe(calls.length);
    // The agent saw every answer: one "refreshed" line per 200, and nothing worse than info.
    expect(r.lines.filter((l) => l.msg === 'access token refreshed')).toHaveLength(calls.length);
    expect(r.lines.filter((l) => l.level >= 40).map((l) => l.msg)).toEqual([]);
    // No gap in authorization: not one call of the device was answered 401.
    expect(r.entries().filter((e) => e.status === 401).map((e) => `${e.method} ${e.path} t=${e.t}`)).toEqual([]);
    // A refresh neither hurries nor delays a heartbeat, and the referee, on the same clock, finds nothing anywhere.
    expect(Math.min(...around(ref.heartbeatTimes))).toBeGreaterThanOrEqual(MIN_SPACING_MS + SPACING_MARGIN_MS);
    expect(Math.max(...around(beats.filter((e) => e.status === 204).map((e) => e.t)))).toBeLessThanOrEqual(5 * MINUTE);
    expect({ tooSoon: ref.tooSoon, tooLate: ref.tooLate }).toEqual({ tooSoon: 0, tooLate: 0 });
    expect(beats.length).toBeGreaterThan(SPAN / 255_000);

    // The file holds the newest pair: its refresh token is the only unused one, the seeded one used.
    const { readFileSync } = await import('node:fs');
    const file = JSON.parse(readFileSync(`${r.stateDir}/credentials.json`, 'utf8')) as { access_token: string; refresh_token: string };
    expect(r.cloud.tokenState(file.access_token)).toBe('valid');
    expect(r.cloud.tokenState(file.refresh_token)).toBe('valid');
    expect(r.cloud.tokenState(r.device.refreshToken)).toBe('used');
  }, 600_000);
});

describe('the person revokes the unit while the daemon runs', () => {
  it('needs pairing after at most two more requests, then stays silent', async () => {
    const r = (rig = await Rig.up());
    r.start();
    await r.until('a successful heartbeat', () => r.cloud.referee(r.device.id).successfulHeartbeats >= 1, 5 * MINUTE);
    expect(r.state()).toBe('online');
    r.cloud.control.revokeTokens(r.device.id);
    const revokedAt = r.now();

    await r.until('needs pairing', () => r.state() === 'needs-pairing', 10 * MINUTE);
    expect(r.status()).toMatchObject({ state: 'needs-pairing' });
    // Silence for 90 agent minutes: several needs-pairing checks (every 15-30 min) would have fired.
    await r.runTo(revokedAt + 1.5 * HOUR);
    const first = r.cloud.journal.findIndex((e) => e.deviceId === r.device.id && e.status === 401);
    expect(first).toBeGreaterThanOrEqual(0);
    // Every request after the first 401, whoever it names: the fake serves only this daemon.
    const after = r.cloud.journal.slice(first + 1).map((e) => `${e.method} ${e.path} ${e.status}`);
    // The one the refresh after a 401 costs, refused (a revoked grant); nothing else, ever.
    expect(after).toEqual([`POST ${TOKEN} 400`]);
    expect(r.state()).toBe('needs-pairing');
  });
});

describe('a refresh whose answer was lost', () => {
  it('is refused when retried (the token was used up): needs pairing, one line, no crash', async () => {
    const LIFETIME_S = 600;
    const r = (rig = await Rig.up({ cloud: { tokenLifetimeSeconds: LIFETIME_S } }));
    // Processed at once (the refresh token is used up), answered after 10 agent minutes: far past
    // the agent's 30 s request timeout and 35 s guard, so the agent never sees the new pair.
    const lost = r.cloud.control.addFault({ kind: 'delay', method: 'POST', path: TOKEN, delayMs: 10 * MINUTE, count: 1 });
    r.start();

    await r.until('needs pairing', () => r.state() === 'needs-pairing', LIFETIME_S * 1000);
    expect(String(r.status()?.reason)).toContain('refused the refresh token');
    expect(r.cloud.control.listFaults().find((f) => f.id === lost.id)?.hits).toBe(1);

    // Every token call (the delayed one names its device only once answered): the fake serves only this daemon.
    const calls = r.cloud.journal.filter((e) => e.method === 'POST' && e.path === TOKEN);
    // The lost one (processed; its answer still held back), then the same token again: invalid_request.
    expect(calls).toHaveLength(2);
    expect(calls[0]!.faults).toEqual(['delay']);
    expect(calls[1]!.status).toBe(400);
    // Sent at 50-75 % of the seeded pair's lifetime; the retry after the 30 s timeout and a backoff.
    expect(calls[0]!.t).toBeGreaterThanOrEqual(0.5 * LIFETIME_S * 1000);
    expect(calls[0]!.t).toBeLessThanOrEqual(0.75 * LIFETIME_S * 1000);
    expect(calls[1]!.t - calls[0]!.t).toBeGreaterThanOrEqual(30_000);
    expect(r.cloud.tokenState(r.device.refreshToken)).toBe('used');

    const refused = r.lines.filter((l) => l.msg.startsWith('needs pairing: the service refused the refresh token'));
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ level: 40, code: 'invalid_request', status: 400 });
    // The timeout before it was a retryable failure, not a refusal.
    expect(r.lines.filter((l) => l.msg.startsWith('token refresh failed'))).toHaveLength(1);
    // One change of state into needs-pairing; nothing logged at error or fatal.
    expect(r.lines.filter((l) => l.to === 'needs-pairing')).toHaveLength(1);
    expect(r.lines.filter((l) => l.level >= 50)).toEqual([]);
    // The credentials file still holds the used-up pair, untouched (no torn or emptied file).
    const { readFileSync } = await import('node:fs');
    expect((JSON.parse(readFileSync(`${r.stateDir}/credentials.json`, 'utf8')) as { refresh_token: string }).refresh_token).toBe(r.device.refreshToken);
  });
});
