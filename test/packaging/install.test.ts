// scripts/install.sh staged into DESTDIR (files only: no user, no systemctl),
// so it runs anywhere without root.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { listing, paths, standInDist } from './staging.js';

let dir: string;
let dist: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'c2c-install-'));
  dist = standInDist(join(dir, 'dist'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function install(dest: string, ...args: string[]) {
  return spawnSync('sh', ['scripts/install.sh', ...args], { encoding: 'utf8', env: { ...process.env, DESTDIR: dest, C2C_DIST_DIR: dist } });
}

function freshDest(name: string): string {
  const dest = join(dir, name);
  rmSync(dest, { recursive: true, force: true });
  return dest;
}

const PROFILES = readdirSync('firmware-profiles').filter((f) => f.endsWith('.json')).sort();

describe('install.sh into DESTDIR', () => {
  it('installs the bundle, profiles, unit, sysusers file, command and a default config, with their modes', () => {
    const dest = freshDest('layout');
    const r = install(dest);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const files = listing(dest).filter((l) => !l.split(' ')[0]!.endsWith('/'));
    expect(paths(files)).toEqual([
      'etc/c2c-agent/config.json',
      'etc/systemd/system/c2c-agent.service',
      'opt/c2c-agent/dist/c2c-agent.mjs',
      'opt/c2c-agent/dist/c2c-agentd-main.cjs',
      'opt/c2c-agent/dist/c2c-agentd.cjs',
      ...PROFILES.map((p) => `opt/c2c-agent/firmware-profiles/${p}`),
      'usr/lib/sysusers.d/c2c-agent.conf',
      'usr/local/bin/c2c-agent',
    ]);
    const mode = (p: string) => files.find((l) => l.startsWith(`${p} `))?.split(' ')[1];
    expect(mode('usr/local/bin/c2c-agent')).toBe('755');
    expect(mode('opt/c2c-agent/dist/c2c-agent.mjs')).toBe('644');
    expect(mode('opt/c2c-agent/dist/c2c-agentd.cjs')).toBe('644');
    expect(mode('opt/c2c-agent/dist/c2c-agentd-main.cjs')).toBe('644');
    expect(mode('etc/c2c-agent/config.json')).toBe('644');
    expect(readFileSync(join(dest, 'etc/systemd/system/c2c-agent.service'), 'utf8')).toBe(readFileSync('systemd/c2c-agent.service', 'utf8'));
    expect(JSON.parse(readFileSync(join(dest, 'etc/c2c-agent/config.json'), 'utf8'))).toEqual({});
    // The command runs the installed bundle.
    expect(readFileSync(join(dest, 'usr/local/bin/c2c-agent'), 'utf8')).toContain('/opt/c2c-agent/dist/c2c-agent.mjs');
  });

  it('gives the same tree when run twice, and leaves no temporary file behind', () => {
    const dest = freshDest('twice');
    expect(install(dest).status).toBe(0);
    const first = listing(dest);
    expect(install(dest).status).toBe(0);
    expect(listing(dest)).toEqual(first);
    expect(first.some((l) => l.includes('.c2c-new'))).toBe(false);
  });

  it("never replaces the administrator's config", () => {
    const dest = freshDest('config');
    expect(install(dest).status).toBe(0);
    const config = join(dest, 'etc/c2c-agent/config.json');
    writeFileSync(config, '{"apiUrl": "https://service.example"}\n');
    expect(install(dest).status).toBe(0);
    expect(readFileSync(config, 'utf8')).toBe('{"apiUrl": "https://service.example"}\n');
  });

  it('--uninstall removes what it installed but keeps the config and whatever else lives there', () => {
    const dest = freshDest('uninstall');
    expect(install(dest).status).toBe(0);
    writeFileSync(join(dest, 'etc/c2c-agent/client-secret'), 's3cret');
    const r = install(dest, '--uninstall');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(paths(listing(dest)).filter((p) => !p.endsWith('/'))).toEqual(['etc/c2c-agent/client-secret', 'etc/c2c-agent/config.json']);
    expect(existsSync(join(dest, 'opt/c2c-agent'))).toBe(false);
    // Again: nothing left to do, still a success.
    expect(install(dest, '--uninstall').status).toBe(0);
  });

  it('--uninstall --purge removes the config too', () => {
    const dest = freshDest('purge');
    expect(install(dest).status).toBe(0);
    expect(install(dest, '--uninstall', '--purge').status).toBe(0);
    expect(paths(listing(dest)).filter((p) => !p.endsWith('/'))).toEqual([]);
  });

  it('refuses an unknown option with exit 64 and one line naming it', () => {
    const r = install(freshDest('usage'), '--bogus');
    expect(r.status).toBe(64);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain("'--bogus'");
  });

  it('refuses --purge without --uninstall', () => {
    expect(install(freshDest('purge-alone'), '--purge').status).toBe(64);
  });

  it('stops with exit 66 before copying anything when the bundle is missing', () => {
    const dest = freshDest('missing');
    const r = spawnSync('sh', ['scripts/install.sh'], { encoding: 'utf8', env: { ...process.env, DESTDIR: dest, C2C_DIST_DIR: join(dir, 'nowhere') } });
    expect(r.status).toBe(66);
    expect(r.stderr).toContain("run 'npm run build' first");
    expect(existsSync(dest) ? listing(dest).filter((l) => !l.split(' ')[0]!.endsWith('/')) : []).toEqual([]);
  });

  it('works from any current directory', () => {
    const dest = freshDest('cwd');
    const r = spawnSync('sh', [resolve('scripts/install.sh')], { cwd: tmpdir(), encoding: 'utf8', env: { ...process.env, DESTDIR: dest, C2C_DIST_DIR: dist } });
    expect(r.status).toBe(0);
    expect(existsSync(join(dest, 'opt/c2c-agent/firmware-profiles/generic.json'))).toBe(true);
  });
});

describe('packaging/lifecycle.sh: when installing starts the daemon', () => {
  const configured = (content: string | undefined): number | null => {
    const file = join(dir, 'lifecycle-config.json');
    rmSync(file, { force: true });
    if (content !== undefined) writeFileSync(file, content);
    const script = `. ./packaging/lifecycle.sh; C2C_CONFIG_FILE='${file}'; c2c_api_url_configured`;
    return spawnSync('sh', ['-c', script], { encoding: 'utf8' }).status;
  };

  it('starts once the config file names an API URL', () => {
    expect(configured('{"apiUrl": "https://service.example"}')).toBe(0);
  });

  it('does not start without one: run would only exit 78', () => {
    expect(configured(undefined)).toBe(1);
    expect(configured('{}')).toBe(1);
    expect(configured('{"apiUrl": ""}')).toBe(1);
    expect(configured('{"apiUrl": ')).toBe(1);
  });
});
