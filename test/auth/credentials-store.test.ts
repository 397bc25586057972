// The credentials store: the file a grant makes, atomic 0600 saves, removal,
// the sweep of a killed writer's temp files, and reading back what was saved.
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { credentialsOf, fileFromGrant, removeCredentials, saveCredentials, sweepCredentialTemps } from '../../agent/auth/credentials-store.js';
import { parseCredentialsFile } from '../../agent/auth/credentials.js';
import { AgentError } from '../../agent/lib/errors.js';
import { scrub } from '../../agent/lib/secrets.js';
import { FakeClock } from '../support/fake-clock.js';
import { grantOf, tempDir, thrown } from '../support/auth-fixtures.js';

const WALL = Date.UTC(2026, 4, 6, 12, 0, 0);

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir('c2c-store-');
});
afterEach(() => tmp.cleanup());

describe('fileFromGrant', () => {
  test('with the service Date offset known: the service clock', () => {
    const clock = new FakeClock(5_000, WALL);
    const f = fileFromGrant(grantOf('acc-aaaaaa1', 'ref-bbbbbb1', 28_800, 90_000), clock);
    expect(f).toEqual({
      access_token: 'acc-aaaaaa1',
      refresh_token: 'ref-bbbbbb1',
      token_type: 'bearer',
      expires_in: 28_800,
      obtained_at: new Date(WALL + 90_000).toISOString(),
      expires_at: new Date(WALL + 90_000 + 28_800_000).toISOString(),
      clock: 'service',
    });
  });

  test.each([0, -3_600_000])('an offset of %p ms is still the service clock', (offset) => {
    const f = fileFromGrant(grantOf('acc-aaaaaa1', 'ref-bbbbbb1', 60, offset), new FakeClock(0, WALL));
    expect(f.clock).toBe('service');
    expect(f.obtained_at).toBe(new Date(WALL + offset).toISOString());
    expect(Date.parse(f.expires_at) - Date.parse(f.obtained_at)).toBe(60_000);
  });

  test('no offset (no Date header): the local clock; no refresh token, no field', () => {
    const f = fileFromGrant(grantOf('acc-aaaaaa1', undefined, 3600), new FakeClock(0, WALL));
    expect(f.clock).toBe('local');
    expect(f.obtained_at).toBe(new Date(WALL).toISOString());
    expect(f.expires_at).toBe(new Date(WALL + 3_600_000).toISOString());
    expect('refresh_token' in f).toBe(false);
  });
});

describe('saveCredentials', () => {
  test('writes 0600 through a temp file and a rename, leaves no temp, registers both tokens', async () => {
    const file = path.join(tmp.dir, 'credentials.json');
    writeFileSync(file, '{"access_token":"older-token-000"}', { mode: 0o644 });
    const inodeBefore = statSync(file).ino;
    const content = fileFromGrant(grantOf('acc-saved-000001', 'ref-saved-000001'), new FakeClock(0, WALL));
    await saveCredentials(file, content);
    const st = statSync(file);
    expect(st.mode & 0o777).toBe(0o600);
    // A rename puts a new inode under the name; an in-place write would keep the old one.
    expect(st.ino).not.toBe(inodeBefore);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(content);
    expect(readdirSync(tmp.dir)).toEqual(['credentials.json']);
    expect(scrub('a acc-saved-000001 b ref-saved-000001')).toBe('a [redacted] b [redacted]');
  });

  test('a save into a missing directory rejects and leaves nothing', async () => {
    await expect(saveCredentials(path.join(tmp.dir, 'nope', 'credentials.json'), fileFromGrant(grantOf('acc-x-0000001', undefined), new FakeClock()))).rejects.toThrow();
    expect(readdirSync(tmp.dir)).toEqual([]);
  });
});

describe('removeCredentials', () => {
  test('removes the file and resolves true; false when there is none', async () => {
    const file = path.join(tmp.dir, 'credentials.json');
    writeFileSync(file, '{}', { mode: 0o600 });
    await expect(removeCredentials(file)).resolves.toBe(true);
    expect(readdirSync(tmp.dir)).toEqual([]);
    await expect(removeCredentials(file)).resolves.toBe(false);
  });
});

describe('sweepCredentialTemps', () => {
  test('removes only old temp files of the credentials file', () => {
    const file = path.join(tmp.dir, 'credentials.json');
    const old = (Date.now() - 5 * 60_000) / 1000;
    const make = (name: string, aged: boolean): void => {
      writeFileSync(path.join(tmp.dir, name), 'secret');
      if (aged) utimesSync(path.join(tmp.dir, name), old, old);
    };
    make('.credentials.json.0123456789ab.tmp', true); // a killed writer's: goes
    make('.credentials.json.ba9876543210.tmp', false); // a pair writing right now: stays
    make('.other.json.0123456789ab.tmp', true); // another file's temp: stays
    make('.credentials.json.tmp', true); // not the temp pattern: stays
    make('credentials.json', true);
    make('credentials.json.bak', true);
    expect(sweepCredentialTemps(file)).toEqual(['.credentials.json.0123456789ab.tmp']);
    expect(readdirSync(tmp.dir).sort()).toEqual(['.credentials.json.ba9876543210.tmp', '.credentials.json.tmp', '.other.json.0123456789ab.tmp', 'credentials.json', 'credentials.json.bak']);
  });

  test('a missing directory: nothing removed, no throw', () => {
    expect(sweepCredentialTemps(path.join(tmp.dir, 'missing', 'credentials.json'))).toEqual([]);
  });
});

describe('parseCredentialsFile', () => {
  test('round-trips what saveCredentials writes (expires_in, obtained_at, expires_at, both tokens)', async () => {
    const file = path.join(tmp.dir, 'credentials.json');
    const content = fileFromGrant(grantOf('acc-round-000001', 'ref-round-000001', 7200, 1_500), new FakeClock(0, WALL));
    await saveCredentials(file, content);
    const parsed = parseCredentialsFile(readFileSync(file, 'utf8'), file);
    expect(parsed).toEqual({
      accessToken: 'acc-round-000001',
      refreshToken: 'ref-round-000001',
      tokenType: 'bearer',
      expiresInSeconds: 7200,
      obtainedAt: new Date(WALL + 1_500).toISOString(),
      expiresAt: new Date(WALL + 1_500 + 7_200_000).toISOString(),
      source: file,
    });
    expect(parsed).toEqual(credentialsOf(content, file));
  });

  const base = { access_token: 'acc-bad-0000001', refresh_token: 'ref-bad-0000001', token_type: 'bearer', expires_in: 3600, obtained_at: '2026-01-01T00:00:00.000Z', expires_at: '2026-01-01T01:00:00.000Z' };
  test.each([
    ['obtained_at not a time', { obtained_at: 'yesterday' }, /obtained_at/],
    ['obtained_at a number', { obtained_at: 1767225600000 }, /obtained_at/],
    ['expires_in zero', { expires_in: 0 }, /expires_in/],
    ['expires_in negative', { expires_in: -5 }, /expires_in/],
    ['expires_in a string', { expires_in: '3600' }, /expires_in/],
    ['expires_in infinite (1e400)', { expires_in: 'INF' }, /expires_in/],
  ])('%s: exit 78 naming the field and the file, never the tokens', (_name, patch, field) => {
    const file = path.join(tmp.dir, 'credentials.json');
    const text = JSON.stringify({ ...base, ...patch }).replace('"INF"', '1e400');
    const e = thrown(() => parseCredentialsFile(text, file));
    expect(e.kind).toBe('config');
    expect(e.exitCode).toBe(78);
    expect(e.message).toMatch(field);
    expect(e.message).toContain(file);
    expect(e.message).not.toContain('acc-bad-0000001');
    expect(e.message).not.toContain('ref-bad-0000001');
  });
});
