// Secrets at rest, black box (docs/packaging.md, "Secrets at rest"): the
// built bundle with CREDENTIALS_DIRECTORY set to a temp dir holding what
// systemd's LoadCredentialEncrypted= would hand it (client-secret,
// token-key), against the fake cloud. Paired and refreshed several times,
// no token the fake issued is in clear in any version of any file under the
// state dir, temp files included; a changed key or an altered file is exit
// 77 with one line; a short key is 78; a file in clear is replaced at once;
// without a token-key everything is as before.
import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { isEnvelope, open, seal } from '../../agent/auth/credentials-envelope.js';
import { startAgent, status, waitFor, type AgentDirs } from './agent-process.js';
import { useCrashSuite } from './crash-suite.js';
import { FAKE_SECRET, runCommand, startCommand, type CommandResult } from './pair-process.js';
import { TOKEN_PATH, credentialsFile, reachState, writeCredentials } from './refresh-harness.js';

/** A 5 s poll is 100 real ms, a 120 s token is refreshed every 1.2 to 1.8 real s. */
const SCALE = 50;
const LIFETIME_S = 120;
const REFRESHES = 4;

const suite = useCrashSuite();

/** What systemd puts in $CREDENTIALS_DIRECTORY: one file per credential, 0400. */
function credentialsDir(d: AgentDirs, creds: Record<string, string | Buffer>): string {
  const dir = join(d.root, 'credentials');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const [name, content] of Object.entries(creds)) {
    const file = join(dir, name);
    rmSync(file, { force: true });
    writeFileSync(file, content);
    chmodSync(file, 0o400);
  }
  return dir;
}

const flags = (apiUrl: string, d: AgentDirs): string[] => ['--api-url', apiUrl, '--state-dir', d.stateDir, '--runtime-dir', d.runtimeDir, '--time-scale', String(SCALE)];

/** Every version of every file under `dir` (dot files and temps too), polled until stopped. */
function watchFiles(dir: string): { versions: Map<string, Buffer>; stop(): void; collect(): void } {
  const versions = new Map<string, Buffer>();
  const seen = new Set<string>();
  const collect = (): void => {
    let entries;
    try {
      entries = readdirSync(dir, { recursive: true, withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (!e.isFile()) continue;
      const p = join(e.parentPath, e.name);
      try {
        const content = readFileSync(p);
        const key = `${relative(dir, p)}:${content.toString('base64')}`;
        if (!seen.has(key)) {
          seen.add(key);
          versions.set(`${relative(dir, p)} #${versions.size}`, content);
        }
      } catch {
        // renamed or removed between the listing and the read
      }
    }
  };
  const timer = setInterval(collect, 2);
  return { versions, collect, stop: () => clearInterval(timer) };
}

/** The contract's one stderr line. */
function oneLine(r: CommandResult): string {
  const lines = r.stderr.split('\n');
  expect(lines).toHaveLength(2);
  expect(lines[1]).toBe('');
  expect(lines[0]).toMatch(/^c2c-agent: \S/);
  return lines[0]!;
}

describe('with client-secret and token-key credentials', () => {
  it('pairs with them, refreshes several times, and leaves no token in clear in any file under the state dir', async () => {
    const c = await suite.cloud({ timeScale: SCALE, tokenLifetimeSeconds: LIFETIME_S, devices: 0 });
    const d = suite.dirs();
    const key = randomBytes(32);
    const env = { CREDENTIALS_DIRECTORY: credentialsDir(d, { 'client-secret': `${c.clientSecret}\n`, 'token-key': key }) };
    const files = watchFiles(d.stateDir);
    const texts: string[] = [];
    try {
      // Paired by the command alone (no daemon, no --client-secret-file): the secret comes from the credential.
      const p = startCommand(['pair', '--json', ...flags(c.url, d)], d, env);
      const code = await p.waitForEvent('the code', (e) => e.event === 'code');
      await p.waitForEvent('a waiting event', (e) => e.event === 'waiting');
      expect(c.control.approve(code.user_code as string)).toBe(true);
      expect(await p.exited).toEqual({ code: 0, signal: null });
      expect(p.events().at(-1)).toMatchObject({ event: 'paired', ok: true });
      texts.push(p.stdout(), p.stderr());

      const agent = startAgent({ apiUrl: c.url, dirs: d, timeScale: SCALE, env: { ...env, C2C_LOG_LEVEL: 'trace' } });
      let all = '';
      agent.child.stdout?.on('data', (b: Buffer) => (all += b.toString()));
      agent.child.stderr?.on('data', (b: Buffer) => (all += b.toString()));
      await reachState({ cloud: c, dirs: d, timeScale: SCALE, agent, state: 'online', timeoutMs: 15_000 });
      const okTokens = (): number => c.journal.filter((e) => e.method === 'POST' && e.path === TOKEN_PATH && e.status === 200).length;
      await waitFor(`${REFRESHES} refreshes`, () => okTokens() >= 1 + REFRESHES, 30_000);
      await reachState({ cloud: c, dirs: d, timeScale: SCALE, agent, state: 'online', timeoutMs: 15_000 });

      // The commands read the encrypted file with the unit's credentials...
      const check = await runCommand(['check', '--json', ...flags(c.url, d)], d, env);
      expect({ code: check.code, stderr: check.stderr }).toEqual({ code: 0, stderr: '' });
      // ...and say what to do without them (a shell: no CREDENTIALS_DIRECTORY, no running unit).
      const shell = await runCommand(['check', ...flags(c.url, d)], d);
      expect(shell.code).toBe(77);
      expect(oneLine(shell)).toContain(`credentials file ${credentialsFile(d)} is encrypted and this process has no token-key (CREDENTIALS_DIRECTORY is unset and c2c-agent.service is not running)`);
      texts.push(check.stdout, check.stderr, shell.stdout, shell.stderr);

      agent.child.kill('SIGTERM');
      expect(await agent.exited).toEqual({ code: 0, signal: null });
      texts.push(all);
    } finally {
      files.stop();
    }
    files.collect();

    // Every token the fake issued that reached flash, from every version of the file, decrypted with the key.
    const issued = new Set<string>();
    for (const [name, content] of files.versions) {
      if (!name.startsWith('credentials.json ') && !/^\.credentials\.json\.[0-9a-f]{12}\.tmp /.test(name)) continue;
      let env: unknown;
      try {
        env = JSON.parse(content.toString('utf8'));
      } catch {
        continue; // a temp caught half written
      }
      expect({ name, envelope: isEnvelope(env) }).toEqual({ name, envelope: true });
      const plain = JSON.parse(open(env as Record<string, unknown>, key)) as { access_token: string; refresh_token: string };
      issued.add(plain.access_token);
      issued.add(plain.refresh_token);
    }
    // The temps were looked at too (each write's temp lives through its fsync, several 2 ms polls).
    expect([...files.versions.keys()].filter((n) => /^\.credentials\.json\.[0-9a-f]{12}\.tmp /.test(n)).length).toBeGreaterThan(0);
    expect(issued.size).toBeGreaterThanOrEqual(2 * (1 + REFRESHES));
    for (const t of issued) expect(c.tokenState(t)).not.toBe('unknown');
    for (const [name, content] of files.versions) {
      const text = content.toString('latin1');
      expect({ name, prefixed: FAKE_SECRET.exec(text)?.[0]?.slice(0, 4) }).toEqual({ name, prefixed: undefined });
      for (const t of issued) expect({ name, found: text.includes(t) }).toEqual({ name, found: false });
    }
    // Nor in anything the commands or the daemon printed (trace level).
    for (const text of texts) for (const t of [...issued, c.clientSecret, key.toString('hex'), key.toString('base64')]) expect(text.includes(t)).toBe(false);
  }, 90_000);

  it('a changed key or an altered file: exit 77 with one line (check, the daemon in needs-pairing); a short key: 78', async () => {
    const c = await suite.cloud({ timeScale: SCALE, devices: 1 });
    const device = c.devices[0]!;
    const d = suite.dirs();
    const key = randomBytes(32);
    const creds = (k: Buffer): Record<string, string> => ({ CREDENTIALS_DIRECTORY: credentialsDir(d, { 'client-secret': c.clientSecret, 'token-key': k }) });
    // An encrypted file as the agent writes it.
    writeCredentials(d, device, 28_800);
    const file = credentialsFile(d);
    writeFileSync(file, seal(readFileSync(file, 'utf8'), key), { mode: 0o600 });
    const check = (env: Record<string, string>, json = false): Promise<CommandResult> => runCommand(['check', ...(json ? ['--json'] : []), ...flags(c.url, d)], d, { ...env, C2C_CLIENT_ID: device.clientId });
    expect((await check(creds(key))).code).toBe(0);

    const other = randomBytes(32);
    const changed = await check(creds(other));
    expect(changed.code).toBe(77);
    expect(oneLine(changed)).toBe(
      `c2c-agent: credentials file ${file} does not decrypt with the token-key ${join(d.root, 'credentials', 'token-key')} (from environment CREDENTIALS_DIRECTORY): the key changed or the file was altered; pair again; run \`c2c-agent pair\``,
    );
    const asJson = await check(creds(other), true);
    expect(asJson.code).toBe(77);
    expect(asJson.events).toEqual([expect.objectContaining({ ok: false, exitCode: 77, error: expect.objectContaining({ kind: 'unauthorized', message: expect.stringContaining('does not decrypt') }) })]);

    // The daemon with the other key: needs pairing, saying why; it does not crash or exit.
    const agent = startAgent({ apiUrl: c.url, dirs: d, timeScale: SCALE, env: { ...creds(other), C2C_CLIENT_ID: device.clientId } });
    const st = await reachState({ cloud: c, dirs: d, timeScale: SCALE, agent, state: 'needs-pairing', timeoutMs: 15_000 });
    expect(st.exitCode).toBe(77);
    expect(JSON.stringify(st.json)).toContain('does not decrypt');
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toEqual({ code: 0, signal: null });

    // The right key, one byte of the sealed tokens changed.
    const env = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
    const bytes = Buffer.from(env.ciphertext!, 'base64');
    bytes[5] = bytes[5]! ^ 0x01;
    writeFileSync(file, JSON.stringify({ ...env, ciphertext: bytes.toString('base64') }), { mode: 0o600 });
    const altered = await check(creds(key));
    expect(altered.code).toBe(77);
    expect(oneLine(altered)).toContain('does not decrypt');

    // A key too short to be one: 78 from check, run and pair, one line each, before anything is asked of the service.
    const since = c.journal.length;
    const short = randomBytes(16);
    for (const args of [['check'], ['run'], ['pair']]) {
      const r = await runCommand([...args, ...flags(c.url, d)], d, creds(short));
      expect({ args, code: r.code }).toEqual({ args, code: 78 });
      expect(oneLine(r)).toContain('holds 16 bytes; it must hold at least 32 random bytes');
    }
    expect(c.journal.slice(since).filter((e) => e.path !== '/health')).toEqual([]);
    for (const r of [changed, asJson, altered]) expect(`${r.stdout}${r.stderr}`).not.toMatch(FAKE_SECRET);
  }, 60_000);

  it('a file in clear (an upgrade, or `pair` run without the key): read, and replaced at once by a new pair stored encrypted; the pair in clear is spent', async () => {
    const c = await suite.cloud({ timeScale: SCALE, devices: 1 });
    const device = c.devices[0]!;
    const d = suite.dirs();
    writeCredentials(d, device, 28_800);
    const env = { CREDENTIALS_DIRECTORY: credentialsDir(d, { 'client-secret': c.clientSecret, 'token-key': randomBytes(32) }), C2C_CLIENT_ID: device.clientId };
    const agent = startAgent({ apiUrl: c.url, dirs: d, timeScale: SCALE, env });
    await waitFor('the file sealed', () => {
      try {
        return isEnvelope(JSON.parse(readFileSync(credentialsFile(d), 'utf8')));
      } catch {
        return false;
      }
    }, 15_000);
    expect(c.tokenState(device.refreshToken)).toBe('used');
    await reachState({ cloud: c, dirs: d, timeScale: SCALE, agent, state: 'online', timeoutMs: 15_000 });
    expect(readFileSync(credentialsFile(d), 'utf8')).not.toMatch(FAKE_SECRET);
    expect(agent.output()).not.toContain('needs pairing');
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toEqual({ code: 0, signal: null });
  }, 60_000);
});

describe('with a client-secret credential and no token-key', () => {
  it('pairs with the credential and stores the tokens as before (0600 JSON), which check reads', async () => {
    const c = await suite.cloud({ timeScale: SCALE, devices: 0 });
    const d = suite.dirs();
    const env = { CREDENTIALS_DIRECTORY: credentialsDir(d, { 'client-secret': c.clientSecret }) };
    const p = startCommand(['pair', '--json', ...flags(c.url, d)], d, env);
    const code = await p.waitForEvent('the code', (e) => e.event === 'code');
    await p.waitForEvent('a waiting event', (e) => e.event === 'waiting');
    expect(c.control.approve(code.user_code as string)).toBe(true);
    expect(await p.exited).toEqual({ code: 0, signal: null });
    expect(JSON.parse(readFileSync(credentialsFile(d), 'utf8'))).toMatchObject({ access_token: expect.stringMatching(/^fca_/), refresh_token: expect.stringMatching(/^fcr_/) });
    const check = await runCommand(['check', ...flags(c.url, d)], d);
    expect({ code: check.code, stderr: check.stderr }).toEqual({ code: 0, stderr: '' });
    expect((await status(d, c.url, SCALE)).exitCode).toBe(69);
  }, 60_000);
});
