// scripts/package-deb.mjs: the package holds the same files install.sh
// installs (one list), its control data says what the issue promises, and
// the maintainer scripts are complete shell. Built from a stand-in bundle.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { listing, paths, standInDist } from './staging.js';

const VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;
let dir: string;
let stage: string;
let env: NodeJS.ProcessEnv;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'c2c-deb-test-'));
  env = { ...process.env, C2C_DIST_DIR: standInDist(join(dir, 'dist')) };
  stage = join(dir, 'stage');
  const r = spawnSync(process.execPath, ['scripts/package-deb.mjs', '--stage', stage], { encoding: 'utf8', env });
  if (r.status !== 0) throw new Error(`package-deb --stage failed: ${r.stderr}`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const files = (root: string) => listing(root).filter((l) => !l.split(' ')[0]!.endsWith('/'));

describe('the Debian package', () => {
  it('holds what install.sh installs (package paths for the unit and the command) plus its own docs', () => {
    const local = join(dir, 'local');
    const r = spawnSync('sh', ['scripts/install.sh'], { encoding: 'utf8', env: { ...env, DESTDIR: local } });
    expect(r.status).toBe(0);
    const asPackaged = files(local).map((l) =>
      l.replace(/^etc\/systemd\/system\//, 'usr/lib/systemd/system/').replace(/^usr\/local\/bin\//, 'usr/bin/'),
    );
    const packaged = files(stage).filter((l) => !l.startsWith('DEBIAN/') && !l.startsWith('usr/share/'));
    expect(packaged.sort()).toEqual(asPackaged.sort());
    expect(paths(files(stage)).filter((p) => p.startsWith('usr/share/'))).toEqual([
      'usr/share/doc/c2c-agent/changelog.gz',
      'usr/share/doc/c2c-agent/copyright',
      'usr/share/lintian/overrides/c2c-agent',
      'usr/share/man/man1/c2c-agent.1.gz',
    ]);
  });

  it('is architecture all, depends on nodejs >= 20, and carries the package.json version', () => {
    const control = readFileSync(join(stage, 'DEBIAN/control'), 'utf8');
    expect(control).toMatch(/^Package: c2c-agent$/m);
    expect(control).toMatch(new RegExp(`^Version: ${VERSION.replace(/\./g, '\\.')}$`, 'm'));
    expect(control).toMatch(/^Architecture: all$/m);
    expect(control).toMatch(/^Depends: nodejs \(>= 20\)(,|$)/m);
    expect(control).toMatch(/^Installed-Size: [1-9]\d*$/m);
  });

  it("marks the config as a conffile, so dpkg keeps the administrator's edits", () => {
    expect(readFileSync(join(stage, 'DEBIAN/conffiles'), 'utf8')).toBe('/etc/c2c-agent/config.json\n');
  });

  it('has maintainer scripts with the shared lifecycle inlined, valid sh, executable', () => {
    for (const script of ['postinst', 'prerm', 'postrm']) {
      const file = join(stage, 'DEBIAN', script);
      const text = readFileSync(file, 'utf8');
      expect(text).not.toContain('#LIFECYCLE#');
      expect(text).toContain('c2c_purge_data()');
      expect(spawnSync('sh', ['-n', file]).status).toBe(0);
      expect(listing(stage).find((l) => l.startsWith(`DEBIAN/${script} `))?.split(' ')[1]).toBe('755');
    }
    // Removal keeps data; only purge calls the function that deletes it.
    const postrm = readFileSync(join(stage, 'DEBIAN/postrm'), 'utf8');
    expect(postrm.slice(postrm.indexOf('if [ "$1" = purge ]'))).toContain('c2c_purge_data\n');
    expect(postrm.match(/^\s+c2c_purge_data$/gm)).toHaveLength(1);
  });

  it('lists every file in md5sums', () => {
    const sums = readFileSync(join(stage, 'DEBIAN/md5sums'), 'utf8').trim().split('\n').map((l) => l.split('  ')[1]);
    expect(sums.sort()).toEqual(paths(files(stage)).filter((p) => !p.startsWith('DEBIAN/')).sort());
  });

  it('has a man page made from --help and a Debian changelog for this version', () => {
    const man = gunzipSync(readFileSync(join(stage, 'usr/share/man/man1/c2c-agent.1.gz'))).toString('utf8');
    expect(man).toMatch(/^\.TH C2C-AGENT 1 /);
    expect(man).toContain('usage: c2c-agent <command> [options]');
    const changelog = gunzipSync(readFileSync(join(stage, 'usr/share/doc/c2c-agent/changelog.gz'))).toString('utf8');
    expect(changelog.split('\n')[0]).toBe(`c2c-agent (${VERSION}) unstable; urgency=medium`);
  });

  it('builds with dpkg-deb into a file named c2c-agent_<version>_all.deb, owned by root', () => {
    const out = join(dir, 'out');
    const r = spawnSync(process.execPath, ['scripts/package-deb.mjs', '--out', out], { encoding: 'utf8', env });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const deb = join(out, `c2c-agent_${VERSION}_all.deb`);
    const contents = spawnSync('dpkg-deb', ['--contents', deb], { encoding: 'utf8' });
    expect(contents.status).toBe(0);
    const lines = contents.stdout.trim().split('\n');
    expect(lines.every((l) => l.includes(' root/root '))).toBe(true);
    expect(lines.some((l) => l.endsWith('./opt/c2c-agent/dist/c2c-agent.mjs'))).toBe(true);
    expect(lines.some((l) => l.endsWith('./opt/c2c-agent/dist/c2c-agentd.cjs'))).toBe(true);
    expect(lines.some((l) => l.endsWith('./opt/c2c-agent/dist/c2c-agentd-main.cjs'))).toBe(true);
  });

  it('refuses to stage into a folder that holds anything', () => {
    const r = spawnSync(process.execPath, ['scripts/package-deb.mjs', '--stage', stage], { encoding: 'utf8', env });
    expect(r.status).toBe(73);
    expect(r.stderr).toContain('is not empty');
  });
});
