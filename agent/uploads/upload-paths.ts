// Which files someone who can reach the local API may have uploaded: only
// regular files inside the media dir or a configured upload root
// (setting uploadRoots), reached without a symbolic link that leads out of
// it. Without this, anyone allowed on the socket could have the daemon send
// credentials.json or /etc/shadow to the cloud.
//
// The path is resolved (realpath) and the result must lie inside the real
// path of a root; it is then opened with O_NOFOLLOW (a last component
// swapped for a link after the check is refused by the kernel) and fstat'ed
// through that descriptor, so the identity queued (dev, ino, size, mtime) is
// the file that passed the check; the upload worker compares it again before
// each part (version-check.ts).
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
}

const inside = (root: string, p: string): string | undefined => {
  const rel = path.relative(root, p);
  // A climb out is `..` as a whole segment; `..x.mp4` is a name inside.
  const climbs = rel === '..' || rel.startsWith(`..${path.sep}`);
  return rel !== '' && !climbs && !path.isAbsolute(rel) ? rel : undefined;
};

const codeOf = (err: unknown): string => (err as NodeJS.ErrnoException).code ?? 'error';

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
