// Every file the agent reads from a path someone else chose (a config, a
// profile, a token file, a status file, a queue segment) is read through
// here. The path is looked at (stat) before it is opened, so a FIFO or a
// device is refused without being opened at all (opening some devices does
// something: /dev/watchdog arms the watchdog); it is then opened without
// blocking (a FIFO swapped in after the stat must not wedge the process or
// make it deaf to SIGTERM), checked again on the open descriptor (so a rename
// between the two cannot slip a device in), and read up to a bound that fits
// its job (/dev/zero or a 10 GB file must not fill memory). A file whose size
// says 0 (procfs: /proc/self/stat, boot_id) is read until its end, within the
// bound. Anything else is one line naming the path and what it is, exit 78.
import { closeSync, constants, fstatSync, openSync, readSync, statSync, type Stats } from 'node:fs';
import * as fs from './fs-async.js';
import { AgentError } from './errors.js';
import { errnoOf, fsError } from './fs-errors.js';
import { quotePath } from './text.js';

/** How large each kind of file the agent reads may be; one home for these bounds. */
export const READ_LIMITS = {
  /** config.json: a few dozen keys. */
  config: 64 * 1024,
  /** One line, a semver of at most 256 characters (config/firmware.ts), with room for a comment line. */
  firmwareVersion: 4 * 1024,
  /** A profile: at most 32 channels of a few hundred bytes (firmware-profiles/schema.json). */
  profile: 256 * 1024,
  /** credentials.json: two tokens and a few times. */
  credentials: 64 * 1024,
  secret: 16 * 1024,
  /** status.json: the snapshot and what each unit adds. */
  status: 1024 * 1024,
  /** caFile: a private CA or a few (a whole system bundle is about 220 KiB). */
  caFile: 1024 * 1024,
  /** Small records: the attempt record, the run lock, /proc files, os-release, conf stores. */
  small: 64 * 1024,
} as const;

export interface ReadSpec {
  /** What the file is, for messages: "config file", "firmware profile". */
  what: string;
  maxBytes: number;
  /** The setting the path came from, for messages. */
  source?: string;
  /**
   * Called with the open descriptor's stat before anything is read: a check
   * on the file that was actually opened (a secret's mode). May throw.
   */
  onStat?: (st: Stats) => void;
}

/**
 * AgentError codes of the refusals here, for callers that treat them apart.
 * A directory gets EISDIR, the errno reading one would give.
 */
export const NOT_REGULAR = 'EFTYPE';
export const TOO_LARGE = 'EFBIG';

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;
/** First read buffer for a file whose size the kernel does not tell (procfs). */
const FIRST_CHUNK = 8 * 1024;

/** "a FIFO", "a directory", ... what a path turned out to be. */
export function describeFileType(st: Stats): string {
  if (st.isFile()) return 'a regular file';
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  if (st.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

const fromOf = (source: string | undefined): string => (source === undefined ? '' : ` (from ${source})`);

function notRegular(file: string, st: Stats, spec: Pick<ReadSpec, 'what' | 'source'>): AgentError {
  return new AgentError('config', `${spec.what} ${quotePath(file)}${fromOf(spec.source)} is ${describeFileType(st)}, not a regular file; point the setting at a regular file`, {
    code: st.isDirectory() ? 'EISDIR' : NOT_REGULAR,
    source: spec.source ?? file,
  });
}

function tooLarge(file: string, size: number | undefined, spec: ReadSpec): AgentError {
  const seen = size === undefined ? 'more than that' : `${size} bytes`;
  return new AgentError('config', `${spec.what} ${quotePath(file)}${fromOf(spec.source)} is larger than the ${spec.maxBytes} bytes a ${spec.what} may hold (${seen}); point the setting at the right file`, {
    code: TOO_LARGE,
    source: spec.source ?? file,
  });
}

/** The checks made on the path and again on the open descriptor. */
function checkStat(file: string, st: Stats, spec: ReadSpec): void {
  if (!st.isFile()) throw notRegular(file, st, spec);
  if (st.size > spec.maxBytes) throw tooLarge(file, st.size, spec);
}

const rethrow = (err: unknown, file: string, spec: ReadSpec): AgentError => (err instanceof AgentError ? err : fsError(err, `read the ${spec.what}`, file, spec.source));

// Reads go into a buffer that grows up to spec.maxBytes + 1 (one byte more
// than allowed tells a file past the bound from one that fits): the size a
// stat gives is only a hint, 0 for procfs and stale for a file being written.
const firstBuffer = (size: number, spec: ReadSpec): Buffer => Buffer.allocUnsafe(Math.min(spec.maxBytes + 1, Math.max(size + 1, FIRST_CHUNK)));

/** A full buffer: a bigger one with the same bytes, or the refusal when it already holds more than the bound. */
function grown(buf: Buffer, file: string, spec: ReadSpec): Buffer {
  if (buf.length > spec.maxBytes) throw tooLarge(file, undefined, spec);
  const bigger = Buffer.allocUnsafe(Math.min(spec.maxBytes + 1, buf.length * 2));
  buf.copy(bigger);
  return bigger;
}

/** Reads a regular file of at most spec.maxBytes; throws AgentError (fs errors through fsError). */
export function readBoundedFileSync(file: string, spec: ReadSpec): Buffer {
  let fd: number;
  try {
    checkStat(file, statSync(file), spec);
    fd = openSync(file, OPEN_FLAGS);
  } catch (err) {
    throw rethrow(err, file, spec);
  }
  try {
    const st = fstatSync(fd);
    checkStat(file, st, spec);
    spec.onStat?.(st);
    let buf = firstBuffer(st.size, spec);
    let n = 0;
    for (;;) {
      if (n === buf.length) buf = grown(buf, file, spec);
      const got = readSync(fd, buf, n, buf.length - n, null);
      if (got === 0) return buf.subarray(0, n);
      n += got;
    }
  } catch (err) {
    throw rethrow(err, file, spec);
  } finally {
    closeSync(fd);
  }
}

export const readBoundedTextSync = (file: string, spec: ReadSpec): string => readBoundedFileSync(file, spec).toString('utf8');

/** The same as readBoundedFileSync, off the event loop's thread (for the daemon). */
export async function readBoundedFile(file: string, spec: ReadSpec): Promise<Buffer> {
  let handle: fs.FileHandle;
  try {
    checkStat(file, await fs.stat(file), spec);
    handle = await fs.open(file, OPEN_FLAGS);
  } catch (err) {
    throw rethrow(err, file, spec);
  }
  try {
    const st = await handle.stat();
    checkStat(file, st, spec);
    spec.onStat?.(st);
    let buf = firstBuffer(st.size, spec);
    let n = 0;
    for (;;) {
      if (n === buf.length) buf = grown(buf, file, spec);
      const { bytesRead } = await handle.read(buf, n, buf.length - n, null);
      if (bytesRead === 0) return buf.subarray(0, n);
      n += bytesRead;
    }
  } catch (err) {
    throw rethrow(err, file, spec);
  } finally {
    await handle.close();
  }
}

export const readBoundedText = async (file: string, spec: ReadSpec): Promise<string> => (await readBoundedFile(file, spec)).toString('utf8');

/** True when `err` (raw or mapped by fsError) says the path does not exist. */
export const isMissing = (err: unknown): boolean => errnoOf(err) === 'ENOENT';

/**
 * For a file that a library opens itself (conf's stores): its stat when it
 * is a regular file within the bound, undefined when it does not exist;
 * anything else throws, so the library never opens a FIFO or a device.
 */
export function checkRegularFileSync(file: string, spec: Omit<ReadSpec, 'onStat'>): Stats | undefined {
  try {
    const st = statSync(file);
    checkStat(file, st, spec);
    return st;
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw rethrow(err, file, spec);
  }
}

/**
 * A directory the agent reads or writes in (the state dir, the queue): true
 * when it is one, false when it does not exist; anything else throws one line
 * naming the path, the setting and what it is.
 */
export function checkDirectorySync(dir: string, spec: { what: string; source?: string }): boolean {
  let st: Stats;
  try {
    st = statSync(dir);
  } catch (err) {
    if (isMissing(err)) return false;
    throw fsError(err, `use the ${spec.what}`, dir, spec.source);
  }
  if (st.isDirectory()) return true;
  throw new AgentError('config', `${spec.what} ${quotePath(dir)}${fromOf(spec.source)} is ${describeFileType(st)}, not a directory; point the setting at a directory`, {
    code: 'ENOTDIR',
    source: spec.source ?? dir,
  });
}
