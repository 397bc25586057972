import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadCredentials } from '../../agent/auth/credentials.js';
import type { Settings } from '../../agent/config/types.js';
import { settingsIn, thrown } from '../support/auth-fixtures.js';
import { AgentError } from '../../agent/lib/errors.js';
import { scrub } from '../../agent/lib/secrets.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'c2c-cred-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function settings(extra: Partial<Settings>): Settings {
  return settingsIn(dir, { tokenFile: path.join(dir, 'missing.json'), configFile: '/none', profilesDir: dir, ...extra });
}

function file(name: string, content: string, mode = 0o600): string {
  const p = path.join(dir, name);
  writeFileSync(p, content, { mode });
  return p;
}

describe('loadCredentials', () => {
  test('C2C_TOKEN wins over the token file and is registered as a secret', () => {
    const tokenFile = file('c1.json', JSON.stringify({ access_token: 'file-access-token-1' }));
    const creds = loadCredentials(settings({ token: 'env-token-abcdef', tokenFile }));
    expect(creds).toEqual({ accessToken: 'env-token-abcdef', source: 'environment C2C_TOKEN' });
    expect(scrub('x env-token-abcdef y')).toBe('x [redacted] y');
  });

  test('reads the token file and registers both tokens', () => {
    const tokenFile = file('c2.json', JSON.stringify({ access_token: 'acc-token-222222', refresh_token: 'ref-token-333333', expires_at: '2026-11-22T18:00:00Z', token_type: 'bearer' }));
    const creds = loadCredentials(settings({ tokenFile }));
    expect(creds).toEqual({ accessToken: 'acc-token-222222', refreshToken: 'ref-token-333333', expiresAt: '2026-11-22T18:00:00Z', tokenType: 'bearer', source: tokenFile });
    expect(scrub('acc-token-222222 ref-token-333333')).toBe('[redacted] [redacted]');
  });

  test('no file and no C2C_TOKEN: not paired, exit 77, naming the file', () => {
    const err = thrown(() => loadCredentials(settings({})));
    expect(err.kind).toBe('unauthorized');
    expect(err.exitCode).toBe(77);
    expect(err.message).toContain(path.join(dir, 'missing.json'));
    expect(err.message).toContain('c2c-agent pair');
  });

  test('a file without access_token is "not paired" too', () => {
    const err = thrown(() => loadCredentials(settings({ tokenFile: file('c3.json', '{"token_type":"bearer"}') })));
    expect(err.exitCode).toBe(77);
  });

  test('broken JSON: config error naming the file, never its content', () => {
    const tokenFile = file('c4.json', '{"access_token": "leaky-secret-value-4", ');
    const err = thrown(() => loadCredentials(settings({ tokenFile })));
    expect(err.exitCode).toBe(78);
    expect(err.message).toContain(tokenFile);
    expect(err.message).not.toContain('leaky');
  });

  test('a wrong-typed field is a config error and the tokens are still registered', () => {
    const tokenFile = file('c5.json', JSON.stringify({ access_token: 'typed-secret-555555', refresh_token: 5 }));
    const err = thrown(() => loadCredentials(settings({ tokenFile })));
    expect(err.exitCode).toBe(78);
    expect(err.message).toContain("'refresh_token'");
    expect(scrub('typed-secret-555555')).toBe('[redacted]');
  });

  test('group-readable file: a warning, not a failure', () => {
    const tokenFile = file('c6.json', JSON.stringify({ access_token: 'mode-token-666666' }), 0o644);
    const warnings: string[] = [];
    expect(loadCredentials(settings({ tokenFile }), (m) => warnings.push(m)).accessToken).toBe('mode-token-666666');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('0644');
    expect(warnings[0]).not.toContain('mode-token');
  });

  test('the client secret file is registered when readable', () => {
    const clientSecretFile = file('secret', 'client-secret-777777\n');
    loadCredentials(settings({ token: 'env-token-abcdef', clientSecretFile }));
    expect(scrub('s=client-secret-777777')).toBe('s=[redacted]');
  });
});
