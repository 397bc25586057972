// Which files someone who can reach the local API may have uploaded: only
// regular files inside the media dir or a configured upload root
// (setting uploadRoots), reached without a symbolic link that leads out of
// it, and with one name only. Without this, anyone allowed on the socket
// could have the daemon send credentials.json or /etc/shadow to the cloud.
//
// The path is resolved (realpath) and the result must lie inside the real
// path of a root; it is then opened with O_NOFOLLOW (a last component
// swapped for a link after the check is refused by the kernel) and fstat'ed
// through that descriptor, so the identity queued (dev, ino, size, mtime) is
// the file that passed the check. Where the descriptor's file lies is asked
// of the kernel (/proc/self/fd) after the open, so a folder on the way
// swapped for a link between the realpath and the open is caught too. The
// upload workers make the same checks on the descriptor they read every
// byte from (version-check.ts), at every attempt.
//
// A file with more than one name (a hard link) is refused: its other name
// may be anywhere on the same file system, credentials.json among them, and
// no path check can see it. Camera recorders write one name per clip.
import { constants, promises as fs } from 'node:fs';
import path from 'node:path';
import { describeFileType } from '../lib/bounded-read.js';
import { fileTypeOf } from './file-type.js';
import type { UploadPayload } from './upload-item.js';

export type PathVerdict = { ok: true; file: UploadPayload } | { ok: false; status: 400 | 403 | 404; reason: string };

export interface UploadRoots {
  /** The media dir (first, relative paths are taken from it) and the upload roots, as configured. */
  roots: string[];
  /** Channel folder names inside the media dir: a file in one is that channel's. */
  channelKeys?: readonly string[];
  /**
   * The agent's own dirs (state, runtime, config, credentials): nothing whose
   * real path lies in one is queued or read, whatever a root resolves to.
   * A root's real path is taken as it is at each check, so whoever may
   * write the folder holding a root can put a link to the state dir in its
   * place: credentials.json would then lie inside the root.
   */
  own?: readonly string[];
}

const inside = (root: string, p: string): string | undefined => {
  const rel = path.relative(root, p);
  // A climb out is `..` as a whole segment; `..x.mp4` is a name inside.
  const climbs = rel === '..' || rel.startsWith(`..${path.sep}`);
  return rel !== '' && !climbs && !path.isAbsolute(rel) ? rel : undefined;
};

const codeOf = (err: unknown): string => (err as NodeJS.ErrnoException).code ?? 'error';

/**
 * Why a regular file is not uploaded for its names, or undefined: one with
 * more than one (a hard link) may be another file's second name, a file of
 * the state dir's among them (docs/uploads.md, "Which files are taken").
 */
export function linkRefusal(st: { nlink?: number }): string | undefined {
  if (st.nlink === undefined || st.nlink <= 1) return undefined;
  return `a file with ${st.nlink} names (hard links): it may be another file's second name, so it is not uploaded`;
}

/**
 * Where the file open at `fd` lies now, by the kernel's account; without
 * /proc, the real path of `given` when that still names the same file.
 */
async function whereOpen(fd: number, given: string, id: { dev: number; ino: number }): Promise<string | undefined> {
  try {
    return await fs.readlink(`/proc/self/fd/${fd}`);
  } catch {
    const real = await fs.realpath(given).catch(() => undefined);
    const st = real === undefined ? undefined : await fs.stat(real).catch(() => undefined);
    return st !== undefined && st.dev === id.dev && st.ino === id.ino ? real : undefined;
  }
}

/** The own dir (as configured) the file open at `where` lies in, by its real path now; undefined when none. */
async function ownDirHolding(where: string, own: readonly string[]): Promise<string | undefined> {
  for (const d of own) {
    const real = await fs.realpath(d).catch(() => path.resolve(d));
    if (where === real || inside(real, where) !== undefined) return d;
  }
  return undefined;
}

/**
 * The root check on a descriptor already open, made by the upload workers
 * before they read a byte of an attempt: the file it refers to must lie
 * inside the real path, now, of the root its path is under. The reason when
 * it does not; undefined when it does, and for a path under no root (queued
 * by `upload` without a daemon, from anywhere, by the agent's own user: the
 * local API and the media watcher queue only paths under a root). Under a
 * root or not, a file lying in one of the agent's own dirs (`own`) is refused.
 */
export async function openedOutsideRoots(given: string, fd: number, id: { dev: number; ino: number }, r: UploadRoots): Promise<string | undefined> {
  const p = path.resolve(given);
  const root = r.roots.map((d) => path.resolve(d)).find((d) => inside(d, p) !== undefined);
  const own = r.own ?? [];
  if (root === undefined && own.length === 0) return undefined;
  const where = await whereOpen(fd, p, id);
  const mine = where === undefined ? undefined : await ownDirHolding(where, own);
  if (mine !== undefined) return `${p} is one of the agent's own files (in ${mine}; a folder or link on its way leads there): never uploaded`;
  if (root === undefined) return undefined;
  let realRoot: string;
  try {
    realRoot = await fs.realpath(root);
  } catch (err) {
    return `${root} cannot be resolved (${codeOf(err)})`;
  }
  if (where === undefined || inside(realRoot, where) === undefined) return `${p} leads out of ${root} (a folder or link on its way was changed)`;
  return undefined;
}

/** Checks one path given to POST /v1/uploads; on success the payload to queue. */
export async function resolveUploadPath(input: string, r: UploadRoots): Promise<PathVerdict> {
  const roots = r.roots.map((d) => path.resolve(d));
  const base = roots[0];
  if (base === undefined) return { ok: false, status: 403, reason: 'no media dir and no upload roots are configured: the daemon queues no file by path (set mediaDir or uploadRoots)' };
  if (input === '' || input.includes('\0')) return { ok: false, status: 400, reason: 'an empty path, or one with a NUL byte' };
  const given = path.resolve(base, input);
  const lexical = roots.find((d) => inside(d, given) !== undefined);
  let root: string | undefined;
  let real: string;
  let rel: string | undefined;
  if (lexical !== undefined) {
    root = lexical;
    let realRoot: string;
    try {
      realRoot = await fs.realpath(root);
      real = await fs.realpath(given);
    } catch (err) {
      const code = codeOf(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return { ok: false, status: 404, reason: `${given} does not exist` };
      if (code === 'ELOOP') return { ok: false, status: 403, reason: `${given}: a symbolic link loop` };
      return { ok: false, status: 403, reason: `${given} cannot be resolved (${code})` };
    }
    rel = inside(realRoot, real);
    if (rel === undefined) return { ok: false, status: 403, reason: `${given} leads through a symbolic link out of ${root}` };
  } else {
    // Not under a root as written: taken when its resolved path lies in a resolved root (a media dir configured
    // through a link, named by its real path). Whether such a path exists is not said: it is outside either way.
    const outside: PathVerdict = { ok: false, status: 403, reason: `${given} is outside the media dir and the upload roots (${roots.join(', ')})` };
    const resolved = await fs.realpath(given).catch(() => undefined);
    if (resolved === undefined) return outside;
    real = resolved;
    for (const d of roots) {
      const realRoot = await fs.realpath(d).catch(() => undefined);
      rel = realRoot === undefined ? undefined : inside(realRoot, real);
      if (rel !== undefined) {
        root = d;
        break;
      }
    }
    if (root === undefined || rel === undefined) return outside;
  }
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const st = await handle.stat();
    if (!st.isFile()) return { ok: false, status: 400, reason: `${given} is ${describeFileType(st)}, not a regular file` };
    const names = linkRefusal(st);
    if (names !== undefined) return { ok: false, status: 403, reason: `${given} is ${names}` };
    // A folder on the way swapped for a link between the realpath above and the open.
    const moved = await openedOutsideRoots(path.join(root, rel), handle.fd, st, { roots: [root], ...(r.own !== undefined && { own: r.own }) });
    if (moved !== undefined) return { ok: false, status: 403, reason: moved };
    // Named under the root as configured (the media watcher's form), so one file is one path whichever way it came.
    const p = path.join(root, rel);
    const name = path.basename(p);
    const parts = rel.split(path.sep);
    const channelKey = root === base && parts.length === 2 && r.channelKeys?.includes(parts[0]!) ? parts[0] : undefined;
    const file: UploadPayload = { path: p, name, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, dev: st.dev, ...fileTypeOf(name), ...(channelKey !== undefined && { channelKey }) };
    return { ok: true, file };
  } catch (err) {
    const code = codeOf(err);
    if (code === 'ELOOP') return { ok: false, status: 403, reason: `${given} became a symbolic link while it was checked` };
    if (code === 'ENOENT') return { ok: false, status: 404, reason: `${given} does not exist` };
    return { ok: false, status: 403, reason: `${given} cannot be opened (${code})` };
  } finally {
    await handle?.close();
  }
}
