// pair's check before the service is asked for a code (cli/pair.ts
// prepareCredentialsDirs): once tokens are issued, a state dir that cannot
// take the credentials loses the approved pairing. A read-only or full file
// system cannot be staged as root in a test, so the write probe is injected
// with the errors those give; the real probe is run on a real directory.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { prepareCredentialsDirs, writeProbe } from '../../agent/auth/credentials-dirs.js';
import { AgentError } from '../../agent/lib/errors.js';
import { tempDir } from '../support/auth-fixtures.js';

let tmp: ReturnType<typeof tempDir>;
beforeAll(() => {
  tmp = tempDir('c2c-pair-preflight-');
});
afterAll(() => tmp.cleanup());

const sysError = (code: string, syscall: string): NodeJS.ErrnoException => Object.assign(new Error(`${code}: ${syscall}`), { code, errno: -1, syscall });

function settings(stateDir: string, tokenFile = path.join(stateDir, 'credentials.json')) {
  return { stateDir, tokenFile, sources: { stateDir: 'environment C2C_STATE_DIR', tokenFile: '<state-dir>/credentials.json, the state dir from environment C2C_STATE_DIR' } };
}

async function refusal(p: Promise<unknown>): Promise<AgentError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AgentError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('prepareCredentialsDirs', () => {
  it('a read-only file system (EROFS): exit 78, one line naming the state dir and where it came from', async () => {
    const dir = path.join(tmp.dir, 'ro');
    mkdirSync(dir);
    const e = await refusal(prepareCredentialsDirs(settings(dir), () => Promise.reject(sysError('EROFS', 'open'))));
    expect([e.exitCode, e.message]).toEqual([
      78,
      `cannot write in the state dir (where the credentials will be stored) '${dir}' (from environment C2C_STATE_DIR): is on a read-only file system (EROFS); point the setting at a writable file system`,
    ]);
  });

  it('a full disk (ENOSPC, also at fsync): exit 75 (it may pass), still before any network call', async () => {
    const dir = path.join(tmp.dir, 'full');
    mkdirSync(dir);
    for (const syscall of ['write', 'fsync']) {
      const e = await refusal(prepareCredentialsDirs(settings(dir), () => Promise.reject(sysError('ENOSPC', syscall))));
      expect(e.exitCode).toBe(75);
      expect(e.message).toContain('no space left on the device (ENOSPC); free space on that file system, then try again');
    }
  });

  it('a missing state dir is made, 0700, then probed', async () => {
    const dir = path.join(tmp.dir, 'a', 'b', 'state');
    const probed: string[] = [];
    await prepareCredentialsDirs(settings(dir), async (d) => {
      probed.push(d);
    });
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(probed).toEqual([dir]);
  });

  it('a token file elsewhere: its directory is checked too, named by --token-file', async () => {
    const state = path.join(tmp.dir, 'state2');
    mkdirSync(state);
    const elsewhere = path.join(tmp.dir, 'tokens');
    writeFileSync(elsewhere, 'a file, not a directory');
    const s = { stateDir: state, tokenFile: path.join(elsewhere, 'credentials.json'), sources: { stateDir: '--state-dir', tokenFile: '--token-file' } };
    const e = await refusal(prepareCredentialsDirs(s, async () => undefined));
    expect(e.exitCode).toBe(78);
    expect(e.message).toBe(`directory of the credentials file '${elsewhere}' (from --token-file) is a regular file, not a directory; point the setting at a directory`);
  });

  it('the real probe leaves nothing behind', async () => {
    const dir = path.join(tmp.dir, 'real');
    mkdirSync(dir);
    await prepareCredentialsDirs(settings(dir));
    await writeProbe(dir);
    expect(readdirSync(dir)).toEqual([]);
  });
});
