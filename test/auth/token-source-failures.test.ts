// CredentialsTokenSource when things go wrong: the network, a refusal (needs
// pairing), a file replaced during a refresh, a save that fails, and the
// cases with nothing to refresh with (C2C_TOKEN, no client credentials).
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { AgentError } from '../../agent/lib/errors.js';
import { fileFromGrant, removeCredentials, saveCredentials } from '../../agent/auth/credentials-store.js';
import { flushMicrotasks } from '../support/fake-clock.js';
import { grantOf, networkDown, oauthRefusal, tempDir, unwritableTokenFile, WARN, writeCredentials, thrown } from '../support/auth-fixtures.js';
import { FILE_WALL, LIFETIME_S, makeSource } from '../support/token-source-harness.js';

const MIN = 60_000;

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir('c2c-tsf-');
});
afterEach(() => tmp.cleanup());

describe('the service could not be asked', () => {
  test.each([0, 0.5, 0.999])('random %p: a network error rejects, keeps the old token, retries with backoff in 15 s..10 min, no onRejected', async (r) => {
    const h = makeSource({ dir: tmp.dir, random: () => r });
    h.source.reload();
    h.source.start();
    h.oauth.onRefresh = () => Promise.reject(networkDown());
    const err = await h.source.refresh('a 401').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentError);
    expect((err as AgentError).kind).toBe('network');
    expect(h.rejected).toEqual([]);
    expect(h.source.current()).toBe('access-old-000001');
    // Failures in a row: every retry is armed within the bounds, the refresh token is the same.
    for (let i = 1; i <= 8; i++) {
      const wait = h.armedIn();
      expect(wait).toBeDefined();
      expect(wait!).toBeGreaterThanOrEqual(15_000);
      expect(wait!).toBeLessThanOrEqual(10 * MIN);
      await h.clock.advance(wait!);
      expect(h.oauth.count('refresh')).toBe(i + 1);
    }
    expect(h.oauth.calls.every((c) => c.arg === 'refresh-old-000001')).toBe(true);
    expect(h.lines.some((l) => l.level === WARN && /token refresh failed/.test(l.msg))).toBe(true);
    // The network comes back: the next retry refreshes and the schedule returns to normal.
    h.oauth.onRefresh = async () => grantOf('access-new-000002', 'refresh-new-000002');
    await h.clock.advance(h.armedIn()!);
    await h.source.refresh('join');
    expect(h.source.current()).toBe('access-new-000002');
    expect(h.armedIn()!).toBeGreaterThanOrEqual(0.5 * LIFETIME_S * 1000);
    expect(h.rejected).toEqual([]);
  });
});

describe('the service refused the refresh token: needs pairing', () => {
  test.each([
    ['invalid_grant', oauthRefusal('invalid_grant')],
    ['invalid_request (a refresh token used twice)', oauthRefusal('invalid_request')],
    ['a plain 401', new AgentError('unauthorized', 'POST /v2/auth/token: 401 Not Authorized', { status: 401 })],
  ])('%s: resolves refused, onRejected once, no token, no timer; the same file is refused again without the network', async (_name, refusal) => {
    const h = makeSource({ dir: tmp.dir });
    h.source.reload();
    h.source.start();
    h.oauth.onRefresh = () => Promise.reject(refusal);
    await expect(h.source.refresh('a 401')).resolves.toBe('refused');
    expect(h.rejected).toHaveLength(1);
    expect(h.rejected[0]).toMatch(/c2c-agent pair/);
    expect(h.source.current()).toBeUndefined();
    expect(h.armedIn()).toBeUndefined();
    const e = thrown(() => h.source.reload());
    expect(e.kind).toBe('unauthorized');
    expect(e.exitCode).toBe(77);
    expect(h.source.current()).toBeUndefined();
    expect(h.oauth.count('refresh')).toBe(1);
    await h.clock.advance(24 * 60 * MIN);
    expect(h.oauth.count('refresh')).toBe(1);
    expect(h.rejected).toHaveLength(1);
  });

  test('a re-paired (changed) file reloads fine and refreshes on its own schedule', async () => {
    const h = makeSource({ dir: tmp.dir });
    h.source.reload();
    h.source.start();
    h.oauth.onRefresh = () => Promise.reject(oauthRefusal('invalid_grant'));
    await expect(h.source.refresh('a 401')).resolves.toBe('refused');
    await saveCredentials(h.settings.tokenFile, fileFromGrant(grantOf('access-paired-0003', 'refresh-paired-0003'), h.clock));
    expect(() => h.source.reload()).not.toThrow();
    expect(h.source.current()).toBe('access-paired-0003');
    expect(h.armedIn()).toBeDefined();
    h.oauth.onRefresh = async () => grantOf('access-new-000004', 'refresh-new-000004');
    await expect(h.source.refresh('a 401')).resolves.toBe('refreshed');
    expect(h.oauth.calls.at(-1)?.arg).toBe('refresh-paired-0003');
    expect(h.rejected).toHaveLength(1);
  });
});

describe('the file changed during the refresh', () => {
  test('the other file wins: reloaded, our answer is not written', async () => {
    const h = makeSource({ dir: tmp.dir });
    h.source.reload();
    const p = h.source.refresh('a 401');
    await flushMicrotasks();
    // `c2c-agent pair` in another process stores a new pairing meanwhile.
    await saveCredentials(h.settings.tokenFile, fileFromGrant(grantOf('access-other-0003', 'refresh-other-0003'), h.clock));
    h.oauth.pending[0]!.resolve(grantOf('access-ours-00002', 'refresh-ours-00002'));
    await expect(p).resolves.toBe('refreshed');
    expect(h.source.current()).toBe('access-other-0003');
    expect(h.fileJson()).toMatchObject({ access_token: 'access-other-0003', refresh_token: 'refresh-other-0003' });
    expect(readFileSync(h.settings.tokenFile, 'utf8')).not.toContain('ours');
    // The next refresh sends the other file's refresh token.
    h.oauth.onRefresh = async () => grantOf('access-new-000004', 'refresh-new-000004');
    await h.source.refresh('later');
    expect(h.oauth.calls.at(-1)?.arg).toBe('refresh-other-0003');
  });

  test('`c2c-agent unpair` removed the file during a refresh: nothing written back, refused (needs pairing), not a rejection', async () => {
    const h = makeSource({ dir: tmp.dir });
    h.source.reload();
    const p = h.source.refresh('a 401');
    await flushMicrotasks();
    await removeCredentials(h.settings.tokenFile);
    h.oauth.pending[0]!.resolve(grantOf('access-ours-00002', 'refresh-ours-00002'));
    // TokenSource.refresh() rejects only when the service could not be asked (network, 5xx, 429).
    await expect(p).resolves.toBe('refused');
    expect(existsSync(h.settings.tokenFile)).toBe(false);
    expect(h.source.current()).toBeUndefined();
    expect(h.rejected).toHaveLength(1);
    expect(h.rejected[0]).toMatch(/not paired/);
  });

  // Re-pairing revokes the unit's old tokens, so a refresh in flight while
  // `c2c-agent pair` stores the new pair is refused: the new file must win
  // then too, not be marked as refused.
  test('a refusal that arrives after a re-pair stored a new file: the new file wins, no needs-pairing', async () => {
    const h = makeSource({ dir: tmp.dir });
    h.source.reload();
    h.source.start();
    const p = h.source.refresh('a 401');
    await flushMicrotasks();
    await saveCredentials(h.settings.tokenFile, fileFromGrant(grantOf('access-repaired-03', 'refresh-repaired-03'), h.clock));
    h.oauth.pending[0]!.reject(oauthRefusal('invalid_grant'));
    await p;
    expect(h.source.current()).toBe('access-repaired-03');
    expect(() => h.source.reload()).not.toThrow();
    expect(h.source.current()).toBe('access-repaired-03');
    expect(h.rejected).toEqual([]);
  });

  test('a refusal that arrives after SIGHUP reloaded a re-paired file: the reloaded token is kept', async () => {
    const h = makeSource({ dir: tmp.dir });
    h.source.reload();
    h.source.start();
    const p = h.source.refresh('a 401');
    await flushMicrotasks();
    await saveCredentials(h.settings.tokenFile, fileFromGrant(grantOf('access-repaired-03', 'refresh-repaired-03'), h.clock));
    h.source.reload(); // pair nudges the daemon with SIGHUP
    expect(h.source.current()).toBe('access-repaired-03');
    h.oauth.pending[0]!.reject(oauthRefusal('invalid_grant'));
    await p;
    expect(h.source.current()).toBe('access-repaired-03');
    expect(() => h.source.reload()).not.toThrow();
    expect(h.rejected).toEqual([]);
  });
});

describe('the new pair cannot be stored', () => {
  test('it is still used from memory, and a warning says so', async () => {
    const ro = unwritableTokenFile(tmp.dir, (f) => writeCredentials(f, { access: 'access-old-000001', refresh: 'refresh-old-000001', lifetimeS: LIFETIME_S, wallNow: FILE_WALL }));
    try {
      const h = makeSource({ dir: tmp.dir, noFile: true, settings: { tokenFile: ro.file } });
      h.source.reload();
      h.source.start();
      h.oauth.onRefresh = async () => grantOf('access-new-000002', 'refresh-new-000002');
      await expect(h.source.refresh('a 401')).resolves.toBe('refreshed');
      expect(h.source.current()).toBe('access-new-000002');
      expect(h.fileJson()).toMatchObject({ access_token: 'access-old-000001' });
      const warn = h.lines.find((l) => l.level === WARN && /cannot store the refreshed credentials/.test(l.msg));
      expect(warn?.msg).toContain('keeping them in memory');
      expect(h.armedIn()).toBeDefined();
      // The next refresh uses the refresh token held in memory, not the spent one on disk.
      await h.source.refresh('again');
      expect(h.oauth.calls.map((c) => c.arg)).toEqual(['refresh-old-000001', 'refresh-new-000002']);
    } finally {
      ro.restore();
    }
  });
});

describe('nothing to refresh with', () => {
  test('C2C_TOKEN: refresh is unavailable, no fingerprint, no request', async () => {
    const h = makeSource({ dir: tmp.dir, noFile: true, settings: { token: 'env-token-c2c-0001' } });
    expect(h.source.fingerprint).toBeUndefined();
    h.source.reload();
    h.source.start();
    expect(h.source.current()).toBe('env-token-c2c-0001');
    expect(h.armedIn()).toBeUndefined();
    await expect(h.source.refresh('a 401')).resolves.toBe('unavailable');
    expect(h.oauth.calls).toEqual([]);
    expect(h.rejected).toEqual([]);
    expect(h.source.current()).toBe('env-token-c2c-0001');
  });

  test('a file-based source has a fingerprint that follows the file', () => {
    const h = makeSource({ dir: tmp.dir });
    const print = h.source.fingerprint?.();
    expect(print).toMatch(/^\d+:\d+:[\d.]+$/);
    writeCredentials(h.settings.tokenFile, { access: 'access-changed-00009', refresh: 'r-changed-00009', lifetimeS: 60, wallNow: FILE_WALL });
    expect(h.source.fingerprint?.()).not.toBe(print);
  });

  test.each([
    ['client() resolves undefined (no secret configured)', async () => undefined],
    ['no client dependency at all', null],
  ] as const)('%s: unavailable, no request, the token is kept', async (_name, client) => {
    const h = makeSource({ dir: tmp.dir, client });
    h.source.reload();
    await expect(h.source.refresh('a 401')).resolves.toBe('unavailable');
    expect(h.oauth.calls).toEqual([]);
    expect(h.source.current()).toBe('access-old-000001');
    expect(h.rejected).toEqual([]);
  });

  test('a file without a refresh token: unavailable', async () => {
    const h = makeSource({ dir: tmp.dir, noFile: true });
    writeCredentials(h.settings.tokenFile, { access: 'access-only-000001', lifetimeS: LIFETIME_S, wallNow: FILE_WALL });
    h.source.reload();
    h.source.start();
    expect(h.armedIn()).toBeUndefined();
    await expect(h.source.refresh('a 401')).resolves.toBe('unavailable');
    expect(h.oauth.calls).toEqual([]);
  });
});
