// Which files in the media dir are finished and can be uploaded. Cameras
// write clips in place with no "done" signal, so a file is ready once its
// size and mtime have held still for the settle time, or at once when it
// first shows up with an mtime already older than that (written elsewhere,
// then renamed into place). Each file is reported once per (dev, ino,
// size, mtime) for the watcher's life: whether it was uploaded before is the
// upload index's question, not this one's.
//
// Scope: the dir itself and, for each channel key, the sub-folder of that
// name (its files belong to that channel); nothing deeper. Dot files and
// '.part' / '.tmp' names are writers' scratch. A timer rescans; fs.watch
// only brings a rescan forward. Cheap on a camera busy recording: readdir
// and lstat only, never a child process.
import { existsSync, lstatSync, readdirSync, realpathSync, watch as fsWatch } from 'node:fs';
import path from 'node:path';
import type { Clock, Timer } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';

/** Agent ms between rescans when no watch event comes (default of `intervalMs`). */
export const MEDIA_RESCAN_MS = 5_000;
/** Events within this many agent ms of the first make one scan: a copy of a card creates files in a burst. */
export const MEDIA_EVENT_COALESCE_MS = 250;

export interface ReadyFile {
  path: string;
  name: string;
  size: number;
  mtimeMs: number;
  ino: number;
  dev: number;
  /** Set when the file sits in a channel's sub-folder. */
  channelKey?: string;
}

/** What the watcher reads of a path; node's Stats fits. */
export interface MediaStat {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  birthtimeMs?: number;
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}

export interface MediaDirWatch { close(): void }

/** Starts watching `dir`: `onEvent` per change (fs.watch's event type and name), `onDead` when the watch stops on its own. Throws when it cannot start. */
export type WatchMediaDir = (dir: string, onEvent: (type: string, name: string | undefined) => void, onDead: (err: unknown) => void) => MediaDirWatch;

export interface MediaWatcherOptions {
  dir: string;
  channelKeys: string[];
  clock: Clock;
  /** Agent ms a file must hold still (the mediaSettleSeconds setting). */
  settleMs: number;
  onReady: (f: ReadyFile) => void;
  /** Agent ms between rescans (default MEDIA_RESCAN_MS). */
  intervalMs?: number;
  exists?: (p: string) => boolean;
  readdir?: (dir: string) => string[];
  /** lstat: a symlink is described as itself. */
  stat?: (p: string) => MediaStat;
  realpath?: (p: string) => string;
  /** Replaces fs.watch (tests); `null` turns watching off. */
  watch?: WatchMediaDir | null;
  logger?: Logger;
}

/** Names writers use while a file is not finished. */
export function isScratchName(name: string): boolean {
  const lower = name.toLowerCase();
  return name.startsWith('.') || lower.endsWith('.part') || lower.endsWith('.tmp');
}

const nodeWatch: WatchMediaDir = (dir, onEvent, onDead) => {
  const w = fsWatch(dir, { persistent: false }, (type, name) => onEvent(type, typeof name === 'string' ? name : undefined));
  w.on('error', (err) => {
    w.close();
    onDead(err);
  });
  return { close: () => w.close() };
};

/** A file not yet still for long enough: its (dev, ino, size, mtime), since when (agent ms) it has had them, its folder. */
interface Pending { sig: string; since: number; dir: string }

/** `id` is the directory's identity when armed: one removed and made again needs a new watch. */
interface Armed { watch: MediaDirWatch; id: string | undefined }

type Listing = { names: string[] } | 'absent' | 'failed';

/** One pass over the folders: when it looked, which files it saw, which are ready. */
interface Scan { now: number; wall: number; seen: Set<string>; ready: ReadyFile[]; realRoot?: string }

const sigOf = (s: MediaStat): string => `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}`;

export class MediaWatcher {
  private running = false;
  private readonly pending = new Map<string, Pending>();
  private readonly reported = new Set<string>();
  private tickTimer: Timer | undefined;
  private eventTimer: Timer | undefined;
  private settleTimer: { timer: Timer; at: number } | undefined;
  private readonly watches = new Map<string, Armed>();
  /** Directories whose watch died since the last tick: re-armed by the tick, so a failing watch cannot spin. */
  private readonly cooling = new Set<string>();
  /** The last read error logged per directory, so a card that stays unreadable logs once, not every tick. */
  private readonly failing = new Map<string, string>();

  constructor(private readonly options: MediaWatcherOptions) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.rescan();
    this.armTick();
  }

  stop(): void {
    this.running = false;
    for (const t of [this.tickTimer, this.eventTimer, this.settleTimer?.timer]) t?.cancel();
    this.tickTimer = this.eventTimer = this.settleTimer = undefined;
    for (const armed of this.watches.values()) armed.watch.close();
    this.watches.clear();
    this.cooling.clear();
    this.pending.clear();
  }

  private get root(): string {
    return path.resolve(this.options.dir);
  }

  private armTick(): void {
    if (!this.running) return;
    this.tickTimer = this.options.clock.setTimer(() => {
      if (!this.running) return;
      this.cooling.clear();
      this.rescan();
      this.armTick();
    }, this.options.intervalMs ?? MEDIA_RESCAN_MS);
  }

  private onWatchEvent(dir: string, type: string, name: string | undefined): void {
    if (!this.running || this.eventTimer !== undefined) return;
    if (name !== undefined) {
      // A clip being recorded sends a change per write: its settle timer looks again anyway.
      if (isScratchName(name) && !this.options.channelKeys.includes(name)) return;
      if (type === 'change' && this.pending.has(path.join(dir, name))) return;
    }
    this.eventTimer = this.options.clock.setTimer(() => {
      this.eventTimer = undefined;
      this.rescan();
    }, MEDIA_EVENT_COALESCE_MS);
  }

  private rescan(): void {
    if (!this.running) return;
    const root = this.root;
    const scan: Scan = { now: this.options.clock.now(), wall: this.options.clock.wallNow(), seen: new Set(), ready: [] };
    const listed: string[] = [];
    const failed = new Set<string>();
    const top = this.list(root);
    if (top === 'failed') failed.add(root);
    if (typeof top === 'object') {
      listed.push(root);
      const keys = new Set(this.options.channelKeys);
      for (const name of top.names) {
        const sub = path.join(root, name);
        // A channel folder must be a real directory: a link could lead anywhere.
        if (keys.has(name) && this.statOf(sub)?.isDirectory()) {
          const inner = this.list(sub);
          if (inner === 'failed') failed.add(sub);
          if (typeof inner !== 'object') continue;
          listed.push(sub);
          for (const n of inner.names) this.consider(scan, sub, n, name);
        } else {
          this.consider(scan, root, name, undefined);
        }
      }
    }
    // Where a folder could not be read, what waited in it keeps its settle clock.
    for (const [p, e] of this.pending) if (!scan.seen.has(p) && !failed.has(e.dir) && !failed.has(root)) this.pending.delete(p);
    this.rearmWatches(listed);
    this.armSettle(scan.now);
    scan.ready.sort((a, b) => a.mtimeMs - b.mtimeMs || (a.path < b.path ? -1 : 1));
    for (const f of scan.ready) {
      if (!this.running) return;
      this.report(f);
    }
  }

  private consider(scan: Scan, dir: string, name: string, channelKey: string | undefined): void {
    if (isScratchName(name)) return;
    const full = path.join(dir, name);
    let st = this.statOf(full);
    if (st?.isSymbolicLink()) st = this.followInside(scan, full);
    if (st === undefined || !st.isFile()) return;
    scan.seen.add(full);
    const sig = sigOf(st);
    if (this.reported.has(sig)) {
      this.pending.delete(full);
      return;
    }
    const settleMs = Math.max(0, this.options.settleMs);
    const prev = this.pending.get(full);
    const held = prev !== undefined && prev.sig === sig;
    // mtime is wall time by nature; only the wall clock can tell how old it is.
    if ((held && scan.now - prev.since >= settleMs) || (!held && scan.wall - st.mtimeMs > settleMs)) {
      this.pending.delete(full);
      this.reported.add(sig);
      const f: ReadyFile = { path: full, name, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, dev: st.dev };
      if (channelKey !== undefined) f.channelKey = channelKey;
      scan.ready.push(f);
      return;
    }
    if (!held) this.pending.set(full, { sig, since: scan.now, dir });
  }

  /** The target of a link when it resolves inside the media dir; anything else is someone else's file. */
  private followInside(scan: Scan, link: string): MediaStat | undefined {
    try {
      const resolve = this.options.realpath ?? realpathSync;
      if (scan.realRoot === undefined) scan.realRoot = resolve(this.root);
      const target = resolve(link);
      const rel = path.relative(scan.realRoot, target);
      if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
      return this.statOf(target);
    } catch {
      return undefined;
    }
  }

  private armSettle(now: number): void {
    if (!this.running) return;
    let at: number | undefined;
    for (const p of this.pending.values()) at = Math.min(at ?? Infinity, p.since + Math.max(0, this.options.settleMs));
    if (this.settleTimer !== undefined && this.settleTimer.at === at) return;
    this.settleTimer?.timer.cancel();
    this.settleTimer = undefined;
    // Already due means the last look could not read its folder: the tick retries, a zero timer would spin.
    if (at === undefined || at <= now) return;
    const timer = this.options.clock.setTimer(() => {
      this.settleTimer = undefined;
      this.rescan();
    }, at - now);
    this.settleTimer = { timer, at };
  }

  private list(dir: string): Listing {
    let out: Listing;
    try {
      out = (this.options.exists ?? existsSync)(dir) ? { names: (this.options.readdir ?? readdirSync)(dir) } : 'absent';
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? String(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return 'absent';
      if (this.failing.get(dir) !== code) this.options.logger?.warn({ dir, code }, 'cannot read a media directory');
      this.failing.set(dir, code);
      return 'failed';
    }
    if (this.failing.delete(dir)) this.options.logger?.info({ dir }, 'media directory readable again');
    return out;
  }

  private statOf(p: string): MediaStat | undefined {
    try {
      return (this.options.stat ?? lstatSync)(p);
    } catch {
      return undefined; // gone between readdir and lstat
    }
  }

  private report(f: ReadyFile): void {
    try {
      this.options.onReady(f);
    } catch (err) {
      this.options.logger?.warn({ file: f.path, err: String(err) }, 'media ready listener failed');
    }
  }

  private rearmWatches(dirs: string[]): void {
    const watchFn = this.options.watch === undefined ? nodeWatch : this.options.watch;
    if (watchFn === null) return;
    const wanted = new Set(dirs);
    const idOf = (d: string): string | undefined => {
      const s = this.statOf(d);
      return s === undefined ? undefined : `${s.dev}:${s.ino}:${s.birthtimeMs ?? ''}`;
    };
    for (const [dir, armed] of this.watches) {
      if (!wanted.has(dir) || idOf(dir) !== armed.id) {
        armed.watch.close();
        this.watches.delete(dir);
      }
    }
    for (const dir of wanted) {
      if (this.watches.has(dir) || this.cooling.has(dir)) continue;
      const armed: Armed = { watch: { close: () => undefined }, id: idOf(dir) };
      try {
        armed.watch = watchFn(dir, (type, name) => this.onWatchEvent(dir, type, name), (err) => this.watchDied(dir, armed, err));
        this.watches.set(dir, armed);
      } catch (err) {
        // Out of inotify watches, or the directory went away: the timer still rescans.
        this.options.logger?.debug({ dir, err: String(err) }, 'cannot watch a media directory');
      }
    }
  }

  private watchDied(dir: string, armed: Armed, err: unknown): void {
    if (this.watches.get(dir) !== armed) return;
    this.watches.delete(dir);
    this.cooling.add(dir);
    this.options.logger?.debug({ dir, err: String(err) }, 'media directory watch stopped');
    this.rescan();
  }
}
