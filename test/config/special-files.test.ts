// Settings, firmware version and profiles read through lib/bounded-read.ts
// (issue 18, cause 5): a FIFO or a device where a config file, the firmware
// version file or a profile should be is refused at once, one line naming the
// path and the setting (exit 78); conf's client id store is looked at before
// conf opens it.
import { afterAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { getClientId } from '../../agent/auth/client-id.js';
import { loadProfiles } from '../../agent/config/profiles.js';
import { loadSettings } from '../../agent/config/settings.js';
import { configFailure, tempDir } from './helpers.js';

const tmp = tempDir('c2c-config-special-');
afterAll(() => tmp.cleanup());

function mkfifo(name: string): string {
  const f = path.join(tmp.dir, name);
  execFileSync('mkfifo', [f]);
  return f;
}

describe('config file', () => {
  it('a FIFO, /dev/zero or a directory as --config: exit 78 naming it', () => {
    const dir = path.join(tmp.dir, 'cfg-dir');
    mkdirSync(dir);
    for (const [file, what] of [[mkfifo('config-fifo'), 'a FIFO (named pipe)'], ['/dev/zero', 'a character device'], [dir, 'a directory']] as const) {
      const e = configFailure(() => loadSettings({ config: file }, {}, { requireApiUrl: false }));
      expect([e.exitCode, e.message]).toEqual([78, `config file '${file}' (from --config) is ${what}, not a regular file; point the setting at a regular file`]);
    }
  });

  it('a config larger than 64 KiB: refused by its size', () => {
    const big = tmp.write('big-config.json', `{"apiUrl": "https://a.example", "x": "${'y'.repeat(70_000)}"}`);
    expect(configFailure(() => loadSettings({}, { C2C_CONFIG: big }, { requireApiUrl: false })).message).toMatch(/\(from environment C2C_CONFIG\) is larger than the 65536 bytes a config file may hold/);
  });

  it('a FIFO as firmwareVersionFile: exit 78 naming the config key', () => {
    const fw = mkfifo('fw-fifo');
    const cfg = tmp.write('fw-config.json', JSON.stringify({ firmwareVersionFile: fw }));
    const e = configFailure(() => loadSettings({ config: cfg }, {}, { requireApiUrl: false }));
    expect(e.message).toBe(`firmware version file '${fw}' (from config ${cfg} key firmwareVersionFile) is a FIFO (named pipe), not a regular file; point the setting at a regular file`);
  });
});

describe('profiles', () => {
  it('a FIFO named *.json in the profiles dir: exit 78 naming it and the setting', () => {
    const dir = path.join(tmp.dir, 'profiles');
    mkdirSync(dir);
    execFileSync('mkfifo', [path.join(dir, 'cam.json')]);
    const e = configFailure(() => loadProfiles(dir, '--profiles-dir'));
    expect(e.message).toBe(`firmware profile '${dir}/cam.json' (from --profiles-dir) is a FIFO (named pipe), not a regular file; point the setting at a regular file`);
  });

  it('a profiles dir that is a file: ENOTDIR, naming the setting', () => {
    const file = tmp.write('profiles-file', '');
    expect(configFailure(() => loadProfiles(file, 'environment C2C_PROFILES_DIR')).message).toBe(
      `cannot list the profiles directory '${file}' (from environment C2C_PROFILES_DIR): a part of the path is not a directory (ENOTDIR); check the path: a file stands where a directory should be`,
    );
  });
});

describe('client id store (conf)', () => {
  it('a FIFO as agent-state.json is refused before conf opens it', async () => {
    const stateDir = path.join(tmp.dir, 'state-fifo');
    mkdirSync(stateDir);
    execFileSync('mkfifo', [path.join(stateDir, 'agent-state.json')]);
    await expect(getClientId({ stateDir, sources: { stateDir: '--state-dir' } })).rejects.toThrow(
      `client id store '${stateDir}/agent-state.json' (from --state-dir) is a FIFO (named pipe), not a regular file`,
    );
  });

  it('a state dir that is a regular file: exit 78 naming --state-dir', async () => {
    const stateDir = tmp.write('state-file', '');
    await expect(getClientId({ stateDir, sources: { stateDir: '--state-dir' } })).rejects.toMatchObject({
      exitCode: 78,
      message: `state dir '${stateDir}' (from --state-dir) is a regular file, not a directory; point the setting at a directory`,
    });
  });
});
