import { describe, expect, it, beforeAll, afterAll } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DAEMON_V8_FLAGS } from '../../agent/daemon/v8-flags.js';

const UNIT = resolve('systemd/c2c-agent.service');
const ANALYZE = '/usr/bin/systemd-analyze';
const MAX_EXPOSURE = 3.0;

let dir: string;
let unitCopy: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'c2c-unit-'));
  unitCopy = join(dir, 'c2c-agent.service');
  // verify insists the ExecStart binary exists; on a machine whose node is
  // not /usr/bin/node, point the copy at this node instead.
  let text = readFileSync(UNIT, 'utf8');
  if (!existsSync('/usr/bin/node')) text = text.replace('/usr/bin/node', process.execPath);
  writeFileSync(unitCopy, text);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function analyze(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(ANALYZE, args, { encoding: 'utf8', timeout: 20_000, env: { ...process.env, SYSTEMD_PAGER: '', SYSTEMD_COLORS: '0' } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function directives(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (m?.[1] !== undefined) out.set(m[1], [...(out.get(m[1]) ?? []), m[2] ?? '']);
  }
  return out;
}

describe('systemd/c2c-agent.service', () => {
  it('passes systemd-analyze verify with no warning at all', () => {
    // verify exits 0 on unknown keys and unparsable values and only warns on
    // stderr, so any stderr output fails the test.
    const r = analyze('verify', unitCopy);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('the verify check itself catches a typo (so the test above means something)', () => {
    const bad = join(dir, 'bad.service');
    writeFileSync(bad, readFileSync(unitCopy, 'utf8').replace('TasksMax=', 'TaksMax='));
    expect(analyze('verify', bad).stderr).toMatch(/Unknown key 'TaksMax'/);
  });

  it(`has an offline security exposure of at most ${MAX_EXPOSURE}`, () => {
    const r = analyze('security', '--offline=true', unitCopy);
    const m = /Overall exposure level for c2c-agent\.service: (\d+(?:\.\d+)?)/.exec(r.stdout);
    expect(m).not.toBeNull();
    const exposure = Number(m?.[1]);
    expect(exposure).toBeGreaterThan(0);
    expect(exposure).toBeLessThanOrEqual(MAX_EXPOSURE);
  });

  it('keeps the promises the daemon and the issue rely on', () => {
    const d = directives(readFileSync(UNIT, 'utf8'));
    const one = (k: string): string | undefined => d.get(k)?.at(-1);
    expect(one('Type')).toBe('notify');
    expect(one('NotifyAccess')).toBe('all');
    // The daemon's V8 flags on node's command line (agent/daemon/v8-flags.ts), its code cache in CacheDirectory= (boot.ts).
    expect(one('ExecStart')).toBe(`/usr/bin/node ${DAEMON_V8_FLAGS.join(' ')} /opt/c2c-agent/dist/c2c-agentd.cjs run`);
    expect(one('CacheDirectory')).toBe('c2c-agent');
    expect(one('CacheDirectoryMode')).toBe('0700');
    expect(one('ExecReload')).toBe('/bin/kill -HUP $MAINPID');
    expect(one('RestartPreventExitStatus')).toBe('78');
    expect(one('StateDirectory')).toBe('c2c-agent');
    expect(one('StateDirectoryMode')).toBe('0700');
    expect(one('RuntimeDirectory')).toBe('c2c-agent');
    // The group may reach the local API's socket (docs/local-api.md, "Who may connect").
    expect(one('RuntimeDirectoryMode')).toBe('0750');
    expect(one('RuntimeDirectoryPreserve')).toBe('yes');
    expect(one('ProtectSystem')).toBe('strict');
    expect(one('NoNewPrivileges')).toBe('yes');
    expect(one('PrivateTmp')).toBe('yes');
    expect(one('User')).toBe('c2c-agent');
    expect(one('RestrictAddressFamilies')?.split(/\s+/).sort()).toEqual(['AF_INET', 'AF_INET6', 'AF_NETLINK', 'AF_UNIX']);
    expect(Number.parseInt(one('WatchdogSec') ?? '', 10)).toBeGreaterThan(0);
    // V8's JIT needs writable+executable pages: this would kill node at start.
    expect(d.has('MemoryDenyWriteExecute')).toBe(false);
  });

  it('hands the agent its encrypted token-key and client secret, by bare names, so a missing one never stops the unit (docs/packaging.md, "Secrets at rest")', () => {
    const d = directives(readFileSync(UNIT, 'utf8'));
    const creds = d.get('LoadCredentialEncrypted') ?? [];
    expect(creds.sort()).toEqual(['client-secret:c2c-agent.client-secret', 'token-key:c2c-agent.token-key']);
    // An absolute path that does not exist fails the unit at start; a bare name is looked up in the credential stores and skipped when absent.
    for (const c of creds) expect(c.split(':')[1]).toMatch(/^[^/]+$/);
    // The names the agent reads (auth/credentials-systemd.ts) and the files the installer makes (packaging/lifecycle.sh).
    const lifecycle = readFileSync('packaging/lifecycle.sh', 'utf8');
    expect(lifecycle).toContain('C2C_TOKEN_KEY_CRED=$C2C_CREDSTORE/c2c-agent.token-key');
    expect(lifecycle).toContain('C2C_SECRET_CRED=$C2C_CREDSTORE/c2c-agent.client-secret');
    expect(lifecycle).toContain('C2C_CREDSTORE=/etc/credstore.encrypted');
  });

  it("does not defeat NODE_EXTRA_CA_CERTS, the way a private CA is given to Node (docs/tls.md)", () => {
    const d = directives(readFileSync(UNIT, 'utf8'));
    const all = (k: string): string[] => d.get(k) ?? [];
    // Neither unset nor set empty by the unit (a drop-in's Environment= adds it).
    expect(all('UnsetEnvironment').join(' ')).not.toMatch(/NODE_EXTRA_CA_CERTS/);
    expect(all('Environment').join(' ')).not.toMatch(/NODE_EXTRA_CA_CERTS/);
    // No Node option that makes it read another store instead of adding to the bundled one.
    expect(`${all('Environment').join(' ')} ${all('ExecStart').join(' ')}`).not.toMatch(/--use-openssl-ca|--use-system-ca|--openssl-config/);
    // /etc stays readable (the CA file goes beside config.json): ProtectSystem=strict is read-only, not hidden.
    expect(all('InaccessiblePaths').join(' ')).not.toMatch(/\/etc/);
  });

  // What --optimize-for-size is there for (agent/daemon/v8-flags.ts): V8's conservative growing
  // mode, where the old generation's limit is the live heap plus a 2 MiB step (and the young
  // generation), not 8, as a quiet daemon has it (docs/benchmarks.md, "The heap's growth step").
  // A forced collection is not a memory-reducing one, so its limit shows the mode itself; read
  // from V8's own trace of the limit it sets.
  it("runs node with V8's heap in its conservative growing mode", () => {
    const d = directives(readFileSync(UNIT, 'utf8'));
    const nodeArgs = (d.get('ExecStart')?.at(-1) ?? '').split(' ').filter((a) => a.startsWith('--'));
    const env = Object.fromEntries((d.get('Environment') ?? []).map((e) => /^"?([A-Z_]+)=(.*?)"?$/.exec(e)!.slice(1, 3)));
    const growthKiB = (args: string[]): number => {
      const script = "const live = []; for (let i = 0; i < 50000; i++) live.push({ i, s: 'x' + i }); gc(); gc();";
      const r = spawnSync(process.execPath, [...args, '--expose-gc', '--trace-gc-verbose', '-e', script], { encoding: 'utf8', env: { PATH: process.env.PATH, ...env }, timeout: 20_000 });
      const limits = [...r.stdout.matchAll(/\[HeapController\] Limit: old size: (\d+) KB, new limit: (\d+) KB/g)];
      expect(limits.length).toBeGreaterThan(0);
      const last = limits.at(-1)!;
      return Number(last[2]) - Number(last[1]);
    };
    expect(env.NODE_OPTIONS).toMatch(/--max-old-space-size/);
    // The live heap here is about 6 MiB, as the daemon's: small enough that the step, not the
    // growing factor, sets the limit (past about 10 MiB the factor would).
    expect(growthKiB(nodeArgs)).toBeLessThanOrEqual(4 * 1024);
    // The same without the flag: the default step, so the check above means something.
    expect(growthKiB(nodeArgs.filter((a) => a !== '--optimize-for-size'))).toBeGreaterThanOrEqual(8 * 1024);
  });
});

describe('scripts/install.sh', () => {
  it('installs into DESTDIR, twice, with the same result', () => {
    const dest = join(dir, 'root');
    const env = { ...process.env, DESTDIR: dest };
    // A stand-in bundle so the test does not depend on a build having run.
    const fakeDist = join(dir, 'dist');
    mkdirSync(fakeDist, { recursive: true });
    copyFileSync(resolve('package.json'), join(fakeDist, 'c2c-agent.mjs'));
    copyFileSync(resolve('package.json'), join(fakeDist, 'c2c-agentd.cjs'));
    copyFileSync(resolve('package.json'), join(fakeDist, 'c2c-agentd-main.cjs'));
    for (let i = 0; i < 2; i++) {
      const r = spawnSync('sh', ['scripts/install.sh'], { encoding: 'utf8', env: { ...env, C2C_DIST_DIR: fakeDist } });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
    }
    expect(readFileSync(join(dest, 'etc/systemd/system/c2c-agent.service'), 'utf8')).toBe(readFileSync(UNIT, 'utf8'));
    expect(readFileSync(join(dest, 'opt/c2c-agent/dist/c2c-agent.mjs'), 'utf8')).toBe(readFileSync(resolve('package.json'), 'utf8'));
    expect(existsSync(join(dest, 'etc/c2c-agent'))).toBe(true);
    expect(existsSync(join(dest, 'usr/lib/sysusers.d/c2c-agent.conf'))).toBe(true);
    expect(existsSync(join(dest, 'opt/c2c-agent/firmware-profiles/generic.json'))).toBe(true);
  });
});
