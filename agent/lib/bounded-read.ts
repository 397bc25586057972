// Every file the agent reads from a path someone else chose (a config, a
// profile, a token file, a status file, a queue segment) is read through
// here: opened without blocking (a FIFO must not wedge the process or make
// it deaf to SIGTERM), checked to be a regular file after it is open (so a
// rename between a check and the open cannot slip a device in), and read up
// to a bound that fits its job (/dev/zero or a 10 GB file must not fill
// memory). Anything else is one line naming the path and what it is, exit 78.
import { closeSync, constants, fstatSync, openSync, readSync, promises as fs, type Stats } from 'node:fs';
import { AgentError } from './errors.js';
import { fsError } from './fs-errors.js';
import { quote } from './text.js';

/** How large each kind of file the agent reads may be; one home for these bounds. */
export const READ_LIMITS = {
  config: 64 * 1024,
  firmwareVersion: 4 * 1024,
  profile: 256 * 1024,
  credentials: 64 * 1024,
  secret: 16 * 1024,
  status: 1024 * 1024,
  small: 64 * 1024,
} as const;

export interface ReadSpec {
  /** What the file is, for messages: "config file", "firmware profile". */
  what: string;
  maxBytes: number;
  /** The setting the path came from, for messages. */
  source?: string;
}

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/** "a FIFO", "a directory", ... for a file that is not a regular one. */
export function describeFileType(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  if (st.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

function notRegular(file: string, st: Stats, spec: ReadSpec): AgentError {
  const from = spec.source === undefined ? '' : ` (from ${spec.source})`;
  return new AgentError('config', `${spec.what} ${quote(file)}${from} is ${describeFileType(st)}, not a regular file; point the setting at a regular file`, {
    source: spec.source ?? file,
  });
}

function tooLarge(file: string, size: number, spec: ReadSpec): AgentError {
  const from = spec.source === undefined ? '' : ` (from ${spec.source})`;
  return new AgentError('config', `${spec.what} ${quote(file)}${from} is larger than ${spec.maxBytes} bytes (${size > spec.maxBytes ? size : 'it grew while read'}); that is not a ${spec.what}`, {
    source: spec.source ?? file,
  });
}

/** Reads a regular file of at most spec.maxBytes; throws AgentError (fs errors through fsError). */
export function readBoundedFileSync(file: string, spec: ReadSpec): Buffer {
  let fd: number;
  try {
    fd = openSync(file, OPEN_FLAGS);
  } catch (err) {
    throw fsError(err, `read the ${spec.what}`, file, spec.source);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw notRegular(file, st, spec);
    if (st.size > spec.maxBytes) throw tooLarge(file, st.size, spec);
    // One byte more than allowed tells a file that grew past the bound from one that fits.
    const buf = Buffer.allocUnsafe(Math.min(spec.maxBytes, st.size) + 1);
    let n = 0;
    for (;;) {
      const r = readSync(fd, buf, n, buf.length - n, null);
      if (r === 0) break;
      n += r;
      if (n === buf.length) {
        if (n > spec.maxBytes) throw tooLarge(file, n, spec);
        break;
      }
    }
    return buf.subarray(0, n);
  } catch (err) {
    if (err instanceof AgentError) throw err;
    throw fsError(err, `read the ${spec.what}`, file, spec.source);
  } finally {
    closeSync(fd);
  }
}

export const readBoundedTextSync = (file: string, spec: ReadSpec): string => readBoundedFileSync(file, spec).toString('utf8');

/** The same as readBoundedFileSync, off the event loop's thread (for the daemon). */
export async function readBoundedFile(file: string, spec: ReadSpec): Promise<Buffer> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, OPEN_FLAGS);
  } catch (err) {
    throw fsError(err, `read the ${spec.what}`, file, spec.source);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw notRegular(file, st, spec);
    if (st.size > spec.maxBytes) throw tooLarge(file, st.size, spec);
    const buf = Buffer.allocUnsafe(Math.min(spec.maxBytes, st.size) + 1);
    let n = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, n, buf.length - n, null);
      if (bytesRead === 0) break;
      n += bytesRead;
      if (n === buf.length) {
        if (n > spec.maxBytes) throw tooLarge(file, n, spec);
        break;
      }
    }
    return buf.subarray(0, n);
  } catch (err) {
    if (err instanceof AgentError) throw err;
    throw fsError(err, `read the ${spec.what}`, file, spec.source);
  } finally {
    await handle.close();
  }
}

export const readBoundedText = async (file: string, spec: ReadSpec): Promise<string> => (await readBoundedFile(file, spec)).toString('utf8');
