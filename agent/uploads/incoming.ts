// Files handed over through the queue's incoming/ folder (upload-request.ts):
// `c2c-agent upload` without a daemon's API, and a changed clip handed back
// by the upload worker, which must hold still for the settle time before it
// is queued again (and pass the roots' checks once more). The folder is
// watched through lib/dir-watcher.ts, with a slow poll as the truth; every
// look runs in the uploads unit's line of work (work-line.ts).
import * as fs from '../lib/fs-async.js';
import path from 'node:path';
import type { Clock, Timer } from '../lib/clock.js';
import { DirWatcher } from '../lib/dir-watcher.js';
import type { Logger } from '../lib/logger.js';
import { readUploadRequest, INCOMING_DIR } from './upload-request.js';
import type { UploadPayload } from './upload-item.js';
import { resolveUploadPath, type UploadRoots } from './upload-paths.js';
import type { WorkLine } from './work-line.js';

/**
 * incoming/ is watched, so a request is taken as soon as `upload` writes it;
 * this slow look (agent ms) only covers a file system whose watch misses
 * events. A fast poll would list a directory thousands of times an hour to
 * find nothing, and allocate for it.
 */
const INCOMING_POLL_MS = 60_000;
/** A changed file is looked at no more often than this (agent ms), whatever the settle time: a zero would spin. */
const SETTLE_LOOK_MIN_MS = 1_000;

/** A file handed back after a change: its (ino, size, mtime, ctime) at the last look. */
interface Settling {
  p: UploadPayload;
  sig?: string;
}

export interface IncomingDeps {
  queueDir: string;
  /** Agent ms a file handed back after a change must hold still before it is queued again. */
  settleMs: number;
  /** The roots' checks a changed file must pass again (upload-paths.ts); absent: not checked (unit tests). */
  roots?: UploadRoots;
  clock: Clock;
  logger?: Logger;
  line: WorkLine;
  /** Queues one file, by the unit's rules (the index, the queue, recordings). */
  queue: (p: UploadPayload) => Promise<void>;
}

export class IncomingRequests {
  private incoming: DirWatcher | undefined;
  private running = false;
  /** Files to queue once they hold still, by the request file that asked (removed once all are queued or gone). */
  private readonly settling = new Map<string, Settling[]>();
  private settleTimer: Timer | undefined;
  /** The folder's creation under way: stop() waits for it, so nothing is made in the queue dir after a stop. */
  private making: Promise<void> = Promise.resolve();

  constructor(private readonly d: IncomingDeps) {}

  start(): void {
    this.running = true;
    this.watchIncoming();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.settleTimer?.cancel();
    this.settleTimer = undefined;
    this.incoming?.stop();
    await this.making.catch(() => undefined);
  }

  /**
   * Watches incoming/ (created once, when missing) and looks at it: at once,
   * after a watch event, and every INCOMING_POLL_MS; without a watch the
   * slow poll alone takes requests.
   */
  private watchIncoming(): void {
    const dir = path.join(this.d.queueDir, INCOMING_DIR);
    const incoming = new DirWatcher({
      clock: this.d.clock,
      pollMs: INCOMING_POLL_MS,
      look: () => this.lookAtIncoming(incoming, dir),
      what: 'the upload requests folder',
      logger: this.d.logger,
    });
    this.incoming = incoming;
    this.making = fs
      .mkdir(dir, { recursive: true, mode: 0o700 })
      .catch((err: unknown) => this.d.logger?.warn({ dir, err: String(err) }, 'cannot create the upload requests folder'))
      .then(() => {
        if (!this.running || this.incoming !== incoming) return;
        incoming.start();
        this.lookAtIncoming(incoming, dir);
      });
  }

  /** Watches incoming/ again (made anew, or its watch failed) and takes what is in it, one look at a time. */
  private lookAtIncoming(incoming: DirWatcher, dir: string): void {
    if (!this.running) return;
    incoming.setDirs([dir]);
    this.d.line.then(() => this.takeIncoming());
  }

  /**
   * Requests from `c2c-agent upload`: queued, then removed (a crash between
   * the two only queues a duplicate the check above drops). A request to
   * wait (a file that changed while it uploaded) stays until its files
   * held still and were queued.
   */
  private async takeIncoming(): Promise<void> {
    const dir = path.join(this.d.queueDir, INCOMING_DIR);
    let names: string[];
    try {
      names = (await fs.readdir(dir)).filter((n) => n.endsWith('.json')).sort();
    } catch {
      return;
    }
    let waiting = false;
    for (const name of names) {
      const file = path.join(dir, name);
      if (this.settling.has(file)) continue;
      const req = await readUploadRequest(file);
      if (req.kind === 'ok' && req.settle) {
        this.settling.set(file, req.files.map((p) => ({ p })));
        waiting = true;
        continue;
      }
      if (req.kind === 'ok') for (const p of req.files) await this.d.queue(p);
      else this.d.logger?.warn({ file, reason: req.reason }, 'ignoring an unreadable upload request');
      await fs.unlink(file).catch(() => undefined);
    }
    // The first look at a new one now: the file must then hold still for the settle time.
    if (waiting) await this.lookAtSettling();
  }

  /** Queues each waiting file that kept its (ino, size, mtime, ctime) since the last look; forgets one that is gone. */
  private async lookAtSettling(): Promise<void> {
    for (const [request, files] of this.settling) {
      for (const f of [...files]) {
        let st;
        try {
          st = await fs.stat(f.p.path);
        } catch (err) {
          this.d.logger?.info({ name: f.p.name, code: (err as NodeJS.ErrnoException).code }, 'a changed file is gone before it held still; not uploaded again');
          files.splice(files.indexOf(f), 1);
          continue;
        }
        if (!st.isFile()) {
          this.d.logger?.info({ name: f.p.name }, 'a changed file is no longer a regular file; not uploaded again');
          files.splice(files.indexOf(f), 1);
          continue;
        }
        const sig = `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
        if (f.sig !== sig) {
          f.sig = sig;
          continue;
        }
        files.splice(files.indexOf(f), 1);
        // stat() above followed links: the file queued is the one the roots' checks opened, without following a link out.
        const v = this.d.roots === undefined ? undefined : await resolveUploadPath(f.p.path, this.d.roots);
        if (v?.ok === false) {
          this.d.logger?.warn({ name: f.p.name, reason: v.reason }, 'a changed file no longer passes the checks on what is uploaded; not uploaded again');
          continue;
        }
        const id = v?.file ?? { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, dev: st.dev };
        await this.d.queue({ ...f.p, size: id.size, mtimeMs: id.mtimeMs, ino: id.ino, dev: id.dev });
      }
      if (files.length === 0) {
        this.settling.delete(request);
        await fs.unlink(request).catch(() => undefined);
      }
    }
    this.armSettle();
  }

  private armSettle(): void {
    if (!this.running || this.settling.size === 0 || this.settleTimer !== undefined) return;
    this.settleTimer = this.d.clock.setTimer(() => {
      this.settleTimer = undefined;
      this.d.line.then(() => this.lookAtSettling());
    }, Math.max(SETTLE_LOOK_MIN_MS, this.d.settleMs));
  }
}
