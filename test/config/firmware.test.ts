import { describe, it, expect, afterAll } from '@jest/globals';
import { isStrictSemver, assertStrictSemver, readFirmwareVersionFile } from '../../agent/config/firmware.js';
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
    expect(err.message).toContain(`firmware version file '${missing}' (from firmwareVersionFile): does not exist (ENOENT)`);
  });
});
