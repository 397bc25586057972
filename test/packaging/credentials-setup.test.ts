// packaging/lifecycle.sh's secrets at rest (docs/packaging.md): the
// token-key made once and never replaced, a client secret in clear encrypted
// once, nothing fatal where systemd-creds is missing or fails, and purge
// removing the unit's credentials. Run against a stand-in systemd-creds
// (the real one under systemd: `npm run test:systemd`).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

let dir: string;
let bin: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'c2c-creds-setup-'));
  bin = join(dir, 'bin');
  mkdirSync(bin);
  // `systemd-creds encrypt --name=NAME INPUT|- OUTPUT`: "enc NAME <bytes as hex>", or exit 1 when told to fail.
  writeFileSync(
    join(bin, 'systemd-creds'),
    `#!/bin/sh
[ -n "\${FAKE_CREDS_FAIL:-}" ] && { echo "systemd-creds: no host key" >&2; exit 1; }
[ "$1" = encrypt ] || exit 2
name=\${2#--name=}
if [ "$3" = - ]; then in=$(od -An -tx1 -v | tr -d ' \\n'); else in=$(od -An -tx1 -v "$3" | tr -d ' \\n'); fi
printf 'enc %s %s\\n' "$name" "$in" > "$4"
`,
  );
  chmodSync(join(bin, 'systemd-creds'), 0o755);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function root(name: string): string {
  const r = join(dir, name);
  mkdirSync(join(r, 'etc/c2c-agent'), { recursive: true });
  return r;
}

/** Sources lifecycle.sh with its paths moved under `r`, then runs `commands`. */
function lifecycle(r: string, commands: string, env: Record<string, string> = {}) {
  const script = `. ${resolve('packaging/lifecycle.sh')}
C2C_STATE_DIR='${r}/var/lib/c2c-agent'; C2C_RUNTIME_DIR='${r}/run/c2c-agent'; C2C_CONFIG_DIR='${r}/etc/c2c-agent'
C2C_CONFIG_FILE="$C2C_CONFIG_DIR/config.json"; C2C_CREDSTORE='${r}/etc/credstore.encrypted'
C2C_TOKEN_KEY_CRED="$C2C_CREDSTORE/c2c-agent.token-key"; C2C_SECRET_CRED="$C2C_CREDSTORE/c2c-agent.client-secret"
C2C_PLAIN_SECRET="$C2C_CONFIG_DIR/client-secret"
set -eu
${commands}`;
  return spawnSync('sh', ['-c', script], { encoding: 'utf8', env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}`, ...env } });
}

const tokenKey = (r: string): string => join(r, 'etc/credstore.encrypted/c2c-agent.token-key');
const secretCred = (r: string): string => join(r, 'etc/credstore.encrypted/c2c-agent.client-secret');

describe('c2c_setup_credentials', () => {
  it('makes the token-key from 32 random bytes, encrypted under its name, 0600 in a 0700 store; never replaces it', () => {
    const r = root('once');
    const first = lifecycle(r, 'c2c_setup_credentials');
    expect({ status: first.status, stderr: first.stderr }).toEqual({ status: 0, stderr: '' });
    const made = readFileSync(tokenKey(r), 'utf8');
    expect(made).toMatch(/^enc token-key [0-9a-f]{64}\n$/);
    expect(statSync(tokenKey(r)).mode & 0o777).toBe(0o600);
    expect(statSync(join(r, 'etc/credstore.encrypted')).mode & 0o777).toBe(0o700);
    expect(lifecycle(r, 'c2c_setup_credentials').status).toBe(0);
    expect(readFileSync(tokenKey(r), 'utf8')).toBe(made);
    expect(existsSync(secretCred(r))).toBe(false);
  });

  it('encrypts a client secret left in clear, once, and says what to do with the plain file', () => {
    const r = root('secret');
    writeFileSync(join(r, 'etc/c2c-agent/client-secret'), 'fcs_plain-secret');
    const out = lifecycle(r, 'c2c_setup_credentials');
    expect(out.status).toBe(0);
    expect(readFileSync(secretCred(r), 'utf8')).toBe(`enc client-secret ${Buffer.from('fcs_plain-secret').toString('hex')}\n`);
    expect(out.stdout).toContain('remove that key, then');
    expect(out.stdout).not.toContain('fcs_plain-secret');
    const again = lifecycle(r, 'c2c_setup_credentials');
    expect(again.stdout).toBe('');
  });

  it('where systemd-creds is missing or fails: one warning, the install goes on, nothing half made', () => {
    const r = root('failing');
    const failed = lifecycle(r, 'c2c_setup_credentials; echo went-on', { FAKE_CREDS_FAIL: '1' });
    expect(failed.status).toBe(0);
    expect(failed.stdout).toContain('went-on');
    expect(failed.stderr).toContain('could not encrypt the token-key credential with systemd-creds');
    expect(existsSync(tokenKey(r))).toBe(false);
    expect(existsSync(`${tokenKey(r)}.c2c-new`)).toBe(false);
    const missing = lifecycle(r, 'PATH=/nonexistent; c2c_setup_credentials; echo went-on');
    expect(missing.status).toBe(0);
    expect(missing.stderr).toContain('systemd-creds not found');
  });
});

describe('c2c_purge_data', () => {
  it("removes the unit's encrypted credentials, and the store only when that leaves it empty", () => {
    const r = root('purge');
    expect(lifecycle(r, 'c2c_setup_credentials').status).toBe(0);
    writeFileSync(join(r, 'etc/credstore.encrypted/other-service.key'), 'x');
    expect(lifecycle(r, 'c2c_purge_data').status).toBe(0);
    expect(existsSync(tokenKey(r))).toBe(false);
    expect(existsSync(join(r, 'etc/credstore.encrypted/other-service.key'))).toBe(true);
    rmSync(join(r, 'etc/credstore.encrypted/other-service.key'));
    expect(lifecycle(r, 'c2c_setup_credentials && c2c_purge_data').status).toBe(0);
    expect(existsSync(join(r, 'etc/credstore.encrypted'))).toBe(false);
  });
});
