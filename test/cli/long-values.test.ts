// Issue 18, cause 7, against the built bundle: a message never echoes a
// whole bad value. A profile with a 5 MiB `name` printed about 10 MiB (the
// value on stderr and again in --json); a firmware version file with a 50 MB
// first line printed 100 MB. Now files past their bound are refused before
// they are read, and values under it are shown cut, escaped, one line.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { VALID_PROFILE } from '../config/helpers.js';
import { buildBundle, type Bundle } from './bundle.js';
import { runBundle, type RunResult } from './spawn.js';

let bundle: Bundle;
beforeAll(async () => {
  bundle = await buildBundle();
}, 60_000);
afterAll(() => bundle?.cleanup());

const KB = 1024;

/** stderr is one line under 1 KB, stdout (the --json object) too. */
function shortFailure(r: RunResult): string {
  expect({ status: r.status, stderrBytes: r.stderr.length < KB, stdoutBytes: r.stdout.length < KB }).toEqual({ status: 78, stderrBytes: true, stdoutBytes: true });
  expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  return r.stderr.trimEnd();
}

function profileDir(name: string, profileName: string): string {
  const dir = path.join(bundle.dir, name);
  mkdirSync(dir);
  writeFileSync(path.join(dir, 'cam.json'), JSON.stringify({ ...VALID_PROFILE, name: profileName }));
  return dir;
}

describe('long values in files', () => {
  it('a profile with a 5 MiB name: exit 78, under 1 KB on stderr and in --json, refused by its size', async () => {
    const dir = profileDir('huge-name', 'N'.repeat(5 * 1024 * 1024));
    for (const json of [false, true]) {
      const r = await runBundle(bundle.file, ['profiles', '--profiles-dir', dir, ...(json ? ['--json'] : [])]);
      const line = shortFailure(r);
      expect(line).toMatch(/^c2c-agent: firmware profile '.*cam\.json' \(from --profiles-dir\) is larger than the 262144 bytes a firmware profile may hold \(\d+ bytes\)/);
      if (json) expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, exitCode: 78 });
    }
  });

  it('a profile under the bound with a 200 KB name full of control characters: the schema refusal shows it cut and escaped', async () => {
    const dir = profileDir('long-name', `\u001b[2J\n${'N'.repeat(200_000)}`);
    const line = shortFailure(await runBundle(bundle.file, ['profiles', '--profiles-dir', dir]));
    expect(line).toContain("/name must NOT have more than 120 characters, got '\\u001b[2J\\nNNNN");
    expect(line).toMatch(/…' \(200005 chars\)$/);
    expect(line).not.toContain('\u001b');
  });

  it('a firmware version file with a 50 MB first line: exit 78, refused by its size before it is read, under 1 KB', async () => {
    const fw = path.join(bundle.dir, 'firmware-version');
    writeFileSync(fw, `${'1'.repeat(50_000_000)}\n`);
    const config = path.join(bundle.dir, 'fw-config.json');
    writeFileSync(config, JSON.stringify({ firmwareVersionFile: fw }));
    for (const json of [false, true]) {
      const r = await runBundle(bundle.file, ['status', '--config', config, ...(json ? ['--json'] : [])]);
      const line = shortFailure(r);
      expect(line).toBe(`c2c-agent: firmware version file '${fw}' (from config ${config} key firmwareVersionFile) is larger than the 4096 bytes a firmware version file may hold (50000001 bytes); point the setting at the right file`);
    }
  });

  it('a firmware version line under the bound but not semver: shown cut to 80 characters and escaped', async () => {
    const fw = path.join(bundle.dir, 'firmware-version-2');
    writeFileSync(fw, `v${'9'.repeat(3000)}\u0007\n`);
    const config = path.join(bundle.dir, 'fw-config-2.json');
    writeFileSync(config, JSON.stringify({ firmwareVersionFile: fw }));
    const line = shortFailure(await runBundle(bundle.file, ['status', '--config', config]));
    expect(line).toContain(`firmware version 'v${'9'.repeat(79)}…' (3002 chars) from ${fw} (firmwareVersionFile) is not strict semver`);
  });

  it('a config file with a 60 KB unknown key: the key is shown cut', async () => {
    const config = path.join(bundle.dir, 'key-config.json');
    writeFileSync(config, JSON.stringify({ ['k'.repeat(60_000)]: 'x' }));
    const line = shortFailure(await runBundle(bundle.file, ['status', '--config', config]));
    expect(line).toContain(`unknown key '${'k'.repeat(80)}…' (60000 chars)`);
  });
});
