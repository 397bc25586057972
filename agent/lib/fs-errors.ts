// The one mapping from a file-system error to what the person is told: one
// line naming the path and what the agent was doing, a sysexits code, and
// advice. Every command and store uses it, so EACCES in `queue` reads the
// same as EACCES in `pair`, and none of them becomes "internal error" (exit 1
// stays for bugs). Codes that say the path is wrong, unreadable or on a
// read-only mount are configuration errors (78); a full disk or no free file
// descriptors may pass by themselves, so they are temporary (75). What is not
// a file-system error at all is a bug, and stays one (exit 1).
import { AgentError, type ErrorKind } from './errors.js';
import { quotePath } from './text.js';

interface Meaning {
  kind: ErrorKind;
  reason: string;
  advice: string;
}

const MEANINGS: Record<string, Meaning> = {
  ENOENT: { kind: 'config', reason: 'does not exist', advice: 'check the path (or create it)' },
  ENOTDIR: { kind: 'config', reason: 'a part of the path is not a directory', advice: 'check the path: a file stands where a directory should be' },
  EISDIR: { kind: 'config', reason: 'is a directory where a file was expected', advice: 'check the path' },
  ELOOP: { kind: 'config', reason: 'has too many levels of symbolic links (a loop)', advice: 'fix the symbolic links on the path' },
  EACCES: { kind: 'config', reason: 'permission denied', advice: "run as the agent's user or fix the owner and mode" },
  EPERM: { kind: 'config', reason: 'operation not permitted', advice: "run as the agent's user or fix the owner and mode" },
  EROFS: { kind: 'config', reason: 'is on a read-only file system', advice: 'point the setting at a writable file system' },
  ENAMETOOLONG: { kind: 'config', reason: 'name too long', advice: 'check the path' },
  EEXIST: { kind: 'config', reason: 'already exists', advice: 'remove it or choose another path' },
  ENXIO: { kind: 'config', reason: 'is a device or socket with nothing behind it', advice: 'point the setting at a regular file' },
  ENOSPC: { kind: 'disk', reason: 'no space left on the device', advice: 'free space on that file system, then try again' },
  EDQUOT: { kind: 'disk', reason: 'disk quota exceeded', advice: 'free space on that file system, then try again' },
  EMFILE: { kind: 'disk', reason: 'too many open files in this process', advice: 'try again; raise LimitNOFILE if it persists' },
  ENFILE: { kind: 'disk', reason: 'too many open files on this system', advice: 'try again later' },
  EIO: { kind: 'disk', reason: 'input/output error', advice: 'check the storage card; try again' },
  EBUSY: { kind: 'disk', reason: 'device or resource busy', advice: 'try again' },
  EAGAIN: { kind: 'disk', reason: 'resource temporarily unavailable', advice: 'try again' },
  ENOTEMPTY: { kind: 'config', reason: 'is a directory that is not empty', advice: 'check the path' },
  EXDEV: { kind: 'config', reason: 'crosses file systems', advice: 'keep the file and its directory on one file system' },
  ETXTBSY: { kind: 'disk', reason: 'is busy (a running program)', advice: 'try again' },
  EFBIG: { kind: 'disk', reason: 'file too large for the file system', advice: 'free space or check the file system' },
};

/** What the agent was doing, from the failed call's name, for errors no command put in its own words. */
const SYSCALLS: Record<string, string> = {
  open: 'open',
  read: 'read',
  write: 'write',
  scandir: 'list the directory',
  opendir: 'list the directory',
  mkdir: 'create the directory',
  rmdir: 'remove the directory',
  unlink: 'remove',
  rename: 'rename',
  stat: 'look at',
  lstat: 'look at',
  fstat: 'look at',
  fsync: 'flush to disk',
  ftruncate: 'truncate',
  link: 'link',
  copyfile: 'copy',
  chmod: 'change the mode of',
  chown: 'change the owner of',
  access: 'access',
};

export interface ErrnoLike {
  code: string;
  syscall?: string;
  path?: string;
}

/** True for Node's system errors (they carry a string `code` like 'ENOENT' and an errno). */
export function isFsError(err: unknown): err is ErrnoLike & Error {
  // Not `instanceof Error`: an error from another realm (node:vm, jest's module sandbox) fails that test.
  if (typeof err !== 'object' || err === null) return false;
  const e = err as Partial<ErrnoLike> & { errno?: unknown };
  return typeof e.code === 'string' && /^E[A-Z0-9]+$/.test(e.code) && (typeof e.errno === 'number' || typeof e.syscall === 'string');
}

/** The error's code when it is a file-system error, else undefined. */
export const fsCode = (err: unknown): string | undefined => (isFsError(err) ? err.code : undefined);

/** The code of a raw file-system error or of the AgentError fsError() made of one ('ENOENT'). */
export const errnoOf = (err: unknown): string | undefined => fsCode(err) ?? (err instanceof AgentError ? err.details.code : undefined);

/**
 * An error no command caught with its own words: the mapping with the failed
 * call's name. Only the codes above, which a machine's state explains; any
 * other (EBADF, EINVAL, EFAULT: a descriptor or argument the agent got wrong)
 * is a bug and stays one.
 */
export function uncaughtFsError(err: unknown): unknown {
  if (!isFsError(err) || MEANINGS[err.code] === undefined) return err;
  return fsError(err, SYSCALLS[err.syscall ?? ''] ?? `use (${err.syscall ?? 'a file'})`);
}

/**
 * One line for a failed file-system call: "cannot write the queue in
 * /var/lib/c2c-agent/queue: is on a read-only file system (EROFS); point the
 * setting at a writable file system". `doing` says what the agent was doing
 * ("write the queue", "read the config file"); `file` is the path it was at
 * (defaults to the one in the error); `source` names the setting that gave it.
 */
export function fsError(err: unknown, doing: string, file?: string, source?: string): AgentError {
  if (err instanceof AgentError) return err;
  if (!isFsError(err)) {
    // Not the file system's doing: a bug, which must not be dressed as a disk fault.
    const what = err instanceof Error ? err.message : String(err);
    return new AgentError('internal', `internal error while trying to ${doing}: ${what}; please report`, { cause: err });
  }
  const e: Partial<ErrnoLike> = err;
  const code = e.code ?? 'EIO';
  const at = file ?? e.path;
  const m = MEANINGS[code] ?? { kind: 'config' as ErrorKind, reason: `failed`, advice: 'check the path and its permissions' };
  const where = at === undefined ? '' : ` ${quotePath(at)}`;
  const from = source === undefined ? '' : ` (from ${source})`;
  const message = `cannot ${doing}${where}${from}: ${m.reason} (${code}); ${m.advice}`;
  return new AgentError(m.kind, message, { code, ...(at !== undefined ? { source: source ?? at } : source !== undefined ? { source } : {}) });
}
