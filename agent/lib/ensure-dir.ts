// mkdir -p without fs.mkdir({recursive: true}): on Node 20 that call never
// returns for a path under /proc (the kernel answers ENOENT for the new
// entry, Node retries through the parent, which exists, forever). A bad
// --runtime-dir must end in a clear error, not a wedged daemon, so walk the
// path ourselves: the loop is bounded by the path's depth.
import * as fs from './fs-async.js';
import path from 'node:path';

export async function ensureDir(dir: string, mode = 0o700): Promise<void> {
  const missing: string[] = [];
  let current = path.resolve(dir);
  for (;;) {
    try {
      const st = await fs.stat(current);
      // Shaped like Node's own errors (code, errno, syscall, path), so lib/fs-errors.ts maps it like them.
      if (!st.isDirectory()) throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${current}'`), { code: 'ENOTDIR', errno: -20, syscall: 'mkdir', path: current });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      missing.push(current);
      const parent = path.dirname(current);
      if (parent === current) break;
      current = parent;
    }
  }
  for (const d of missing.reverse()) {
    try {
      await fs.mkdir(d, { mode });
    } catch (err) {
      // Someone else made it between our stat and mkdir: fine.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}
