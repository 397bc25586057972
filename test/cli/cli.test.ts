import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildBundle, ROOT, type Bundle } from './bundle.js';
import { VALID_PROFILE } from '../config/helpers.js';
import { COMMANDS } from '../../agent/cli/commands.js';
import { optionText, SETTING_ROWS } from '../../agent/config/setting-table.js';
import { PAIRING_TIMEOUT_MS } from '../../agent/lib/timing.js';

let bundle: Bundle;
beforeAll(async () => {
  bundle = await buildBundle();
});
afterAll(() => bundle?.cleanup());

const oneLine = (stderr: string): string => {
  expect(stderr.endsWith('\n')).toBe(true);
  expect(stderr.trimEnd().split('\n')).toHaveLength(1);
  return stderr.trimEnd();
};

const profile = VALID_PROFILE;
function profilesDir(name: string, files: Record<string, string>): string {
  const dir = path.join(bundle.dir, name);
  mkdirSync(dir);
  for (const [f, text] of Object.entries(files)) writeFileSync(path.join(dir, f), text);
  return dir;
}

describe('c2c-agent CLI (built bundle)', () => {
  it('--version prints the package version', () => {
    const r = bundle.run(['--version']);
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect([r.status, r.stdout, r.stderr]).toEqual([0, `${pkg.version}\n`, '']);
  });

  it('--help lists the commands this version has, and names the ones still to come', () => {
    const r = bundle.run(['--help']);
    expect(r.status).toBe(0);
    for (const c of ['run', 'check', 'status', 'profiles']) expect(r.stdout).toContain(`c2c-agent ${c}`);
    // Each command's own usage, never a copy that could drift from it; wrapped to 80 columns off a terminal.
    expect(r.stdout).toContain('c2c-agent pair [--json] [--timeout SECONDS]\n      Device-code pairing: ');
    expect(r.stdout).toContain('c2c-agent status [--json] [--runtime-dir DIR]\n');
    expect(r.stdout.trimEnd().split('\n').filter((l) => l.length > 80)).toEqual([]);
    for (const row of Object.values(SETTING_ROWS)) expect(r.stdout).toContain(optionText(row));
    expect(r.stdout).toMatch(/^exit codes: 0 ok, 1 internal error, 64 usage/m);
    // A newcomer reads the daemon and pairing first, the uploads next, the hardware last.
    const listed = [...r.stdout.matchAll(/^  c2c-agent ([a-z][a-z-]*)/gm)].map((m) => m[1]);
    expect(listed).toEqual(['run', 'check', 'status', 'pair', 'unpair', 'upload', 'queue', 'cancel', 'priority', 'prefs', 'press', 'comment', 'channels', 'profiles', 'web-pin']);
  });

  it('an unexpected failure (stdout unwritable) is one line "internal error: ...; please report" and exit 1', () => {
    const file = path.join(bundle.dir, 'read-only-stdout.txt');
    writeFileSync(file, '');
    const fd = openSync(file, 'r');
    try {
      for (const args of [['--help'], ['profiles']]) {
        const r = spawnSync(process.execPath, [bundle.file, ...args], {
          stdio: ['ignore', fd, 'pipe'],
          encoding: 'utf8',
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin', C2C_CONFIG: path.join(ROOT, 'test/cli/fixtures/empty-config.json') },
        });
        expect(r.status).toBe(1);
        expect(r.stderr).toMatch(/^c2c-agent: internal error: EBADF[^\n]*; please report\n$/);
      }
    } finally {
      closeSync(fd);
    }
  });

  it('command --help prints the usage as text', () => {
    const r = bundle.run(['check', '--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^usage: c2c-agent check \[--json\]\n\nPairing check: /);
  });

  it('pair --help says what it needs (the client secret, the API URL) and its defaults, from the setting table, wrapped to 80 columns off a terminal', () => {
    const r = bundle.run(['pair', '--help']);
    expect(r.status).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines.filter((l) => l.length > 80)).toEqual([]);
    const text = r.stdout.replace(/\s+/g, ' ');
    expect(text).toContain(`--timeout SECONDS how long to wait for a person to approve the code (default: ${PAIRING_TIMEOUT_MS / 1000} s)`);
    const needs = text.slice(text.indexOf('needs:'));
    expect(needs).toContain(`--client-secret-file FILE ${SETTING_ROWS.clientSecretFile.help}; or environment C2C_CLIENT_SECRET_FILE, config key clientSecretFile; default: none`);
    expect(needs).toContain('--api-url URL');
    // The other settings are named once, each option whole on its line.
    expect(r.stdout).toMatch(/--upload-roots DIR:DIR/);
  });

  it('command --help wraps to the terminal it is shown on', () => {
    const r = spawnSync('script', ['-qfec', `stty cols 50; ${JSON.stringify(process.execPath)} ${JSON.stringify(bundle.file)} pair --help`, '/dev/null'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', C2C_CONFIG: path.join(ROOT, 'test/cli/fixtures/empty-config.json'), TERM: 'dumb' },
    });
    expect(r.status).toBe(0);
    const lines = r.stdout.replace(/\r/g, '').trimEnd().split('\n');
    expect(lines.length).toBeGreaterThan(20);
    expect(lines.filter((l) => l.length > 50)).toEqual([]);
  });

  it.each(Object.keys(COMMANDS))('%s --help explains each of its own options and names what it needs, in the text and in --json', async (name) => {
    const mod = await COMMANDS[name]!();
    expect(mod.summary).toBeTruthy();
    expect(Object.keys(mod.optionHelp ?? {}).sort()).toEqual(Object.keys(mod.options).sort());
    const r = bundle.run([name, '--help']);
    expect(r.status).toBe(0);
    expect(r.stdout.trimEnd().split('\n').filter((l) => l.length > 80)).toEqual([]);
    for (const k of mod.needs ?? []) expect(r.stdout).toContain(optionText(SETTING_ROWS[k]));
    if (!('json' in mod.options)) return;
    const j = JSON.parse(bundle.run([name, '--help', '--json']).stdout) as { needs: { setting: string }[]; options: { option: string }[] };
    expect(j.needs.map((n) => n.setting)).toEqual([...(mod.needs ?? [])]);
    expect(j.options).toHaveLength(Object.keys(mod.options).length);
  });

  it.each([['check'], ['profiles'], ['status']])('%s --json --help prints exactly one JSON object with the usage', (cmd) => {
    for (const args of [[cmd, '--json', '--help'], [cmd, '-h', '--json']]) {
      const r = bundle.run(args);
      expect([r.status, r.stderr]).toEqual([0, '']);
      expect(r.stdout.trimEnd().split('\n')).toHaveLength(1);
      const out = JSON.parse(r.stdout) as Record<string, unknown>;
      expect(out).toMatchObject({ ok: true, exitCode: 0, usage: expect.stringMatching(new RegExp(`^c2c-agent ${cmd} `)) });
      expect(out.settingsOptions).toContain('--api-url URL');
    }
  });

  it.each([[['--help', '--json']], [['--json', '--help']], [['--json', '--version']], [['--version', '--json']]])(
    'top-level %j with --json prints exactly one JSON object',
    (args) => {
      const r = bundle.run(args);
      expect(r.status).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout.trimEnd().split('\n')).toHaveLength(1);
      const out = JSON.parse(r.stdout) as Record<string, unknown>;
      expect(out).toMatchObject({ ok: true, exitCode: 0 });
      expect(out.usage ?? out.version).toBeTruthy();
    },
  );

  it.each([
    [['frobnicate'], "unknown command 'frobnicate'"],
    [['upload'], 'upload: name at least one FILE'],
    [['pair', '--timeout', 'soon'], "pair: --timeout 'soon' must be a positive number of seconds"],
    [['pair', '--timeout', '86401'], "pair: --timeout '86401' must be a positive number of seconds, at most 86400"],
    [[], 'missing command'],
    [['--verbose'], "unknown option '--verbose'"],
    [['profiles', '--bogus'], "profiles: unknown option '--bogus'"],
    [['profiles', 'extra'], "profiles: unexpected argument 'extra'"],
    [['profiles', '--firmware'], "option '--firmware <value>' argument missing"],
  ])('usage error %j: exit 64, one line on stderr, nothing on stdout', (args, text) => {
    const r = bundle.run(args);
    expect(r.status).toBe(64);
    expect(oneLine(r.stderr)).toContain(text);
    expect(r.stdout).toBe('');
  });

  it('profiles --json prints one object with ok, exitCode and the selection', () => {
    const r = bundle.run(['profiles', '--json', '--firmware', '1.3.0']);
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(1);
    const out = JSON.parse(r.stdout) as Record<string, any>;
    expect(out).toMatchObject({ ok: true, exitCode: 0, firmwareVersion: '1.3.0', firmwareSource: '--firmware', selected: 'audio-2ch', profilesDir: null });
    expect(out.profiles.map((p: any) => p.id)).toEqual(['generic', 'cam-1080', 'audio-2ch', 'multi-av-tc', 'cam-4k']);
    expect(out.profiles.filter((p: any) => p.selected).map((p: any) => p.id)).toEqual(['audio-2ch']);
    expect(out.profiles[2]).toMatchObject({ range: '>=1.2.0 <1.5.0', assetType: 'audio', file: 'firmware-profiles/audio-2ch.json' });
    expect(out.profiles[2].channels.map((c: any) => c.key)).toEqual(['input-1', 'input-2']);
  });

  it('profiles without --firmware uses the configured firmware version', () => {
    const r = bundle.run(['profiles', '--json'], { env: { C2C_FIRMWARE_VERSION: '2.0.0' } });
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, selected: 'cam-4k', firmwareSource: 'environment C2C_FIRMWARE_VERSION' });
    const human = bundle.run(['profiles']);
    expect(human.status).toBe(0);
    expect(human.stdout).toContain('firmware 0.0.0 (from default) selects generic');
  });

  it('profiles works from a lone copy of the bundle with no node_modules', () => {
    const lone = path.join(bundle.dir, 'lone');
    mkdirSync(lone);
    writeFileSync(path.join(lone, 'c2c-agent.mjs'), readFileSync(bundle.file));
    const r = bundle.run(['profiles', '--json'], { cwd: lone, file: path.join(lone, 'c2c-agent.mjs') });
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, exitCode: 0, selected: 'generic' });
  });

  it('a broken profile: exit 78 naming file and field, in human and JSON form', () => {
    const bad = { ...profile, heartbeat: { minSeconds: 30, maxSeconds: 120 } };
    const dir = profilesDir('broken', { 'cam.json': JSON.stringify(bad) });
    const r = bundle.run(['profiles', '--profiles-dir', dir]);
    expect(r.status).toBe(78);
    expect(oneLine(r.stderr)).toBe(`c2c-agent: ${path.join(dir, 'cam.json')}: /heartbeat/minSeconds must be >= 60, got 30`);
    const j = bundle.run(['profiles', '--json'], { env: { C2C_PROFILES_DIR: dir } });
    expect(j.status).toBe(78);
    expect(JSON.parse(j.stdout)).toEqual({ ok: false, exitCode: 78, error: { kind: 'config', message: `${path.join(dir, 'cam.json')}: /heartbeat/minSeconds must be >= 60, got 30` } });
  });

  it('invalid JSON in a profile, and a firmware no profile covers', () => {
    const dir = profilesDir('mixed', { 'a.json': JSON.stringify(profile), 'b.json': '{"id": ' });
    const r = bundle.run(['profiles', '--profiles-dir', dir]);
    expect([r.status, oneLine(r.stderr)]).toEqual([78, expect.stringContaining(`${path.join(dir, 'b.json')}: invalid JSON`)]);
    const only = profilesDir('only', { 'a.json': JSON.stringify(profile) });
    const j = bundle.run(['profiles', '--json', '--firmware', '0.9.0', '--profiles-dir', only]);
    expect(j.status).toBe(78);
    expect(oneLine(j.stderr)).toContain("no firmware profile covers firmware '0.9.0' (from --firmware)");
    expect(JSON.parse(j.stdout)).toMatchObject({ ok: false, exitCode: 78, selected: null, profiles: [{ id: 'cam' }], error: { kind: 'config' } });
  });

  it('settings errors reach the CLI as exit 78 naming the source', () => {
    const r = bundle.run(['profiles', '--firmware', 'v1.2']);
    expect([r.status, oneLine(r.stderr)]).toEqual([78, "c2c-agent: firmware version 'v1.2' from --firmware is not strict semver (expected MAJOR.MINOR.PATCH, e.g. 1.4.2)"]);
    const cfg = path.join(bundle.dir, 'bad-config.json');
    writeFileSync(cfg, JSON.stringify({ apiUrl: 'https://a.example', colour: 'blue' }));
    const c = bundle.run(['profiles', '--config', cfg]);
    expect([c.status, oneLine(c.stderr)]).toEqual([78, expect.stringContaining(`config ${cfg}: unknown key 'colour'`)]);
    const missing = bundle.run(['profiles'], { env: { C2C_CONFIG: path.join(bundle.dir, 'nope.json') } });
    expect([missing.status, oneLine(missing.stderr)]).toEqual([78, `c2c-agent: cannot read the config file '${path.join(bundle.dir, 'nope.json')}' (from environment C2C_CONFIG): does not exist (ENOENT); check the path (or create it)`]);
  });
});
