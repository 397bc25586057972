// The runtime dir's files are snapshots that change often and matter only
// while this boot lasts: written whole (temp and rename, no fsync: tmpfs),
// newest wins, one write at a time.
import path from 'node:path';
import { ensureDir } from '../../lib/ensure-dir.js';
import { writeFileAtomic } from '../../lib/atomic-write.js';

// Status holds no secret, so we ask for no more privacy than the umask and
// the directory give. Under the unit that is UMask=0077 (the file ends up
// 0600) in a RuntimeDirectoryMode=0700 dir: only the c2c-agent user and root
// can run `c2c-agent status`. A manual run's file is as open as its umask
// and --runtime-dir allow.
const STATUS_MODE = 0o644;

/**
 * Writes snapshots one at a time, newest wins: a burst of transitions
 * coalesces into one write, and an older snapshot never lands after a newer one.
 * A snapshot may be given as the function that makes it: it is made when its
 * write begins, after the loop has turned, so the state change that asked for
 * it (the start's first heartbeat, say) goes on first.
 */
export class FileSink<T> {
  private pending: T | (() => T | undefined) | undefined;
  private writing: Promise<void> | undefined;

  constructor(
    readonly file: string,
    private readonly onError: (err: unknown) => void = () => {},
    private readonly mode = STATUS_MODE,
  ) {}

  write(value: T | (() => T | undefined)): void {
    this.pending = value;
    if (!this.writing) this.writing = this.drain();
  }

  /** Resolves once everything written so far is on disk. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending !== undefined) {
        const next = this.pending;
        this.pending = undefined;
        try {
          await ensureDir(path.dirname(this.file));
          const value = typeof next === 'function' ? (next as () => T | undefined)() : next;
          if (value === undefined) continue;
          await writeFileAtomic(this.file, `${JSON.stringify(value, null, 2)}\n`, { mode: this.mode, durable: false });
        } catch (err) {
          this.onError(err);
        }
      }
    } finally {
      this.writing = undefined;
    }
  }
}

