// The outbox's file operations on the real file system. Files are created
// 0600 and the queue directory 0700: the queue holds what the unit reports
// about its cameras, for this user only.
import { constants } from 'node:fs';
import * as fs from '../lib/fs-async.js';
import { syncDirectory } from '../lib/atomic-write.js';
import { readBoundedFile } from '../lib/bounded-read.js';
import { ensureDir } from '../lib/ensure-dir.js';
import type { OutboxFs } from './types.js';

export function nodeOutboxFs(): OutboxFs {
  return {
    mkdir: (dir) => ensureDir(dir, 0o700),
    readdir: (dir) => fs.readdir(dir),
    // A FIFO or device under a segment's name must not block the open, nor /dev/zero fill memory.
    readFile: (file, maxBytes) => readBoundedFile(file, { what: 'queue segment', maxBytes }),
    append: (file, data) => fs.appendFile(file, data, { mode: 0o600 }),
    async fsync(file) {
      // Non-blocking, like the read: only segments that read as regular files get here, but one may be swapped meanwhile.
      const handle = await fs.open(file, constants.O_RDONLY | constants.O_NONBLOCK);
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
