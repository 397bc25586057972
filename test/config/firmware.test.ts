import { describe, it, expect, afterAll } from '@jest/globals';
import { isStrictSemver, assertStrictSemver, resolveFirmwareVersion, readFirmwareVersionFile } from '../../agent/config/firmware.js';
import { configFailure, tempDir } from './helpers.js';

const tmp = tempDir('c2c-fw-');
afterAll(() => tmp.cleanup());

describe('strict semver', () => {
  it.each(['1.2.3', '0.0.0', '1.2.3-rc.1+b5', '10.20.30-alpha', '1.0.0+build.7'])('accepts %p', (v) => {
    expect(isStrictSemver(v)).toBe(true);
    expect(assertStrictSemver(v, '--firmware-version')).toBe(v);
  });

  it.each(['v1.2.3', '=1.2.3', '1.2', 'v1.2', '', ' 1.2.3', '1.2.3 ', '01.2.3', '1.02.3', '1.2.3-01', 'latest'])('rejects %p naming the source', (v) => {
    expect(isStrictSemver(v)).toBe(false);
    const err = configFailure(() => assertStrictSemver(v, 'environment C2C_FIRMWARE_VERSION'));
    expect(err.exitCode).toBe(78);
    expect(err.message).toContain(`'${v}' from environment C2C_FIRMWARE_VERSION is not strict semver`);
    expect(err.message).not.toContain('\n');
  });
});

describe('firmware version sources', () => {
  it('takes the first line of firmwareVersionFile', () => {
    const file = tmp.write('fw-ok', '2.1.0-beta.3\r\nbuilt by ci\n');
    expect(readFirmwareVersionFile(file)).toBe('2.1.0-beta.3');
    expect(resolveFirmwareVersion({ file: { path: file, label: 'firmwareVersionFile' } })).toEqual({ value: '2.1.0-beta.3', source: `${file} (firmwareVersionFile)` });
  });

  it('names the file when its version is not strict', () => {
    const file = tmp.write('fw-bad', 'v1.2\n');
    const err = configFailure(() => readFirmwareVersionFile(file));
    expect(err.message).toBe(`firmware version 'v1.2' from ${file} (firmwareVersionFile) is not strict semver (expected MAJOR.MINOR.PATCH, e.g. 1.4.2)`);
  });

  it('names an unreadable file', () => {
    const missing = `${tmp.dir}/nope`;
    const err = configFailure(() => readFirmwareVersionFile(missing));
    expect(err.exitCode).toBe(78);
    expect(err.message).toContain(`firmwareVersionFile ${missing} (ENOENT)`);
  });

  it('prefers option, then environment, then config, then file, then 0.0.0', () => {
    const file = tmp.write('fw-file', '4.0.0\n');
    const all = {
      option: { value: '1.0.0', label: '--firmware-version' },
      env: { value: '2.0.0', label: 'environment C2C_FIRMWARE_VERSION' },
      config: { value: '3.0.0', label: 'config c.json key firmwareVersion' },
      file: { path: file, label: 'firmwareVersionFile' },
    };
    expect(resolveFirmwareVersion(all).value).toBe('1.0.0');
    expect(resolveFirmwareVersion({ ...all, option: undefined }).value).toBe('2.0.0');
    expect(resolveFirmwareVersion({ config: all.config, file: all.file }).value).toBe('3.0.0');
    expect(resolveFirmwareVersion({ file: all.file }).value).toBe('4.0.0');
    expect(resolveFirmwareVersion({})).toEqual({ value: '0.0.0', source: 'default' });
  });
});
