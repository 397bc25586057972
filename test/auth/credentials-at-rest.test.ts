// Secrets at rest (docs/packaging.md): the unit's credentials directory
// (systemd's $CREDENTIALS_DIRECTORY) holding `client-secret` and `token-key`.
// With a token-key the credentials file is sealed (no token in clear in any
// file), a file that does not decrypt is exit 77 with one line, a short key
// is 78, a file in clear is read and replaced by an encrypted one at once;
// without one, everything is as before.
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { readClientSecret } from '../../agent/auth/client-secret.js';
import { loadCredentials, readStoredCredentials } from '../../agent/auth/credentials.js';
import { fileFromGrant, saveCredentials } from '../../agent/auth/credentials-store.js';
import { credentialsDirectory, tokenKeyOf } from '../../agent/auth/credentials-systemd.js';
import { unpairHere } from '../../agent/auth/revocation.js';
import type { Settings } from '../../agent/config/types.js';
import { AgentError } from '../../agent/lib/errors.js';
import { scrub } from '../../agent/lib/secrets.js';
import { FakeClock } from '../support/fake-clock.js';
import { CLIENT, grantOf, settingsIn, tempDir, thrown, writeCredentials } from '../support/auth-fixtures.js';
import { FILE_WALL, LIFETIME_S, makeSource } from '../support/token-source-harness.js';

let tmp: ReturnType<typeof tempDir>;
let creds: string;
beforeEach(() => {
  tmp = tempDir('c2c-rest-');
  creds = path.join(tmp.dir, 'credentials-directory');
  mkdirSync(creds, { mode: 0o700 });
});
afterEach(() => tmp.cleanup());

/** A credential as systemd leaves it: 0400, owned by the unit's user (0440 where it granted the user through an ACL, whose mask shows as the group bits). */
function credential(name: string, content: string | Buffer, mode = 0o400): void {
  const file = path.join(creds, name);
  rmSync(file, { force: true });
  writeFileSync(file, content);
  chmodSync(file, mode);
}

function withKey(bytes = randomBytes(32)): Buffer {
  credential('token-key', bytes);
  return bytes;
}

function settings(extra: Partial<Settings> = {}): Settings {
  const state = path.join(tmp.dir, 'state');
  mkdirSync(state, { recursive: true, mode: 0o700 });
  return settingsIn(state, { credentialsDir: creds, sources: { credentialsDir: 'environment CREDENTIALS_DIRECTORY', tokenFile: '<state-dir>/credentials.json' }, ...extra });
}

const ACCESS = 'fca_rest-access-000001';
const REFRESH = 'fcr_rest-refresh-000001';
const saved = (s: Settings): Promise<void> => saveCredentials(s.tokenFile, fileFromGrant(grantOf(ACCESS, REFRESH), new FakeClock()), tokenKeyOf(s));

/** Every file under `dir` (dot files too), path and content. */
function everyFile(dir: string): Array<[string, Buffer]> {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => {
      const p = path.join(e.parentPath, e.name);
      return [p, readFileSync(p)] as [string, Buffer];
    });
}

/** The one-line refusal: the kind's exit code, the file named, "pair" advised, nothing secret. */
function expectRefusal(e: AgentError, exitCode: number, ...secrets: string[]): void {
  expect(e.exitCode).toBe(exitCode);
  expect(e.message).not.toMatch(/\n/);
  for (const s of secrets) expect(e.message).not.toContain(s);
}

describe('with a token-key', () => {
  test('saved sealed (0600, no token in clear), and loaded back as the same credentials', async () => {
    withKey();
    const s = settings();
    await saved(s);
    const text = readFileSync(s.tokenFile, 'utf8');
    expect(JSON.parse(text)).toMatchObject({ format: 'c2c-agent-credentials-encrypted', version: 1 });
    for (const [, content] of everyFile(s.stateDir)) {
      expect(content.includes(ACCESS)).toBe(false);
      expect(content.includes(REFRESH)).toBe(false);
    }
    expect(statSync(s.tokenFile).mode & 0o777).toBe(0o600);
    const c = loadCredentials(s);
    expect(c).toMatchObject({ accessToken: ACCESS, refreshToken: REFRESH, tokenType: 'bearer', source: s.tokenFile });
    expect(c.inClear).toBeUndefined();
    expect(scrub(`${ACCESS} ${REFRESH}`)).toBe('[redacted] [redacted]');
  });

  test('any one byte of the file changed: exit 77 with one line naming the file and pairing again, never 78 or an internal error', async () => {
    withKey();
    const s = settings();
    await saved(s);
    const good = readFileSync(s.tokenFile);
    const kinds = new Set<string>();
    for (let i = 0; i < good.length; i++) {
      const bad = Buffer.from(good);
      bad[i] = bad[i]! ^ 0x01;
      writeFileSync(s.tokenFile, bad);
      const e = thrown(() => loadCredentials(s));
      expectRefusal(e, 77, ACCESS, REFRESH);
      expect(e.message).toContain(s.tokenFile);
      expect(e.message).toContain('c2c-agent pair');
      kinds.add(e.message.includes('does not decrypt') ? 'does not decrypt' : e.message.includes('format') ? 'format' : 'not paired');
    }
    expect(kinds.has('does not decrypt')).toBe(true);
  });

  test('the key changed: exit 77, "does not decrypt", naming the key file', async () => {
    withKey();
    const s = settings();
    await saved(s);
    withKey(randomBytes(32));
    const e = thrown(() => loadCredentials(s));
    expectRefusal(e, 77, ACCESS, REFRESH);
    expect(e.message).toBe(
      `credentials file ${s.tokenFile} does not decrypt with the token-key ${path.join(creds, 'token-key')} (from environment CREDENTIALS_DIRECTORY): the key changed or the file was altered; pair again; run \`c2c-agent pair\``,
    );
  });

  test('a file of a newer format: exit 77, pair again', async () => {
    withKey();
    const s = settings();
    await saved(s);
    const env = JSON.parse(readFileSync(s.tokenFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(s.tokenFile, JSON.stringify({ ...env, version: 2 }));
    expectRefusal(thrown(() => loadCredentials(s)), 77);
  });

  test('a token-key shorter than 32 bytes: exit 78, one line with the fix, the key never in it', async () => {
    const s = settings();
    writeCredentials(s.tokenFile, { access: ACCESS, refresh: REFRESH, lifetimeS: 3600, wallNow: Date.now() });
    const short = 'short-key-only-31-bytes-long-xx';
    expect(short).toHaveLength(31);
    credential('token-key', short);
    for (const e of [thrown(() => tokenKeyOf(s)), thrown(() => loadCredentials(s))]) {
      expectRefusal(e, 78, short);
      expect(e.message).toContain('holds 31 bytes; it must hold at least 32 random bytes');
      expect(e.message).toContain('systemd-creds encrypt --name=token-key');
    }
    credential('token-key', `${short}y`);
    expect(tokenKeyOf(s)?.bytes).toHaveLength(32);
  });

  test('a file in clear (written before the unit had a key) is read, and marked to be replaced', () => {
    withKey();
    const s = settings();
    writeCredentials(s.tokenFile, { access: ACCESS, refresh: REFRESH, lifetimeS: 3600, wallNow: Date.now() });
    expect(loadCredentials(s)).toMatchObject({ accessToken: ACCESS, inClear: true });
  });

  test('broken JSON with a key: it no longer decrypts, 77 (without a key it stays a configuration error, 78)', () => {
    const s = settings();
    writeFileSync(s.tokenFile, '{"format": "c2c-agent-credentials-encrypted", "sal', { mode: 0o600 });
    expect(thrown(() => loadCredentials(s)).exitCode).toBe(78);
    withKey();
    expectRefusal(thrown(() => loadCredentials(s)), 77);
  });
});

describe('an encrypted file and no token-key in this process', () => {
  test('the credentials directory has none: exit 77, one line saying which file is missing and to pair again', async () => {
    withKey();
    const s = settings();
    await saved(s);
    rmSync(path.join(creds, 'token-key'));
    const e = thrown(() => loadCredentials(s));
    expectRefusal(e, 77, ACCESS, REFRESH);
    expect(e.message).toBe(
      `credentials file ${s.tokenFile} is encrypted and this process has no token-key (${path.join(creds, 'token-key')} (from environment CREDENTIALS_DIRECTORY) does not exist): give the unit its token-key back (docs/packaging.md, "Secrets at rest"), or pair again; run \`c2c-agent pair\``,
    );
  });

  test('no CREDENTIALS_DIRECTORY and no running unit (a shell): exit 77 saying so and where the docs are', async () => {
    withKey();
    const s = settings();
    await saved(s);
    const { credentialsDir: _none, ...shell } = s;
    const e = thrown(() => loadCredentials(shell));
    expectRefusal(e, 77);
    expect(e.message).toBe(
      `credentials file ${s.tokenFile} is encrypted and this process has no token-key (CREDENTIALS_DIRECTORY is unset and c2c-agent.service is not running): run the command with the unit's credentials (docs/packaging.md, "Secrets at rest"), or pair again; run \`c2c-agent pair\``,
    );
  });

  test('unpair from there refuses to forget a token it cannot revoke (77, file kept); --local forgets it', async () => {
    withKey();
    const s = settings({ apiUrl: 'http://127.0.0.1:1' });
    await saved(s);
    rmSync(path.join(creds, 'token-key'));
    let removed = 0;
    const o = { clientId: async () => CLIENT.clientId, localAdvice: 'or --local', revoke: async () => undefined, remove: async () => (removed++, true) };
    await expect(unpairHere(s, { ...o, local: false })).rejects.toMatchObject({ kind: 'unauthorized' });
    expect(removed).toBe(0);
    const r = await unpairHere(s, { ...o, local: true });
    expect(r).toMatchObject({ revoked: false, removed: true, warnings: [`credentials file ${s.tokenFile} is encrypted and this process has no token-key: nothing to revoke here`] });
    expect(removed).toBe(1);
  });
});

describe('without a token-key: as before', () => {
  test('written in clear, read back, nothing marked', async () => {
    const s = settings();
    await saved(s);
    expect(JSON.parse(readFileSync(s.tokenFile, 'utf8'))).toMatchObject({ access_token: ACCESS, refresh_token: REFRESH });
    const c = loadCredentials(s);
    expect(c.accessToken).toBe(ACCESS);
    expect(c.inClear).toBeUndefined();
    expect(readStoredCredentials(settingsIn(s.stateDir, { tokenFile: path.join(s.stateDir, 'none.json') }))).toEqual({ state: 'absent' });
  });
});

describe('the client secret', () => {
  test('from the client-secret credential when clientSecretFile is not set (trimmed, registered)', () => {
    credential('client-secret', 'fcs_from-credential-0001\n');
    expect(readClientSecret(settings())).toBe('fcs_from-credential-0001');
    expect(scrub('x fcs_from-credential-0001 y')).toBe('x [redacted] y');
  });

  test("0440, as systemd's ACL leaves a credential, is not refused (a client secret file with group bits is)", () => {
    credential('client-secret', 'fcs_acl-credential-0003', 0o440);
    credential('token-key', randomBytes(32), 0o440);
    expect(readClientSecret(settings())).toBe('fcs_acl-credential-0003');
    expect(tokenKeyOf(settings())?.bytes).toHaveLength(32);
  });

  test('clientSecretFile wins when given', () => {
    credential('client-secret', 'fcs_from-credential-0002');
    const file = path.join(tmp.dir, 'secret');
    writeFileSync(file, 'fcs_from-file-0002', { mode: 0o600 });
    chmodSync(file, 0o600);
    expect(readClientSecret(settings({ clientSecretFile: file }))).toBe('fcs_from-file-0002');
  });

  test('an empty credential: 78 naming it; neither: 78 naming both ways', () => {
    credential('client-secret', '\n');
    const e = thrown(() => readClientSecret(settings()));
    expect(e.exitCode).toBe(78);
    expect(e.message).toContain(path.join(creds, 'client-secret'));
    const none = thrown(() => readClientSecret(settingsIn(tmp.dir, { credentialsDir: path.join(tmp.dir, 'no-such-dir') })));
    expect(none.exitCode).toBe(78);
    expect(none.message).toContain('--client-secret-file');
    expect(none.message).toContain('client-secret credential');
  });
});

describe('where the credentials are', () => {
  test('CREDENTIALS_DIRECTORY when set; else the running unit\'s directory when this user may read it; else none', () => {
    const unitDir = path.join(tmp.dir, 'run-credentials-c2c-agent.service');
    expect(credentialsDirectory({ credentialsDir: creds, sources: {} }, unitDir)).toEqual({ dir: creds, source: 'environment CREDENTIALS_DIRECTORY' });
    expect(credentialsDirectory({ sources: {} }, unitDir)).toBeUndefined();
    mkdirSync(unitDir, { mode: 0o500 });
    expect(credentialsDirectory({ sources: {} }, unitDir)).toEqual({ dir: unitDir, source: 'the running c2c-agent.service' });
  });
});

describe('the daemon\'s token source', () => {
  test('several refreshes with a token-key: every pair is stored sealed, never a token in clear in the state dir', async () => {
    withKey();
    const h = makeSource({ dir: path.join(tmp.dir), settings: { credentialsDir: creds }, noFile: true });
    await saveCredentials(h.settings.tokenFile, fileFromGrant(grantOf('fca_first-access-0001', 'fcr_first-refresh-0001', LIFETIME_S), new FakeClock(0, FILE_WALL)), tokenKeyOf(h.settings));
    h.source.reload();
    h.source.start();
    const seen = ['fca_first-access-0001', 'fcr_first-refresh-0001'];
    for (let i = 2; i <= 5; i++) {
      await h.clock.advance(h.armedIn()!);
      const pair = [`fca_next-access-000${i}`, `fcr_next-refresh-000${i}`];
      seen.push(...pair);
      h.oauth.pending.at(-1)!.resolve(grantOf(pair[0]!, pair[1]!, LIFETIME_S));
      await expect(h.source.refresh('join')).resolves.toBe('refreshed');
      expect(h.source.current()).toBe(pair[0]);
      for (const [file, content] of everyFile(tmp.dir)) {
        if (file.startsWith(creds)) continue;
        for (const t of seen) expect({ file, t, found: content.includes(t) }).toEqual({ file, t, found: false });
      }
      expect(loadCredentials(h.settings)).toMatchObject({ accessToken: pair[0], refreshToken: pair[1] });
    }
    expect(h.oauth.calls.map((c) => c.arg)).toEqual(['fcr_first-refresh-0001', 'fcr_next-refresh-0002', 'fcr_next-refresh-0003', 'fcr_next-refresh-0004']);
    await h.source.stop();
  });

  test('a file in clear and a token-key: refreshed at once, the new pair stored sealed, the old one spent', async () => {
    withKey();
    const h = makeSource({ dir: tmp.dir, settings: { credentialsDir: creds } });
    h.source.reload();
    h.source.start();
    expect(h.armedIn()).toBe(0);
    expect(h.lines.some((l) => l.msg.includes('are in clear and the unit has a token-key: refreshing now'))).toBe(true);
    await h.clock.advance(0);
    expect(h.oauth.calls).toEqual([{ op: 'refresh', arg: 'refresh-old-000001' }]);
    h.oauth.pending[0]!.resolve(grantOf('fca_sealed-access-0002', 'fcr_sealed-refresh-0002', LIFETIME_S));
    await expect(h.source.refresh('join')).resolves.toBe('refreshed');
    const text = readFileSync(h.settings.tokenFile, 'utf8');
    expect(JSON.parse(text)).toMatchObject({ format: 'c2c-agent-credentials-encrypted' });
    expect(text).not.toContain('fca_sealed');
    // Back to the usual schedule: 50..75 % of the lifetime.
    expect(h.armedIn()).toBeGreaterThanOrEqual(0.5 * LIFETIME_S * 1000);
    expect(loadCredentials(h.settings).inClear).toBeUndefined();
    await h.source.stop();
  });

  test('a file in clear without a token-key: the usual schedule, as before', () => {
    const h = makeSource({ dir: tmp.dir, settings: { credentialsDir: creds } });
    h.source.reload();
    h.source.start();
    expect(h.armedIn()).toBeGreaterThanOrEqual(0.5 * LIFETIME_S * 1000);
  });
});
