import { describe, it, expect, afterEach, jest } from '@jest/globals';
import { fail, printJson, printError } from '../../agent/cli/output.js';
import { checkNodeVersion } from '../../agent/cli/version.js';
import { configError } from '../../agent/lib/errors.js';
import { registerSecret } from '../../agent/lib/secrets.js';

function capture(): { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => out.push(String(chunk)) > 0);
  jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => err.push(String(chunk)) > 0);
  return { out, err };
}
afterEach(() => {
  jest.restoreAllMocks();
});

describe('output helpers', () => {
  it('an unexpected error is exit 1 "internal error: ..." on one stderr line', () => {
    const { out, err } = capture();
    expect(fail(new TypeError('x is not a function\n    at y'), { json: false })).toBe(1);
    expect(err).toEqual(['c2c-agent: internal error: x is not a function at y; please report\n']);
    expect(out).toEqual([]);
  });

  it('with --json a failure is also one JSON object carrying extra facts', () => {
    const { out, err } = capture();
    expect(fail(configError('bad thing'), { json: true, extra: { profile: 'cam' } })).toBe(78);
    expect(err).toHaveLength(1);
    expect(out).toHaveLength(1);
    expect(JSON.parse(out[0] as string)).toEqual({ profile: 'cam', ok: false, exitCode: 78, error: { kind: 'config', message: 'bad thing' } });
  });

  it('secrets never reach stdout or stderr', () => {
    registerSecret('s3cr3t-token-value');
    const { out, err } = capture();
    printJson({ ok: true, exitCode: 0, refresh_token: 'anything', note: 'Bearer s3cr3t-token-value' });
    printError('rejected s3cr3t-token-value');
    expect(JSON.parse(out[0] as string)).toEqual({ ok: true, exitCode: 0, refresh_token: '[redacted]', note: 'Bearer [redacted]' });
    expect(err).toEqual(['c2c-agent: rejected [redacted]\n']);
  });
});

describe('Node.js version check', () => {
  it('refuses anything older than Node 20 with one line naming the version, exit 78 in main', () => {
    for (const v of ['18.19.0', '18.19.1', '16.20.2', 'v19.9.0']) {
      const msg = checkNodeVersion(v);
      expect(msg).toMatch(/^c2c-agent needs Node\.js >= 20 \(this is .+\); /);
      expect(msg).toContain(v);
      expect(msg).not.toContain('\n');
    }
  });

  it('accepts 20, 22, 24 and later, and does not refuse a version it cannot parse', () => {
    for (const v of ['20.0.0', '20.19.5', '22.12.0', '24.1.0', '100.0.0', process.versions.node, 'weird']) expect(checkNodeVersion(v)).toBeUndefined();
  });
});
