// Which files in the media dir are finished and can be uploaded. Cameras
// write clips in place with no "done" signal, so a file is ready once its
// size and mtime have held still for the settle time, or at once when it
// first shows up with an mtime already older than that (written elsewhere,
// then renamed into place). Each file is reported once per (dev, ino,
// size, mtime) for the watcher's life: whether it was uploaded before is the
// upload index's question, not this one's. One file behind two names (a link
// in the dir) is reported once; but a file whose reported name is gone was
// renamed, and is offered again under its new name: a clip renamed while it
// waited in the queue would otherwise never go (its queued item finds the old
// path gone).
//
// Scope: the dir itself and, for each channel key, the sub-folder of that
// name (its files belong to that channel); nothing deeper. Dot files and
// '.part' / '.tmp' names are writers' scratch. A timer rescans; fs.watch
// only brings a rescan forward (both through lib/dir-watcher.ts). Cheap on a
// camera busy recording: readdir and lstat only, never a child process.
//
// With real-time uploads on (`onGrowing`), a clip still being written is
// reported as soon as it is seen, once per file (dev, ino): `NAME.EXT.part`
// (a recorder's working name, finished when renamed to `NAME.EXT`), or a file
// seen growing from one look to the next (written in place). The finished
// file is still reported ready as above; the uploads unit knows it as the
// same recording by its inode.
//
// Anything else in scope that the watcher will not take (a FIFO, a socket, a
// device, a folder that is not a channel's, a link that loops, dangles or
// leads out of the media dir, a name that is not UTF-8) is said once, as a
// warning with the reason, and kept in a short list `queue` and the status
// document show. The list holds at most SKIPPED_LIST_MAX entries; past that
// they are only counted, so a dir of 100,000 junk entries costs a number.
// A folder not taken has the entries directly in it listed too, each under
// its own name: a camera maker looks for the clip, not for its folder. A name
// that is not UTF-8 is shown with \xHH for its bad bytes, as it is on disk.
import type { MediaFileFacts } from './events.js';
import { isUtf8 } from 'node:buffer';
import { existsSync, lstatSync, readdirSync, realpathSync, type Stats } from 'node:fs';
import path from 'node:path';
import { describeFileType } from '../lib/bounded-read.js';
import type { Clock, Timer } from '../lib/clock.js';
import { DirWatcher, type WatchDir } from '../lib/dir-watcher.js';
import type { Logger } from '../lib/logger.js';
import { quote } from '../lib/text.js';
import { linkRefusal } from './upload-paths.js';

/** Agent ms between rescans when no watch event comes (default of `intervalMs`). */
export const MEDIA_RESCAN_MS = 5_000;
/** Skipped entries listed by name and reason; the rest are counted. */
export const SKIPPED_LIST_MAX = 50;

/** A media-dir entry the watcher will not take: its name (relative to the media dir) and why. */
export interface SkippedEntry {
  name: string;
  reason: string;
}

/** What `queue` and the status document show of the skipped entries. */
export interface SkippedView {
  entries: SkippedEntry[];
  /** Skipped entries beyond the list, at the last scan. */
  more: number;
}

/** A finished file as the watcher reports it: the bus's MediaFileFacts before its type is known. */
export type ReadyFile = Omit<MediaFileFacts, 'filetype' | 'extension'>;

/** A clip still being written: `path` where it is written, `finalPath` and `name` what it is called once finished. */
export type GrowingFile = ReadyFile & { finalPath: string };

/** What the watcher reads of a path; node's Stats fits. */
export interface MediaStat {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  /** Names the file has (hard links): more than one and it is not taken (upload-paths.ts linkRefusal). */
  nlink?: number;
  birthtimeMs?: number;
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  isFIFO?(): boolean;
  isSocket?(): boolean;
  isCharacterDevice?(): boolean;
  isBlockDevice?(): boolean;
}

export interface MediaWatcherOptions {
  dir: string;
  channelKeys: string[];
  clock: Clock;
  /** Agent ms a file must hold still (the mediaSettleSeconds setting). */
  settleMs: number;
  onReady: (f: ReadyFile) => void;
  /** Real-time uploads: a clip still being written (absent: such clips are only reported once finished). */
  onGrowing?: (f: GrowingFile) => void;
  /** Agent ms between rescans (default MEDIA_RESCAN_MS). */
  intervalMs?: number;
  exists?: (p: string) => boolean;
  readdir?: (dir: string) => string[];
  /** The names as bytes: asked only when a name read as text holds U+FFFD (default readdirSync as buffers). */
  readdirBytes?: (dir: string) => Buffer[];
  /** lstat: a symlink is described as itself. */
  stat?: (p: string) => MediaStat;
  realpath?: (p: string) => string;
  /** Replaces fs.watch (tests); `null` turns watching off. */
  watch?: WatchDir | null;
  /** The skipped list changed (the status document should show it). */
  /** What `status` shows changed: the entries not taken, or whether the media dir exists. */
  onSkipped?: () => void;
  logger?: Logger;
}

/** Names writers use while a file is not finished. */
export function isScratchName(name: string): boolean {
  const lower = name.toLowerCase();
  return name.startsWith('.') || lower.endsWith('.part') || lower.endsWith('.tmp');
}

/** A recorder's working name for a clip in progress: `NAME.EXT.part` (not a dot file). */
export function isRecordingName(name: string): boolean {
  return !name.startsWith('.') && name.length > '.part'.length && name.toLowerCase().endsWith('.part');
}

/** The finished name of a working name (or path): `NAME.EXT.part` without `.part`. */
export const finishedName = (working: string): string => working.slice(0, -'.part'.length);

/** A file not yet still for long enough: its (dev, ino, size, mtime), since when (agent ms) it has had them, its folder, its size. */
interface Pending { sig: string; since: number; dir: string; size: number }

/** A folder's entries: the names that are UTF-8, and the others shown with \xHH for their bad bytes. */
type Listing = { names: string[]; notUtf8: string[] } | 'absent' | 'failed';

/** One pass over the folders: when it looked, which files it saw, which are ready, which listed skips it met and how many beyond, which folders it could not read. */
interface Scan { now: number; wall: number; seen: Set<string>; ready: ReadyFile[]; growing: GrowingFile[]; recordings: Set<string>; realRoot?: string; skipped: Set<string>; more: number; failed: Set<string> }

/** A link's target when it may be taken, else why not: its stat, and its own name when the watcher takes the target under that name anyway (`takenAs`). */
type Followed = { st: MediaStat; takenAs: string | undefined } | { reason: string };

const secondName = (root: string, first: string): string => `a second name for ${quote(path.relative(root, first))}, which is uploaded once, under that name`;

/** "a FIFO (named pipe)", ... in the words bounded reads use; a stat without the type questions is "not a regular file". */
const kindOf = (st: MediaStat): string =>
  describeFileType({ isFile: () => st.isFile(), isDirectory: () => st.isDirectory(), isSymbolicLink: () => st.isSymbolicLink(), isFIFO: () => st.isFIFO?.() ?? false, isSocket: () => st.isSocket?.() ?? false, isCharacterDevice: () => st.isCharacterDevice?.() ?? false, isBlockDevice: () => st.isBlockDevice?.() ?? false } as Stats);

const sigOf = (s: MediaStat): string => `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}`;

const NOT_UTF8 = 'its name is not valid UTF-8 (shown with \\xHH for the bytes that are not): rename it, since the service takes names as text';

/** A name's bytes as text, each byte that is not part of valid UTF-8 written \xHH: 'bad\xff\xfe.mp4'. */
function showBytes(b: Buffer): string {
  let out = '';
  let i = 0;
  while (i < b.length) {
    const lead = b[i] as number;
    const n = lead < 0x80 ? 1 : lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
    if (n > 0 && i + n <= b.length && isUtf8(b.subarray(i, i + n))) {
      out += b.toString('utf8', i, i + n);
      i += n;
    } else {
      out += `\\x${lead.toString(16).padStart(2, '0')}`;
      i++;
    }
  }
  return out;
}

export class MediaWatcher {
  private running = false;
  private readonly pending = new Map<string, Pending>();
  /** Each version reported, with the name it was reported under. */
  private readonly reported = new Map<string, string>();
  /** The folders the last scan could not list. */
  private unlisted: ReadonlySet<string> = new Set();
  /** The files (dev:ino) reported as growing, while they are still seen. */
  private readonly growingReported = new Set<string>();
  private settleTimer: { timer: Timer; at: number } | undefined;
  private readonly dirs: DirWatcher;
  /** The last read error logged per directory, so a card that stays unreadable logs once, not every tick. */
  private readonly failing = new Map<string, string>();
  /** Entries not taken, by path, at most SKIPPED_LIST_MAX: each was logged once when it came in. */
  private readonly skippedList = new Map<string, SkippedEntry>();
  /** Entries not taken beyond the list at the last scan (said when it rises from none). */
  private skippedMore = 0;
  private skippedChanged = false;
  /** The media dir was absent at the last look: said once in the log when it goes, once when it comes. */
  private rootAbsent = false;

  constructor(private readonly options: MediaWatcherOptions) {
    this.dirs = new DirWatcher({
      clock: options.clock,
      pollMs: options.intervalMs ?? MEDIA_RESCAN_MS,
      look: () => this.rescan(),
      worthALook: (dir, type, name) => this.worthALook(dir, type, name),
      watch: options.watch,
      what: 'a media directory',
      logger: options.logger,
    });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.dirs.start();
    this.rescan();
  }

  stop(): void {
    this.running = false;
    this.settleTimer?.timer.cancel();
    this.settleTimer = undefined;
    this.dirs.stop();
    this.pending.clear();
  }

  private get root(): string {
    return path.resolve(this.options.dir);
  }

  private worthALook(dir: string, type: string | undefined, name: string | undefined): boolean {
    if (name === undefined) return true;
    // A clip being recorded sends a change per write: its settle timer looks again anyway.
    // A new working name is worth a look (real-time uploads start with it); its writes are not.
    if (this.options.onGrowing !== undefined && isRecordingName(name)) return type !== 'change';
    if (isScratchName(name) && !this.options.channelKeys.includes(name)) return false;
    return !(type === 'change' && this.pending.has(path.join(dir, name)));
  }

  private rescan(): void {
    if (!this.running) return;
    const root = this.root;
    const scan: Scan = { now: this.options.clock.now(), wall: this.options.clock.wallNow(), seen: new Set(), ready: [], growing: [], recordings: new Set(), skipped: new Set(), more: 0, failed: new Set() };
    const failed = scan.failed;
    const listed: string[] = [];
    const top = this.list(root);
    this.noteRoot(root, top === 'absent');
    if (top === 'failed') failed.add(root);
    if (typeof top === 'object') {
      listed.push(root);
      const keys = new Set(this.options.channelKeys);
      this.skipNotUtf8(scan, root, top.notUtf8);
      for (const name of top.names) {
        const sub = path.join(root, name);
        const st = keys.has(name) ? this.statOf(sub) : undefined;
        // A channel folder must be a real directory: a link could lead anywhere.
        if (st?.isDirectory()) {
          const inner = this.list(sub);
          if (inner === 'failed') failed.add(sub);
          if (typeof inner !== 'object') continue;
          listed.push(sub);
          this.skipNotUtf8(scan, sub, inner.notUtf8);
          for (const n of inner.names) this.consider(scan, sub, n, name);
        } else if (st?.isSymbolicLink()) {
          this.skip(scan, sub, 'a symbolic link where a channel folder should be: channel folders must be real folders, nothing in it is uploaded');
        } else {
          this.consider(scan, root, name, undefined);
        }
      }
    }
    // Where a folder could not be read, what waited in it keeps its settle clock.
    for (const [p, e] of this.pending) if (!scan.seen.has(p) && !failed.has(e.dir) && !failed.has(root)) this.pending.delete(p);
    if (failed.size === 0) for (const key of this.growingReported) if (!scan.recordings.has(key)) this.growingReported.delete(key);
    this.settleSkipped(scan, failed);
    this.dirs.setDirs(listed);
    this.unlisted = failed;
    this.armSettle(scan.now);
    scan.ready.sort((a, b) => a.mtimeMs - b.mtimeMs || (a.path < b.path ? -1 : 1));
    for (const f of scan.growing) {
      if (!this.running) return;
      this.reportGrowing(f);
    }
    for (const f of scan.ready) {
      if (!this.running) return;
      this.report(f);
    }
  }

  private consider(scan: Scan, dir: string, name: string, channelKey: string | undefined): void {
    if (isScratchName(name)) {
      if (this.options.onGrowing !== undefined && isRecordingName(name)) this.considerRecording(scan, dir, name, channelKey);
      return;
    }
    const full = path.join(dir, name);
    let st = this.statOf(full);
    if (st === undefined) return; // gone between readdir and lstat
    if (st.isSymbolicLink()) {
      const followed = this.followInside(scan, full);
      if ('reason' in followed) return this.skip(scan, full, followed.reason);
      // The target's own name always wins: were it whichever name settled first, a clip rewritten in
      // place could go under the link's name while its own waited (seen by the media fuzzer, seed 103).
      if (followed.takenAs !== undefined) {
        this.pending.delete(full);
        return this.skip(scan, full, secondName(this.root, followed.takenAs));
      }
      st = followed.st;
    }
    if (st.isDirectory()) return this.skipFolder(scan, full, name, channelKey);
    if (!st.isFile()) return this.skip(scan, full, `${kindOf(st)}, not a regular file`);
    const names = linkRefusal(st);
    if (names !== undefined) return this.skip(scan, full, names);
    scan.seen.add(full);
    // A recording renamed to its finished name, or written in place: still the same recording.
    if (this.growingReported.has(`${st.dev}:${st.ino}`)) scan.recordings.add(`${st.dev}:${st.ino}`);
    const sig = sigOf(st);
    const reportedAs = this.reported.get(sig);
    if (reportedAs === full) {
      this.pending.delete(full);
      return;
    }
    if (reportedAs !== undefined && this.stillReported(scan, reportedAs)) {
      this.pending.delete(full);
      return this.skip(scan, full, secondName(this.root, reportedAs));
    }
    const settleMs = Math.max(0, this.options.settleMs);
    const prev = this.pending.get(full);
    const held = prev !== undefined && prev.sig === sig;
    // mtime is wall time by nature; only the wall clock can tell how old it is.
    if ((held && scan.now - prev.since >= settleMs) || (!held && scan.wall - st.mtimeMs > settleMs)) {
      this.pending.delete(full);
      this.reported.set(sig, full);
      const f: ReadyFile = { path: full, name, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, dev: st.dev };
      if (channelKey !== undefined) f.channelKey = channelKey;
      scan.ready.push(f);
      return;
    }
    if (!held) {
      // Grown since the last look: written in place, reported at once with real-time uploads on.
      if (prev !== undefined && st.size > prev.size && this.options.onGrowing !== undefined) this.growing(scan, st, { path: full, finalPath: full, name, channelKey });
      this.pending.set(full, { sig, since: scan.now, dir, size: st.size });
    }
  }

  /** A working name (`NAME.EXT.part`): a clip in progress, reported once per file while it keeps that name. */
  private considerRecording(scan: Scan, dir: string, name: string, channelKey: string | undefined): void {
    const full = path.join(dir, name);
    const st = this.statOf(full);
    // Only a regular file of its own: a link or anything else under a working name is left alone.
    if (st === undefined || !st.isFile() || linkRefusal(st) !== undefined) return;
    this.growing(scan, st, { path: full, finalPath: finishedName(full), name: finishedName(name), channelKey });
  }

  private growing(scan: Scan, st: MediaStat, where: { path: string; finalPath: string; name: string; channelKey: string | undefined }): void {
    const key = `${st.dev}:${st.ino}`;
    scan.recordings.add(key);
    if (this.growingReported.has(key)) return;
    this.growingReported.add(key);
    const f: GrowingFile = { path: where.path, finalPath: where.finalPath, name: where.name, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, dev: st.dev };
    if (where.channelKey !== undefined) f.channelKey = where.channelKey;
    scan.growing.push(f);
  }

  /** The target of a link when it resolves inside the media dir; anything else is someone else's file. */
  private followInside(scan: Scan, link: string): Followed {
    const resolve = this.options.realpath ?? realpathSync;
    let target: string;
    try {
      if (scan.realRoot === undefined) scan.realRoot = resolve(this.root);
      target = resolve(link);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      if (code === 'ELOOP') return { reason: 'a symbolic link loop (ELOOP)' };
      if (code === 'ENOENT') return { reason: 'a symbolic link to nothing: its target does not exist' };
      return { reason: `a symbolic link that cannot be followed (${code})` };
    }
    const rel = path.relative(scan.realRoot, target);
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return { reason: 'a symbolic link to something outside the media dir' };
    const st = this.statOf(target);
    if (st === undefined) return { reason: 'a symbolic link to nothing: its target does not exist' };
    if (!st.isFile()) return { reason: `a symbolic link to ${kindOf(st)}, not to a regular file` };
    // Taken under its own name when it lies where the watcher looks (the dir, or a channel folder in it)
    // under a finished name, and is not refused for its hard links.
    const where = path.dirname(rel);
    const looked = where === '.' || (!where.includes(path.sep) && this.options.channelKeys.includes(where));
    // A folder the last scan, or this one so far, could not list is no place the target is taken from.
    const folder = where === '.' ? this.root : path.join(this.root, where);
    const listable = !this.unlisted.has(folder) && !scan.failed.has(folder);
    const taken = looked && listable && !isScratchName(path.basename(rel)) && linkRefusal(st) === undefined;
    return { st, takenAs: taken ? path.join(this.root, rel) : undefined };
  }

  /**
   * The name a file was reported under still stands for it: it is there, and
   * is not a link that is now another name's second one (a clip renamed and
   * a link left at its old name: the clip goes under its new, own name).
   */
  private stillReported(scan: Scan, reportedAs: string): boolean {
    const st = this.statOf(reportedAs);
    if (st === undefined) return false;
    if (!st.isSymbolicLink()) return true;
    const followed = this.followInside(scan, reportedAs);
    return !('reason' in followed) && followed.takenAs === undefined;
  }

  /**
   * A folder where a clip should be: not taken, and neither is anything in
   * it. The entries directly in it are listed under their own names with the
   * folder's reason, so a clip put there by mistake is found by its name;
   * deeper ones are not read (the folder holding them is named). A folder
   * named like a clip says so: a recorder that writes a clip as a folder of
   * pieces (RED's .RDC) needs them flattened into the media dir.
   */
  private skipFolder(scan: Scan, full: string, name: string, channelKey: string | undefined): void {
    const ext = path.extname(name);
    const named = ext.length > 1 ? `, though named like a file (${ext}),` : '';
    const rel = quote(path.relative(this.root, full));
    if (channelKey === undefined) {
      const keys = this.options.channelKeys.join(', ') || 'none in this profile';
      this.skip(scan, full, `a folder${named} that is not a channel's (channel folders: ${keys}): nothing in it is uploaded`);
      this.skipInside(scan, full, `in ${rel}, a folder that is not a channel's (channel folders: ${keys}): only files directly in the media dir or in a channel folder are uploaded`);
    } else {
      this.skip(scan, full, `a folder${named} inside a channel folder: nothing deeper than the channel folder is uploaded`);
      this.skipInside(scan, full, `in ${rel}, a folder inside a channel folder: nothing deeper than the channel folder is uploaded`);
    }
  }

  /** The entries directly in a folder not taken, each listed with `reason` (writers' scratch names aside). */
  private skipInside(scan: Scan, folder: string, reason: string): void {
    const inner = this.list(folder);
    if (inner === 'failed') scan.failed.add(folder);
    if (typeof inner !== 'object') return;
    for (const n of inner.names) if (!isScratchName(n)) this.skip(scan, path.join(folder, n), reason);
    for (const n of inner.notUtf8) this.skip(scan, path.join(folder, n), reason);
  }

  /** Names that are not UTF-8: no path given as text reaches them, so they cannot be taken. */
  private skipNotUtf8(scan: Scan, dir: string, names: string[]): void {
    for (const n of names) this.skip(scan, path.join(dir, n), NOT_UTF8);
  }

  /** An entry not taken: listed and said once while there is room in the list, else only counted. */
  private skip(scan: Scan, full: string, reason: string): void {
    const known = this.skippedList.get(full);
    if (known === undefined && this.skippedList.size >= SKIPPED_LIST_MAX) {
      scan.more++;
      return;
    }
    scan.skipped.add(full);
    if (known?.reason === reason) return;
    const name = path.relative(this.root, full);
    this.skippedList.set(full, { name, reason });
    this.options.logger?.warn({ name, reason }, `media dir: will not upload ${quote(name)}: ${reason}`);
    this.skippedChanged = true;
  }

  /** After a scan: entries gone or taken now leave the list (unless their folder could not be read); the overflow is said when it starts. */
  private settleSkipped(scan: Scan, failed: Set<string>): void {
    for (const full of this.skippedList.keys()) {
      if (scan.skipped.has(full) || failed.has(path.dirname(full)) || failed.has(this.root)) continue;
      this.skippedList.delete(full);
      this.skippedChanged = true;
    }
    if (scan.more !== this.skippedMore) {
      if (this.skippedMore === 0) {
        this.options.logger?.warn({ more: scan.more, listed: SKIPPED_LIST_MAX }, `media dir: ${scan.more} more entries will not be uploaded (not regular files, or out of scope); only the first ${SKIPPED_LIST_MAX} are named`);
      }
      this.skippedMore = scan.more;
      this.skippedChanged = true;
    }
    if (!this.skippedChanged) return;
    this.skippedChanged = false;
    try {
      this.options.onSkipped?.();
    } catch (err) {
      this.options.logger?.warn({ err: String(err) }, 'media skipped listener failed');
    }
  }

  /**
   * A media dir that does not exist (a typo, a card not mounted yet) stops
   * every automatic upload without an error anywhere: it is said once in the
   * log and shown in `status` until it appears. The slow poll keeps looking
   * for it, and its clips are taken as soon as it is there.
   */
  private noteRoot(root: string, absent: boolean): void {
    if (absent === this.rootAbsent) return;
    this.rootAbsent = absent;
    const every = `${Math.round((this.options.intervalMs ?? MEDIA_RESCAN_MS) / 1000)} s`;
    if (absent) this.options.logger?.warn({ dir: root }, `media dir ${quote(root)} does not exist: nothing is uploaded from it until it does (looked for every ${every} of agent time; check the media dir setting for a typo)`);
    else this.options.logger?.info({ dir: root }, `media dir ${quote(root)} is there now: its clips are uploaded`);
    this.options.onSkipped?.();
  }

  /** The media dir's path while it does not exist, for `status` and the status document. */
  missingDir(): string | undefined {
    return this.rootAbsent ? this.root : undefined;
  }

  /** The entries not taken, for `queue` and the status document. */
  skipped(): SkippedView {
    return { entries: [...this.skippedList.values()], more: this.skippedMore };
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
      out = (this.options.exists ?? existsSync)(dir) ? this.names(dir) : 'absent';
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

  /**
   * readdir hands a name that is not UTF-8 over with U+FFFD for its bad
   * bytes, a path that does not exist (and may stand for several names): the
   * folder is read again as bytes to tell which names those are. A name truly
   * holding U+FFFD costs that second read and nothing more.
   */
  private names(dir: string): { names: string[]; notUtf8: string[] } {
    const names = (this.options.readdir ?? readdirSync)(dir);
    if (!names.some((n) => n.includes('\ufffd'))) return { names, notUtf8: [] };
    const bytes = (this.options.readdirBytes ?? ((d: string) => readdirSync(d, { encoding: 'buffer' })))(dir);
    const out = { names: [] as string[], notUtf8: [] as string[] };
    for (const b of bytes) {
      if (isUtf8(b)) out.names.push(b.toString('utf8'));
      else out.notUtf8.push(showBytes(b));
    }
    return out;
  }

  private statOf(p: string): MediaStat | undefined {
    try {
      return (this.options.stat ?? lstatSync)(p);
    } catch {
      return undefined; // gone between readdir and lstat
    }
  }

  private reportGrowing(f: GrowingFile): void {
    try {
      this.options.onGrowing?.(f);
    } catch (err) {
      this.options.logger?.warn({ file: f.path, err: String(err) }, 'media growing listener failed');
    }
  }

  private report(f: ReadyFile): void {
    try {
      this.options.onReady(f);
    } catch (err) {
      this.options.logger?.warn({ file: f.path, err: String(err) }, 'media ready listener failed');
    }
  }
}
