// The outbox's file operations on the real file system. Files are created
// 0600 and the queue directory 0700: the queue holds what the unit reports
// about its cameras, for this user only.
import { promises as fs } from 'node:fs';
import { syncDirectory } from '../lib/atomic-write.js';
import { ensureDir } from '../lib/ensure-dir.js';
import type { OutboxFs } from './types.js';

export function nodeOutboxFs(): OutboxFs {
  return {
    mkdir: (dir) => ensureDir(dir, 0o700),
    readdir: (dir) => fs.readdir(dir),
    readFile: (file) => fs.readFile(file),
    append: (file, data) => fs.appendFile(file, data, { mode: 0o600 }),
    async fsync(file) {
      const handle = await fs.open(file, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    },
    fsyncDir: (dir) => syncDirectory(dir),
    truncate: (file, length) => fs.truncate(file, length),
    rename: (from, to) => fs.rename(from, to),
    unlink: (file) => fs.unlink(file),
  };
}
