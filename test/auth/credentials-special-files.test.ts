// The token file and the client secret read through lib/bounded-read.ts
// (issue 18, cause 5): a FIFO, a device, a directory or a file past the bound
// is one line naming the path, the setting and what it is (exit 78), never a
// read that blocks or fills memory. A missing token file is still "not paired".
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readClientSecret } from '../../agent/auth/client-secret.js';
import { loadCredentials, registerClientSecret } from '../../agent/auth/credentials.js';
import { AgentError } from '../../agent/lib/errors.js';
import { settingsIn, tempDir, thrown } from '../support/auth-fixtures.js';

let tmp: ReturnType<typeof tempDir>;
let fifo: string;
beforeAll(() => {
  tmp = tempDir('c2c-cred-special-');
  fifo = path.join(tmp.dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
});
afterAll(() => tmp.cleanup());

const withTokenFile = (tokenFile: string) => settingsIn(tmp.dir, { tokenFile, sources: { tokenFile: '--token-file' } });

describe('loadCredentials', () => {
  test.each([
    ['a FIFO', () => fifo, 'is a FIFO (named pipe), not a regular file'],
    ['/dev/zero', () => '/dev/zero', 'is a character device, not a regular file'],
    ['a directory', () => {
      const d = path.join(tmp.dir, 'creds-dir');
      mkdirSync(d);
      return d;
    }, 'is a directory, not a regular file'],
    ['a 1 MiB file', () => {
      const f = path.join(tmp.dir, 'creds-big');
      writeFileSync(f, Buffer.alloc(1024 * 1024, 0x20), { mode: 0o600 });
      return f;
    }, 'is larger than the 65536 bytes a credentials file may hold'],
  ])('%s: exit 78, one line naming it and --token-file', (_kind, make, what) => {
    const file = make();
    const e = thrown(() => loadCredentials(withTokenFile(file)));
    expect(e.exitCode).toBe(78);
    expect(e.message).toContain(`credentials file '${file}' (from --token-file) ${what}`);
  });

  test('missing: still not paired (77)', () => {
    expect(thrown(() => loadCredentials(withTokenFile(path.join(tmp.dir, 'none.json')))).exitCode).toBe(77);
  });

  test('a token file under a path through a regular file: ENOTDIR, exit 78, not "not paired"', () => {
    const plain = path.join(tmp.dir, 'plain');
    writeFileSync(plain, '');
    const e = thrown(() => loadCredentials(withTokenFile(path.join(plain, 'credentials.json'))));
    expect([e.exitCode, e.message]).toEqual([78, expect.stringContaining('a part of the path is not a directory (ENOTDIR)')]);
  });

  test('a FIFO as the client secret file does not stop a command that only registers it', () => {
    const tokenFile = path.join(tmp.dir, 'ok.json');
    writeFileSync(tokenFile, JSON.stringify({ access_token: 'acc-token-special-0001' }), { mode: 0o600 });
    registerClientSecret(settingsIn(tmp.dir, { clientSecretFile: fifo }));
    expect(loadCredentials(settingsIn(tmp.dir, { tokenFile, clientSecretFile: fifo })).accessToken).toBe('acc-token-special-0001');
  });
});

describe('readClientSecret', () => {
  test.each([
    ['a FIFO', () => fifo, 'is a FIFO (named pipe)'],
    ['/dev/urandom', () => '/dev/urandom', 'is a character device'],
  ])('%s: exit 78 naming it and its source', (_kind, make, what) => {
    const file = make();
    const e = thrown(() => readClientSecret({ clientSecretFile: file, sources: { clientSecretFile: 'environment C2C_CLIENT_SECRET_FILE' } }));
    expect(e.exitCode).toBe(78);
    expect(e.message).toContain(`client secret file '${file}' (from environment C2C_CLIENT_SECRET_FILE) ${what}`);
  });
});
