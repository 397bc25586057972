// One watcher of directories for the daemon's three looks at the file
// system: channel detection (channels/detect.ts), finished clips
// (uploads/media-watcher.ts) and upload requests in the queue's incoming/
// (uploads/uploads-unit.ts). The owner does the looking; this decides when.
//
// fs.watch is only a hint: sysfs and procfs send no inotify events, a full
// inotify queue drops them, a watch stops without a word when its directory
// is removed, and a directory made again under the same name is a new one
// that nobody watches. So a slow poll is the truth and an event only brings
// the next look forward. After each look the owner says which directories
// to watch (setDirs): new ones are armed, gone or remade ones closed and
// armed again. All timing is on the injected Clock (lib/clock.ts).
import { statSync, watch as fsWatch } from 'node:fs';
import type { Clock, Timer } from './clock.js';
import type { Logger } from './logger.js';
import { describeDuration } from './text.js';

/**
 * Events within this many agent ms of the first make one look: udev adds a
 * device as a burst of nodes, a copy from a card creates files in a burst,
 * `c2c-agent upload` writes a request as create, write and rename.
 */
export const WATCH_COALESCE_MS = 250;

export interface DirWatch {
  close(): void;
}

/**
 * Starts watching `dir`: `onEvent` per change (fs.watch's event type and
 * file name, when it gives them), `onDead` when the watch stops on its own.
 * Throws when it cannot start.
 */
export type WatchDir = (dir: string, onEvent: (type?: string, name?: string) => void, onDead: (err: unknown) => void) => DirWatch;

const nodeWatch: WatchDir = (dir, onEvent, onDead) => {
  const w = fsWatch(dir, { persistent: false }, (type, name) => onEvent(type, typeof name === 'string' ? name : undefined));
  w.on('error', (err) => {
    w.close();
    onDead(err);
  });
  return { close: () => w.close() };
};

export interface DirWatcherOptions {
  clock: Clock;
  /** Agent ms between looks when no event brings one forward. */
  pollMs: number;
  /**
   * Look now, then call setDirs with the directories to watch. Called after
   * a burst of events, at each poll and when a watch stops on its own; never
   * before start() or after stop().
   */
  look: () => void;
  /** Whether an event is worth a look (default: every one). */
  worthALook?: (dir: string, type: string | undefined, name: string | undefined) => boolean;
  /** Replaces fs.watch (tests); `null` turns watching off and the poll alone looks. */
  watch?: WatchDir | null;
  /** What the directories are, for log lines: "a channel directory". */
  what: string;
  logger?: Logger;
}

interface Armed {
  watch: DirWatch;
  /** The directory's identity when armed: one removed and made again needs a new watch. */
  id: string | undefined;
  /** 'arming' while the watch function runs: a watch that dies inside it is never stored. */
  state: 'arming' | 'on' | 'closed';
}

export class DirWatcher {
  private running = false;
  private pollTimer: Timer | undefined;
  private eventTimer: Timer | undefined;
  private readonly armed = new Map<string, Armed>();
  /** Directories whose watch stopped since the last poll: armed again by the poll, so a watch that keeps failing costs one try a poll and never spins. */
  private readonly cooling = new Set<string>();
  /** The last trouble logged per directory: one that cannot be watched warns once, not at every poll. */
  private readonly troubled = new Map<string, string>();

  constructor(private readonly options: DirWatcherOptions) {}

  /** Arms the poll; the owner's first look (and its setDirs) comes after. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.armPoll();
  }

  /** Cancels every timer and closes every watch. */
  stop(): void {
    this.running = false;
    this.pollTimer?.cancel();
    this.eventTimer?.cancel();
    this.pollTimer = this.eventTimer = undefined;
    for (const a of this.armed.values()) this.close(a);
    this.armed.clear();
    this.cooling.clear();
    this.troubled.clear();
  }

  /** The directories to watch from now on: others are closed, remade ones armed again, new ones armed (unless their watch stopped since the last poll). */
  setDirs(dirs: Iterable<string>): void {
    const watchFn = this.options.watch === undefined ? nodeWatch : this.options.watch;
    if (!this.running || watchFn === null) return;
    const wanted = new Set(dirs);
    for (const [dir, a] of this.armed) {
      if (!wanted.has(dir) || identityOf(dir) !== a.id) {
        this.close(a);
        this.armed.delete(dir);
      }
    }
    for (const dir of this.troubled.keys()) if (!wanted.has(dir)) this.troubled.delete(dir);
    for (const dir of wanted) if (!this.armed.has(dir) && !this.cooling.has(dir)) this.arm(watchFn, dir);
  }

  private arm(watchFn: WatchDir, dir: string): void {
    const a: Armed = { watch: { close: () => undefined }, id: identityOf(dir), state: 'arming' };
    try {
      a.watch = watchFn(dir, (type, name) => this.onEvent(dir, type, name), (err) => this.died(dir, a, err));
    } catch (err) {
      // Out of inotify watches, or the directory went away: the poll still looks.
      this.trouble(dir, err, 'cannot watch');
      return;
    }
    if (a.state === 'closed') return a.watch.close();
    a.state = 'on';
    this.armed.set(dir, a);
  }

  private close(a: Armed): void {
    a.state = 'closed';
    a.watch.close();
  }

  private onEvent(dir: string, type: string | undefined, name: string | undefined): void {
    if (!this.running || this.eventTimer !== undefined) return;
    if (this.options.worthALook?.(dir, type, name) === false) return;
    this.eventTimer = this.options.clock.setTimer(() => {
      this.eventTimer = undefined;
      this.options.look();
    }, WATCH_COALESCE_MS);
  }

  private died(dir: string, a: Armed, err: unknown): void {
    if (!this.running || a.state === 'closed') return;
    const arming = a.state === 'arming';
    this.cooling.add(dir);
    this.trouble(dir, err, 'stopped watching');
    // Died inside arm(), which closes it: the look that armed it is still running.
    if (arming) {
      a.state = 'closed';
      return;
    }
    this.close(a);
    this.armed.delete(dir);
    // Whatever stopped the watch may have changed the directory.
    this.options.look();
  }

  private armPoll(): void {
    if (!this.running) return;
    this.pollTimer = this.options.clock.setTimer(() => {
      this.pollTimer = undefined;
      if (!this.running) return;
      this.cooling.clear();
      // A watch that held from one poll to the next ends its directory's trouble: a new one is said again.
      for (const dir of this.armed.keys()) this.troubled.delete(dir);
      try {
        this.options.look();
      } finally {
        this.armPoll();
      }
    }, this.options.pollMs);
  }

  private trouble(dir: string, err: unknown, doing: string): void {
    const code = (err as NodeJS.ErrnoException | undefined)?.code ?? String(err);
    const line = `${doing} ${this.options.what}; looking every ${describeDuration(this.options.pollMs)} instead`;
    // ENOENT: the directory went between the look and the watch; the next look sees it gone.
    const quiet = code === 'ENOENT' || this.troubled.get(dir) === code;
    this.troubled.set(dir, code);
    if (quiet) this.options.logger?.debug({ dir, err: String(err) }, line);
    else this.options.logger?.warn({ dir, err: String(err) }, line);
  }
}

/** Device, inode and birth time: a directory made again at once often gets the same inode number back. */
function identityOf(dir: string): string | undefined {
  try {
    const s = statSync(dir, { bigint: true, throwIfNoEntry: false });
    return s === undefined ? undefined : `${s.dev}:${s.ino}:${s.birthtimeNs}`;
  } catch {
    return undefined;
  }
}
