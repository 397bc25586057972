// CredentialsTokenSource: when it refreshes ahead of expiry, that a new pair
// is on flash before anything uses it, one refresh at a time, stop() waits.
// Failures and refusals: token-source-failures.test.ts.
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { flushMicrotasks } from '../support/fake-clock.js';
import { grantOf, tempDir } from '../support/auth-fixtures.js';
import { FILE_WALL, HOUR, LIFETIME_MS, LIFETIME_S, makeSource } from '../support/token-source-harness.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir('c2c-ts-');
});
afterEach(() => tmp.cleanup());

const allFiniteAndNonNegative = (delays: number[]): boolean => delays.every((d) => Number.isFinite(d) && d >= 0);

describe('refresh ahead of expiry', () => {
  test.each([0, 0.25, 0.5, 0.999])('random %p: fires at (50 + 25 x random) %% of the lifetime after obtained_at, not before', async (r) => {
    const h = makeSource({ dir: tmp.dir, random: () => r });
    h.source.reload();
    h.source.start();
    const expected = LIFETIME_MS * (0.5 + 0.25 * r);
    expect(h.armedIn()).toBeCloseTo(expected, 0);
    expect(expected).toBeGreaterThanOrEqual(0.5 * LIFETIME_MS);
    expect(expected).toBeLessThan(0.75 * LIFETIME_MS);
    await h.clock.advance(expected - 1);
    expect(h.oauth.count('refresh')).toBe(0);
    await h.clock.advance(1);
    expect(h.oauth.calls).toEqual([{ op: 'refresh', arg: 'refresh-old-000001' }]);
    h.oauth.pending[0]!.resolve(grantOf('access-new-000002', 'refresh-new-000002', LIFETIME_S));
    await h.source.stop();
  });

  test('a file that says the token is half used: the refresh comes sooner, by that half', async () => {
    const h = makeSource({ dir: tmp.dir, random: () => 0.5, ageMs: LIFETIME_MS / 2 });
    h.source.reload();
    h.source.start();
    // 62.5 % of the lifetime after obtained_at, half of which is already gone.
    expect(h.armedIn()).toBeCloseTo(0.125 * LIFETIME_MS, 0);
    await h.clock.advance(0.125 * LIFETIME_MS);
    expect(h.oauth.count('refresh')).toBe(1);
  });

  test('a wall clock far in the past (no RTC yet): clamped to a fresh token, finite delay', () => {
    const h = makeSource({ dir: tmp.dir, random: () => 0.5, wallStart: Date.UTC(1970, 0, 2) });
    h.source.reload();
    h.source.start();
    expect(h.armedIn()).toBeCloseTo(0.625 * LIFETIME_MS, 0);
    expect(allFiniteAndNonNegative(h.delays)).toBe(true);
  });

  test('a wall clock far in the future: clamped to a used-up token, refreshed at once, never a negative delay', async () => {
    const h = makeSource({ dir: tmp.dir, random: () => 0.5, wallStart: Date.UTC(2040, 0, 1) });
    h.source.reload();
    h.source.start();
    expect(h.armedIn()).toBe(0);
    expect(allFiniteAndNonNegative(h.delays)).toBe(true);
    await h.clock.advance(0);
    expect(h.oauth.count('refresh')).toBe(1);
  });

  test('after a refresh the next one is armed 50..75 % of the new lifetime from now, with the new refresh token', async () => {
    const h = makeSource({ dir: tmp.dir, random: () => 0 });
    h.source.reload();
    h.source.start();
    await h.clock.advance(0.5 * LIFETIME_MS);
    h.oauth.pending[0]!.resolve(grantOf('access-new-000002', 'refresh-new-000002', 3600));
    // refresh() while one is in flight returns that one: wait for the timer's refresh to settle.
    await expect(h.source.refresh('join')).resolves.toBe('refreshed');
    expect(h.source.current()).toBe('access-new-000002');
    expect(h.armedIn()).toBeCloseTo(0.5 * 3_600_000, 0);
    await h.clock.advance(0.5 * 3_600_000);
    expect(h.oauth.calls.map((c) => c.arg)).toEqual(['refresh-old-000001', 'refresh-new-000002']);
    expect(allFiniteAndNonNegative(h.delays)).toBe(true);
  });

  test('no timer before start(), none after stop()', async () => {
    const h = makeSource({ dir: tmp.dir });
    h.source.reload();
    expect(h.armedIn()).toBeUndefined();
    h.source.start();
    expect(h.armedIn()).toBeDefined();
    await h.source.stop();
    expect(h.clock.pendingCount).toBe(0);
    await h.clock.advance(24 * HOUR);
    expect(h.oauth.count('refresh')).toBe(0);
  });
});

describe('the new pair is on flash before it is used', () => {
  test('file (content, mode 0600) written before current() changes and before refresh() resolves', async () => {
    const h = makeSource({ dir: tmp.dir });
    h.source.reload();
    expect(h.source.current()).toBe('access-old-000001');
    const p = h.source.refresh('test');
    let fileWhenResolved: Record<string, unknown> | undefined;
    void p.then(() => {
      fileWhenResolved = h.fileJson();
    });
    await flushMicrotasks();
    expect(h.oauth.count('refresh')).toBe(1);
    h.oauth.pending[0]!.resolve(grantOf('access-new-000002', 'refresh-new-000002', LIFETIME_S, 30_000));
    // Watch every turn of the event loop for the moment current() changes.
    let fileWhenChanged: Record<string, unknown> | undefined;
    for (const until = Date.now() + 5_000; Date.now() < until && fileWhenChanged === undefined; ) {
      if (h.source.current() !== 'access-old-000001') fileWhenChanged = h.fileJson();
      else await new Promise<void>((r) => setImmediate(r));
    }
    expect(h.source.current()).toBe('access-new-000002');
    expect(fileWhenChanged).toMatchObject({ access_token: 'access-new-000002', refresh_token: 'refresh-new-000002' });
    await expect(p).resolves.toBe('refreshed');
    expect(fileWhenResolved).toMatchObject({ access_token: 'access-new-000002', refresh_token: 'refresh-new-000002' });
    expect(statSync(h.settings.tokenFile).mode & 0o777).toBe(0o600);
    expect(h.fileJson()).toEqual({
      access_token: 'access-new-000002',
      refresh_token: 'refresh-new-000002',
      token_type: 'bearer',
      expires_in: LIFETIME_S,
      obtained_at: new Date(FILE_WALL + 30_000).toISOString(),
      expires_at: new Date(FILE_WALL + 30_000 + LIFETIME_MS).toISOString(),
      clock: 'service',
    });
    expect(readdirSync(path.dirname(h.settings.tokenFile)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    expect(readFileSync(h.settings.tokenFile, 'utf8')).not.toContain('access-old-000001');
  });

  test('concurrent refresh() calls share one request and one result', async () => {
    const h = makeSource({ dir: tmp.dir });
    h.source.reload();
    const a = h.source.refresh('a 401');
    const b = h.source.refresh('ahead of expiry');
    const c = h.source.refresh('another 401');
    await flushMicrotasks();
    expect(h.oauth.count('refresh')).toBe(1);
    h.oauth.pending[0]!.resolve(grantOf('access-new-000002', 'refresh-new-000002'));
    await expect(Promise.all([a, b, c])).resolves.toEqual(['refreshed', 'refreshed', 'refreshed']);
    expect(h.oauth.count('refresh')).toBe(1);
    // Once settled, the next refresh is a new request with the new refresh token.
    const d = h.source.refresh('later');
    await flushMicrotasks();
    expect(h.oauth.calls.map((x) => x.arg)).toEqual(['refresh-old-000001', 'refresh-new-000002']);
    h.oauth.pending[1]!.resolve(grantOf('access-new-000003', 'refresh-new-000003'));
    await expect(d).resolves.toBe('refreshed');
    expect(h.source.current()).toBe('access-new-000003');
  });
});

describe('stop()', () => {
  test('waits for a refresh in flight instead of aborting it; its pair is stored and no timer is left', async () => {
    const h = makeSource({ dir: tmp.dir });
    h.source.reload();
    h.source.start();
    const p = h.source.refresh('a 401');
    await flushMicrotasks();
    let stopped = false;
    const stopping = h.source.stop().then(() => {
      stopped = true;
    });
    await flushMicrotasks();
    expect(stopped).toBe(false);
    h.oauth.pending[0]!.resolve(grantOf('access-new-000002', 'refresh-new-000002'));
    await stopping;
    expect(stopped).toBe(true);
    await expect(p).resolves.toBe('refreshed');
    expect(h.fileJson()).toMatchObject({ access_token: 'access-new-000002', refresh_token: 'refresh-new-000002' });
    expect(h.clock.pendingCount).toBe(0);
  });

  test('a refresh that fails while stopping does not make stop() reject', async () => {
    const h = makeSource({ dir: tmp.dir });
    h.source.reload();
    h.source.start();
    const p = h.source.refresh('a 401');
    p.catch(() => undefined);
    await flushMicrotasks();
    const stopping = h.source.stop();
    h.oauth.pending[0]!.reject(new Error('boom'));
    await expect(stopping).resolves.toBeUndefined();
    expect(h.clock.pendingCount).toBe(0);
  });
});
