// lib/bounded-read.ts: what every file the agent reads goes through. A FIFO,
// a device or a directory is refused (exit 78, one line naming the path and
// what it is) without a read that could block or run forever; a file past
// its bound is refused; procfs files, whose size says 0, are read to their
// end. A FIFO here has no writer: a blocking open or read would hang this
// suite, which is the failure these tests guard against.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  checkDirectorySync,
  checkRegularFileSync,
  isMissing,
  NOT_REGULAR,
  READ_LIMITS,
  readBoundedFile,
  readBoundedFileSync,
  readBoundedText,
  readBoundedTextSync,
  TOO_LARGE,
  type ReadSpec,
} from '../../agent/lib/bounded-read.js';
import { AgentError } from '../../agent/lib/errors.js';
import { tempDir } from '../support/auth-fixtures.js';

let tmp: ReturnType<typeof tempDir>;
let fifo: string;
beforeAll(() => {
  tmp = tempDir('c2c-bounded-');
  fifo = path.join(tmp.dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
});
afterAll(() => tmp.cleanup());

const spec = (maxBytes = 1024, extra: Partial<ReadSpec> = {}): ReadSpec => ({ what: 'test file', maxBytes, source: '--test-file', ...extra });

function refusedSync(file: string, s: ReadSpec = spec()): AgentError {
  try {
    readBoundedFileSync(file, s);
  } catch (err) {
    if (err instanceof AgentError) return err;
    throw err;
  }
  throw new Error(`expected ${file} to be refused`);
}

async function refusedAsync(file: string, s: ReadSpec = spec()): Promise<AgentError> {
  try {
    await readBoundedFile(file, s);
  } catch (err) {
    if (err instanceof AgentError) return err;
    throw err;
  }
  throw new Error(`expected ${file} to be refused`);
}

/** Both readers refuse it the same way: returns the sync one's error after checking they agree. */
async function refused(file: string, s: ReadSpec = spec()): Promise<AgentError> {
  const a = refusedSync(file, s);
  const b = await refusedAsync(file, s);
  expect({ kind: b.kind, message: b.message, code: b.details.code }).toEqual({ kind: a.kind, message: a.message, code: a.details.code });
  expect(a.exitCode).toBe(78);
  expect(a.message).not.toContain('\n');
  return a;
}

describe('readBoundedFile and readBoundedFileSync refuse what is not a regular file within its bound', () => {
  it('a FIFO with no writer: refused at once, naming the path, the setting and what it is', async () => {
    const e = await refused(fifo);
    expect(e.message).toBe(`test file '${fifo}' (from --test-file) is a FIFO (named pipe), not a regular file; point the setting at a regular file`);
    expect(e.details.code).toBe(NOT_REGULAR);
  });

  it('a symbolic link to a FIFO: the FIFO is what is judged', async () => {
    const link = path.join(tmp.dir, 'link-to-fifo');
    symlinkSync(fifo, link);
    expect((await refused(link)).message).toContain('is a FIFO (named pipe)');
  });

  it('/dev/zero and /dev/urandom (endless): refused as character devices, nothing read', async () => {
    for (const dev of ['/dev/zero', '/dev/urandom']) expect((await refused(dev)).message).toContain(`'${dev}' (from --test-file) is a character device`);
  });

  it('/dev/null: a character device too, not an empty file', async () => {
    expect((await refused('/dev/null')).message).toContain('is a character device');
  });

  it('a directory: refused with EISDIR, the errno a read of it gives', async () => {
    const e = await refused(tmp.dir);
    expect(e.message).toContain('is a directory, not a regular file');
    expect(e.details.code).toBe('EISDIR');
  });

  it('a file past the bound: refused from its size before a byte is read', async () => {
    const big = path.join(tmp.dir, 'big');
    writeFileSync(big, Buffer.alloc(1025, 0x61));
    const e = await refused(big);
    expect(e.details.code).toBe(TOO_LARGE);
    expect(e.message).toBe(`test file '${big}' (from --test-file) is larger than the 1024 bytes a test file may hold (1025 bytes); point the setting at the right file`);
  });

  it('a file of exactly the bound is read whole', async () => {
    const exact = path.join(tmp.dir, 'exact');
    writeFileSync(exact, Buffer.alloc(1024, 0x62));
    expect(readBoundedFileSync(exact, spec()).length).toBe(1024);
    expect((await readBoundedFile(exact, spec())).length).toBe(1024);
  });

  it('a missing file: the one fs mapping (ENOENT, exit 78) and isMissing says so', async () => {
    const missing = path.join(tmp.dir, 'missing');
    const e = await refused(missing);
    expect(e.message).toBe(`cannot read the test file '${missing}' (from --test-file): does not exist (ENOENT); check the path (or create it)`);
    expect(isMissing(e)).toBe(true);
    expect(isMissing(await refusedAsync(fifo))).toBe(false);
  });

  it('a path through a regular file (ENOTDIR) and a symbolic link loop (ELOOP)', async () => {
    const file = path.join(tmp.dir, 'plain');
    writeFileSync(file, 'x');
    expect((await refused(path.join(file, 'inside'))).message).toContain('(ENOTDIR)');
    const loopA = path.join(tmp.dir, 'loop-a');
    symlinkSync(path.join(tmp.dir, 'loop-b'), loopA);
    symlinkSync(loopA, path.join(tmp.dir, 'loop-b'));
    expect((await refused(loopA)).message).toContain('(ELOOP)');
  });
});

describe('procfs files (size 0 by stat) are read to their end, within the bound', () => {
  it('/proc/self/stat: the whole line, as readFileSync gives it', async () => {
    const sync = readBoundedTextSync('/proc/self/stat', spec(4096));
    expect(sync).toMatch(/^\d+ \(.*\) [A-Z] /);
    // Fields after the command name: a read that stopped at the stat size (0) or one byte would have none.
    expect(sync.slice(sync.lastIndexOf(')') + 2).split(' ').length).toBeGreaterThan(40);
    const text = await readBoundedText('/proc/self/stat', spec(4096));
    expect(text.split(' ')[0]).toBe(String(process.pid));
  });

  it('/proc/sys/kernel/random/boot_id: the same as readFileSync', async () => {
    const want = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8');
    expect(await readBoundedText('/proc/sys/kernel/random/boot_id', spec(4096))).toBe(want);
  });

  it('a procfs file longer than the bound is refused after bound + 1 bytes, whatever its stat size said', async () => {
    // /proc/self/maps of a node process is tens of KiB.
    const e = await refused('/proc/self/maps', spec(64));
    expect(e.details.code).toBe(TOO_LARGE);
    expect(e.message).toContain('is larger than the 64 bytes a test file may hold (more than that)');
  });

  it('a file bigger than the first read buffer grows to its end', async () => {
    const file = path.join(tmp.dir, 'medium');
    const body = Buffer.alloc(100_000, 0x63);
    writeFileSync(file, body);
    expect(readBoundedFileSync(file, spec(200_000)).equals(body)).toBe(true);
    expect((await readBoundedFile(file, spec(200_000))).equals(body)).toBe(true);
  });
});

describe('onStat: a check on the descriptor that was opened', () => {
  it('runs before anything is read, and its error is what the caller gets', async () => {
    const file = path.join(tmp.dir, 'secret');
    writeFileSync(file, 'abc');
    chmodSync(file, 0o644);
    const seen: number[] = [];
    const s = spec(1024, {
      onStat: (st) => {
        seen.push(st.mode & 0o777);
        if ((st.mode & 0o077) !== 0) throw new AgentError('config', 'too open');
      },
    });
    expect((await refused(file, s)).message).toBe('too open');
    expect(seen).toEqual([0o644, 0o644]);
  });
});

describe('checkRegularFileSync and checkDirectorySync: for paths a library opens, and directories', () => {
  it('a regular file within the bound: its stat; missing: undefined; a FIFO or a too large file: refused', () => {
    const file = path.join(tmp.dir, 'small');
    writeFileSync(file, '{}');
    expect(checkRegularFileSync(file, spec())?.size).toBe(2);
    expect(checkRegularFileSync(path.join(tmp.dir, 'absent'), spec())).toBeUndefined();
    expect(() => checkRegularFileSync(fifo, spec())).toThrow(/is a FIFO \(named pipe\), not a regular file/);
    expect(() => checkRegularFileSync(file, spec(1))).toThrow(/is larger than the 1 bytes/);
  });

  it('a directory: true; missing: false; a regular file, a device or a loop: one line naming the setting', () => {
    const dir = path.join(tmp.dir, 'a-dir');
    mkdirSync(dir);
    const s = { what: 'state dir', source: '--state-dir' };
    expect(checkDirectorySync(dir, s)).toBe(true);
    expect(checkDirectorySync(path.join(tmp.dir, 'no-dir'), s)).toBe(false);
    const file = path.join(tmp.dir, 'dir-is-file');
    writeFileSync(file, '');
    expect(() => checkDirectorySync(file, s)).toThrow(`state dir '${file}' (from --state-dir) is a regular file, not a directory; point the setting at a directory`);
    expect(() => checkDirectorySync('/dev/null', s)).toThrow("state dir '/dev/null' (from --state-dir) is a character device, not a directory");
    expect(() => checkDirectorySync(path.join(tmp.dir, 'loop-a'), s)).toThrow(/cannot use the state dir .* \(from --state-dir\): has too many levels of symbolic links \(a loop\) \(ELOOP\)/);
  });
});

describe('READ_LIMITS', () => {
  it('are small enough that no kind of file can fill the memory of a camera', () => {
    for (const [kind, n] of Object.entries(READ_LIMITS)) expect({ kind, ok: n > 0 && n <= 1024 * 1024 }).toEqual({ kind, ok: true });
  });
});
