// readClientSecret: refused (exit 78) unless set, a regular file, 0600 (no
// group or other bits) and not empty; the secret is trimmed and registered
// with scrub() the moment it is read.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readClientSecret } from '../../agent/auth/client-secret.js';
import { AgentError } from '../../agent/lib/errors.js';
import { scrub } from '../../agent/lib/secrets.js';
import { tempDir } from '../support/auth-fixtures.js';

let tmp: ReturnType<typeof tempDir>;
beforeAll(() => {
  tmp = tempDir('c2c-secret-');
});
afterAll(() => tmp.cleanup());

function secretFile(name: string, text: string, mode = 0o600): string {
  const file = path.join(tmp.dir, name);
  writeFileSync(file, text);
  chmodSync(file, mode); // writeFileSync's mode is filtered by the umask
  return file;
}

function refusal(file: string | undefined, source?: string): AgentError {
  try {
    readClientSecret({ ...(file !== undefined && { clientSecretFile: file }), sources: source ? { clientSecretFile: source } : {} });
  } catch (err) {
    if (err instanceof AgentError) return err;
    throw err;
  }
  throw new Error('expected readClientSecret to refuse');
}

describe('readClientSecret refuses', () => {
  test('no setting: exit 78 naming every way to set it', () => {
    const e = refusal(undefined);
    expect(e.kind).toBe('config');
    expect(e.exitCode).toBe(78);
    expect(e.message).toContain('--client-secret-file');
    expect(e.message).toContain('C2C_CLIENT_SECRET_FILE');
  });

  test('a missing file: exit 78 naming the file, its source and ENOENT', () => {
    const file = path.join(tmp.dir, 'missing.secret');
    const e = refusal(file, 'environment C2C_CLIENT_SECRET_FILE');
    expect(e.exitCode).toBe(78);
    expect(e.message).toContain(file);
    expect(e.message).toContain('environment C2C_CLIENT_SECRET_FILE');
    expect(e.message).toContain('ENOENT');
  });

  test('a directory: exit 78, not a regular file', () => {
    const dir = path.join(tmp.dir, 'a-dir');
    mkdirSync(dir, { mode: 0o700 });
    const e = refusal(dir);
    expect(e.exitCode).toBe(78);
    expect(e.message).toMatch(/not a regular file/);
  });

  test.each(['0640', '0604', '0644', '0660', '0606', '0610'])('mode %s: exit 78 with the chmod 600 fix, the secret not in the message', (octal) => {
    const mode = parseInt(octal, 8);
    const file = secretFile(`mode-${mode.toString(8)}.secret`, 'model-secret-modes-1\n', mode);
    const e = refusal(file);
    expect(e.kind).toBe('config');
    expect(e.exitCode).toBe(78);
    expect(e.message).toContain(`chmod 600 ${file}`);
    expect(e.message).toContain(mode.toString(8).padStart(4, '0'));
    expect(e.message).not.toContain('model-secret-modes-1');
  });

  test.each([
    ['empty', ''],
    ['only white space', ' \n\t\n'],
  ])('%s: exit 78', (_name, text) => {
    const file = secretFile(`empty-${text.length}.secret`, text);
    const e = refusal(file);
    expect(e.exitCode).toBe(78);
    expect(e.message).toMatch(/is empty/);
  });
});

describe('readClientSecret accepts', () => {
  test.each(['0600', '0400'])('mode %s: the trimmed secret, registered with scrub()', (octal) => {
    const mode = parseInt(octal, 8);
    const secret = `model-secret-${mode.toString(8)}-abcdef`;
    const file = secretFile(`good-${mode.toString(8)}.secret`, `  ${secret}\r\n`, mode);
    expect(readClientSecret({ clientSecretFile: file, sources: {} })).toBe(secret);
    expect(scrub(`form client_secret=${secret}&x=1`)).toBe('form client_secret=[redacted]&x=1');
  });
});
