import { describe, it, expect, afterEach, jest } from '@jest/globals';
import { fail, printJson, printError } from '../../agent/cli/output.js';
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
    expect(err).toEqual(['c2c-agent: internal error: x is not a function at y\n']);
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
