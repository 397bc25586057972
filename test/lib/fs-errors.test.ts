// lib/fs-errors.ts: the one mapping from a file-system error to one line, a
// sysexits code and advice. A path problem (missing, wrong kind, permissions,
// read-only) is 78; a full disk or a failing device may pass (75); anything
// that is not a file-system error stays a bug (exit 1), never a disk fault.
import { describe, expect, it } from '@jest/globals';
import { promises as fs, readFileSync } from 'node:fs';
import { runInNewContext } from 'node:vm';
import { AgentError } from '../../agent/lib/errors.js';
import { errnoOf, fsCode, fsError, isFsError, uncaughtFsError } from '../../agent/lib/fs-errors.js';
import { quote, quotePath } from '../../agent/lib/text.js';

/** A Node system error as fs throws it (code, errno, syscall, path). */
function sysError(code: string, syscall = 'open', path = '/var/lib/c2c-agent/x'): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: failed, ${syscall} '${path}'`), { code, errno: -1, syscall, path });
}

describe('fsError: one line, the sysexits code for the errno, and advice', () => {
  it.each([
    ['ENOENT', 78, 'does not exist'],
    ['ENOTDIR', 78, 'a part of the path is not a directory'],
    ['EISDIR', 78, 'is a directory where a file was expected'],
    ['ELOOP', 78, 'too many levels of symbolic links'],
    ['EACCES', 78, 'permission denied'],
    ['EPERM', 78, 'operation not permitted'],
    ['EROFS', 78, 'read-only file system'],
    ['ENAMETOOLONG', 78, 'name too long'],
    ['ENXIO', 78, 'nothing behind it'],
    ['ENOSPC', 75, 'no space left'],
    ['EDQUOT', 75, 'quota'],
    ['EMFILE', 75, 'too many open files'],
    ['EIO', 75, 'input/output error'],
  ])('%s: exit %i, "%s"', (code, exit, reason) => {
    const e = fsError(sysError(code), 'write the queue', '/var/lib/c2c-agent/queue', '--state-dir');
    expect(e.exitCode).toBe(exit);
    expect(e.details.code).toBe(code);
    expect(e.message).toMatch(new RegExp(`^cannot write the queue '/var/lib/c2c-agent/queue' \\(from --state-dir\\): [^;]*${reason}[^;]* \\(${code}\\); .+$`));
    expect(e.message).not.toContain('\n');
  });

  it('an errno nobody listed is still one line with exit 78 and the code', () => {
    const e = fsError(sysError('EWEIRD'), 'read the status file', '/run/c2c-agent/status.json');
    expect([e.exitCode, e.message]).toEqual([78, "cannot read the status file '/run/c2c-agent/status.json': failed (EWEIRD); check the path and its permissions"]);
  });

  it('without a file, the path in the error is named', () => {
    expect(fsError(sysError('EACCES', 'open', '/etc/x'), 'read the config').message).toContain("'/etc/x'");
  });

  it('a real error from node:fs', async () => {
    const err: unknown = await fs.readFile('/nonexistent/c2c-agent').catch((e: unknown) => e);
    expect(isFsError(err)).toBe(true);
    expect(fsError(err, 'read the thing').exitCode).toBe(78);
  });

  it('an error from another realm (node:vm, as jest runs modules) is still recognised', () => {
    const foreign: unknown = runInNewContext("Object.assign(new Error('x'), { code: 'EACCES', errno: -13, syscall: 'open' })");
    expect(foreign instanceof Error).toBe(false);
    expect(isFsError(foreign)).toBe(true);
    expect(fsError(foreign, 'read').exitCode).toBe(78);
  });

  it('what is not a file-system error stays a bug (exit 1), never dressed as a disk fault', () => {
    for (const bug of [new TypeError('x is undefined'), 'a string', Object.assign(new Error('no errno'), { code: 'ERR_SOMETHING' })]) {
      const e = fsError(bug, 'read the queue', '/q');
      expect(e.kind).toBe('internal');
      expect(e.exitCode).toBe(1);
      expect(e.message).toMatch(/^internal error while trying to read the queue: .*; please report$/);
    }
  });

  it('an AgentError (a refusal already in words) passes through unchanged', () => {
    const already = new AgentError('config', 'state dir is a FIFO');
    expect(fsError(already, 'read')).toBe(already);
  });

  it('errnoOf reads the code of a raw error and of the AgentError made from it', () => {
    const raw = sysError('ENOENT');
    expect([fsCode(raw), errnoOf(raw), errnoOf(fsError(raw, 'read')), errnoOf(new Error('x')), fsCode(fsError(raw, 'read'))]).toEqual(['ENOENT', 'ENOENT', 'ENOENT', undefined, undefined]);
  });
});

describe('uncaughtFsError: the last resort of cli/output.ts', () => {
  it('names what the failed call was doing, with the path from the error', () => {
    const e = uncaughtFsError(sysError('ENOTDIR', 'scandir', '/tmp/state/queue')) as AgentError;
    expect([e.exitCode, e.message]).toEqual([78, "cannot list the directory '/tmp/state/queue': a part of the path is not a directory (ENOTDIR); check the path: a file stands where a directory should be"]);
    expect((uncaughtFsError(sysError('EROFS', 'unlink', '/x')) as AgentError).message).toMatch(/^cannot remove '\/x'/);
  });

  it('leaves a bug alone (the caller reports it as internal error, exit 1), EBADF and EINVAL included', () => {
    const bug = new TypeError('boom');
    expect(uncaughtFsError(bug)).toBe(bug);
    for (const code of ['EBADF', 'EINVAL', 'EFAULT']) {
      const err = sysError(code, 'write');
      expect(uncaughtFsError(err)).toBe(err);
    }
  });
});

describe('values and paths in messages: escaped and cut (lib/text.ts)', () => {
  it('quote shows control characters escaped and cuts at 80 characters with the length', () => {
    expect(quote('a\nb\u0000')).toBe("'a\\nb\\u0000'");
    const long = 'N'.repeat(5 * 1024 * 1024);
    expect(quote(long)).toBe(`'${'N'.repeat(80)}…' (5242880 chars)`);
  });

  it('quotePath keeps a long path readable: its start and its end, where the file name is', () => {
    const p = `/var/lib/${'d/'.repeat(2000)}seg-000001.log`;
    const shown = quotePath(p);
    expect(shown.length).toBeLessThan(200);
    expect(shown).toMatch(/^'\/var\/lib\/d\/.*….*\/seg-000001\.log' \(\d+ chars\)$/);
    expect(shown).toContain(`(${p.length} chars)`);
    expect(quotePath('/short/path')).toBe("'/short/path'");
  });

  it('a message about a 4 KiB path with newlines stays one short line', () => {
    const p = `/tmp/${'x\n'.repeat(2000)}`;
    const e = fsError(sysError('ENOENT', 'open', p), 'read the config file', p, '--config');
    expect(e.message).not.toContain('\n');
    expect(e.message.length).toBeLessThan(400);
  });
});

it('every errno the mapping names maps to 75 or 78, never to exit 1', () => {
  const source = readFileSync(new URL('../../agent/lib/fs-errors.ts', import.meta.url), 'utf8');
  const codes = [...source.matchAll(/^\s+(E[A-Z0-9]+): \{ kind:/gm)].map((m) => m[1] as string);
  expect(codes.length).toBeGreaterThan(15);
  const exits = codes.map((code) => ({ code, exit: fsError(sysError(code), 'x').exitCode }));
  expect(exits.filter((e) => e.exit !== 75 && e.exit !== 78)).toEqual([]);
});
