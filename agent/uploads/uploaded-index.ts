// The agent's memory of finished uploads, so a file is never sent twice,
// across restarts too. A file is known by (ino, size, mtime): a clip
// rewritten in place gets a new size or mtime and counts as new.
//
// Bounded: past maxEntries the entries with the oldest mtimes are dropped
// and a watermark is raised to the newest dropped mtime; any file whose
// mtime is at or below it counts as done. Dropping by mtime rather than by
// upload order keeps every remaining entry above the watermark, and keeps a
// clip stamped in the future by a camera with a wrong clock from dragging
// the watermark ahead and silencing every later file.
//
// It also remembers recordings ended for good (a real-time upload cancelled
// through the local API, or refused by the paused service) before they are
// finished: such a file has no final size or mtime yet, so it is known by its
// inode and its finished path until its finished file is seen, which then
// takes its place as an entry like any other. The queue forgets the cancelled
// item once it reclaims its segment; this does not.
//
// <state-dir>/uploaded.json (mode 0600, written atomically) changes only
// when an upload finishes or is cancelled or refused, never on a healthy start.
import { createHash } from 'node:crypto';
import * as fs from '../lib/fs-async.js';
import path from 'node:path';
import { sweepOwnTemps, writeFileAtomic } from '../lib/atomic-write.js';
import { readBoundedText, TOO_LARGE } from '../lib/bounded-read.js';
import { AgentError } from '../lib/errors.js';
import { errnoOf, fsError } from '../lib/fs-errors.js';
import type { Logger } from '../lib/logger.js';

export const UPLOADED_INDEX_FILE = 'uploaded.json';
export const MAX_ENTRIES = 5000;
/** Recordings ended for good and not yet seen finished, at most (the oldest forgotten first): each is one cancel or one refusal. */
export const MAX_RECORDINGS = 500;
const VERSION = 1;
/** A finished path as stored: 96 bits of its SHA-256, base64url. */
const PATH_HASH = /^[A-Za-z0-9_-]{16}$/;
/**
 * The most the file can hold: an entry is four JSON numbers, each at most 24
 * characters (a float mtime, a 2^53 inode), so 128 bytes is room to spare; a
 * recording is a number and a 16-character hash, 64 bytes. A larger file is
 * no index this agent wrote and is treated as corrupt.
 */
const MAX_FILE_BYTES = MAX_ENTRIES * 128 + MAX_RECORDINGS * 64 + 4096;

export interface FileIdentity {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

/**
 * A recording before it is finished: its inode and the path it has once finished (realtime-item.ts's payload
 * has both). `size` and `birthMs` (the file's birth time, 0 where the file system has none) tell a later take
 * that was given the same freed inode and name (ext4 hands a freed inode to the next new file) from the
 * recording itself: a recording only grows, and keeps its birth time through the rename.
 */
export interface RecordingIdentity {
  ino: number;
  finalPath: string;
  size?: number;
  birthMs?: number;
}

/** A stored recording: [ino, finished path hash, bytes on disk when it ended, birth time ms or 0]; older files hold the first two. */
type StoredRecording = [ino: number, finalPathHash: string, size?: number, birthMs?: number];

export interface UploadedIndexOptions {
  logger?: Logger;
  /** Tests lower it; default MAX_ENTRIES. */
  maxEntries?: number;
}

/**
 * On disk: tuples keep 5000 entries near 200 KB. `recordings` is absent while
 * there are none (an older agent reads such a file as before, and ignores it
 * otherwise).
 */
interface Stored {
  version: number;
  watermarkMs: number | null;
  entries: Array<[dev: number, ino: number, size: number, mtimeMs: number]>;
  recordings?: StoredRecording[];
}

// Not the device number: a card reader plugged back in or remounted gets a new
// one, and every clip on it would look new. Inode, size and mtime together
// already tell two clips apart.
const keyOf = (f: FileIdentity): string => `${f.ino}:${f.size}:${f.mtimeMs}`;
// Not the device number either, for the same reason; the finished path tells a reused inode apart.
const pathHash = (p: string): string => createHash('sha256').update(p).digest('base64url').slice(0, 16);
const recordingKey = (ino: number, hash: string): string => `${ino}:${hash}`;
const keyOfRecording = (r: RecordingIdentity): string => recordingKey(r.ino, pathHash(r.finalPath));
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

function parse(text: string): Stored | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const r = v as Record<string, unknown>;
  if (r.version !== VERSION || !(r.watermarkMs === null || typeof r.watermarkMs === 'number') || !Array.isArray(r.entries)) return undefined;
  const ok = r.entries.every((e) => Array.isArray(e) && e.length === 4 && e.every(isCount));
  const recs = r.recordings === undefined || (Array.isArray(r.recordings) && r.recordings.every((e) => Array.isArray(e) && (e.length === 2 || (e.length === 4 && isCount(e[2]) && isCount(e[3]))) && isCount(e[0]) && typeof e[1] === 'string' && PATH_HASH.test(e[1])));
  return ok && recs ? (r as unknown as Stored) : undefined;
}

export class UploadedIndex {
  private entries: Map<string, FileIdentity> | undefined;
  private watermark: number | undefined;
  /** Recordings ended for good, oldest first: key -> [ino, finished path hash]. */
  private recordings = new Map<string, StoredRecording>();
  /** Writes run one after another, each of the state as it is then: a slow early write cannot land last with less in it. */
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly stateDir: string,
    private readonly options: UploadedIndexOptions = {},
  ) {}

  get file(): string {
    return path.join(this.stateDir, UPLOADED_INDEX_FILE);
  }

  /** Entries held (files at or below the watermark are not counted). */
  get size(): number {
    return this.entries?.size ?? 0;
  }

  /** Files with an mtime at or below this count as uploaded; undefined while nothing was ever dropped. */
  get watermarkMs(): number | undefined {
    return this.watermark;
  }

  async load(): Promise<void> {
    // This store owns its file: the daemon, its only writer, loads it once at start,
    // so any temp of it a kill left behind is stale.
    const swept = sweepOwnTemps(this.stateDir, { prefix: UPLOADED_INDEX_FILE });
    if (swept.length > 0) this.options.logger?.info({ files: swept }, `removed ${swept.length} stale temp file(s) of the upload index`);
    let text: string;
    try {
      text = await readBoundedText(this.file, { what: 'upload index', maxBytes: MAX_FILE_BYTES });
    } catch (err) {
      const code = errnoOf(err);
      // A regular file too large to be an index is damage, like one that does not parse.
      if (code === TOO_LARGE) return this.recoverFromCorrupt();
      if (code !== 'ENOENT') {
        // Starting empty here would send every file again (and a FIFO must not be waited on): stop instead.
        throw fsError(err, 'read the upload index', this.file);
      }
      this.entries = new Map();
      this.watermark = undefined;
      this.recordings = new Map();
      return;
    }
    const stored = parse(text);
    if (stored === undefined) return this.recoverFromCorrupt();
    this.entries = new Map(stored.entries.map(([dev, ino, size, mtimeMs]) => [keyOf({ dev, ino, size, mtimeMs }), { dev, ino, size, mtimeMs }]));
    this.watermark = stored.watermarkMs ?? undefined;
    this.recordings = new Map((stored.recordings ?? []).map((e) => [recordingKey(e[0], e[1]), e]));
    this.evict();
  }

  has(f: FileIdentity): boolean {
    const entries = this.loaded();
    return (this.watermark !== undefined && f.mtimeMs <= this.watermark) || entries.has(keyOf(f));
  }

  /**
   * Records a finished upload and writes the index. When the write fails the
   * entry is still remembered in memory (this process sends the file no
   * second time) and goes to disk with the next add.
   */
  async add(f: FileIdentity): Promise<void> {
    if (this.has(f)) return;
    const { dev, ino, size, mtimeMs } = f;
    this.loaded().set(keyOf(f), { dev, ino, size, mtimeMs });
    this.evict();
    await this.persist();
  }

  /**
   * A recording ended for good (cancelled, or refused by the paused service) whose finished file has not been
   * seen yet. Given what is on disk now, a file smaller than the recording was when it ended, or born at
   * another time, is another take that reused the inode and name: not this recording.
   */
  hasRecording(r: RecordingIdentity): boolean {
    this.loaded();
    const m = this.recordings.get(keyOfRecording(r));
    if (m === undefined) return false;
    const [, , size = 0, birthMs = 0] = m;
    if (r.size !== undefined && r.size < size) return false;
    if (r.birthMs !== undefined && r.birthMs > 0 && birthMs > 0 && r.birthMs !== birthMs) return false;
    return true;
  }

  /**
   * Records a recording ended for good before it is finished, and writes the
   * index (one write): its finished file, whatever its size and mtime then,
   * is never sent. Like add(), a failed write is still remembered in memory.
   */
  async addRecording(r: RecordingIdentity): Promise<void> {
    const hash = pathHash(r.finalPath);
    const entry: StoredRecording = [r.ino, hash, r.size ?? 0, r.birthMs ?? 0];
    const now = this.recordings.get(recordingKey(r.ino, hash));
    if (now !== undefined && JSON.stringify(now) === JSON.stringify(entry)) return;
    // Another take under the same inode and name replaces the one before (a Map keeps insertion order: it is now the newest).
    this.recordings.delete(recordingKey(r.ino, hash));
    this.recordings.set(recordingKey(r.ino, hash), entry);
    this.evict();
    await this.persist();
  }

  /**
   * The finished file of a recording added above: from now on it is known by
   * its own identity, as a cancelled whole-file upload is (a later change
   * makes it a new file), and the recording is forgotten. One write.
   */
  async recordingFinished(r: RecordingIdentity, f: FileIdentity): Promise<void> {
    const forgot = this.recordings.delete(keyOfRecording(r));
    const known = this.has(f);
    if (!known) {
      const { dev, ino, size, mtimeMs } = f;
      this.loaded().set(keyOf(f), { dev, ino, size, mtimeMs });
      this.evict();
    }
    if (forgot || !known) await this.persist();
  }

  private loaded(): Map<string, FileIdentity> {
    if (this.entries === undefined) throw new AgentError('internal', 'the upload index was used before load()');
    return this.entries;
  }

  private evict(): void {
    for (const key of this.recordings.keys()) {
      if (this.recordings.size <= MAX_RECORDINGS) break;
      this.recordings.delete(key);
    }
    const entries = this.loaded();
    const max = Math.max(1, this.options.maxEntries ?? MAX_ENTRIES);
    if (entries.size <= max) return;
    const byAge = [...entries.entries()].sort((a, b) => a[1].mtimeMs - b[1].mtimeMs);
    let mark = this.watermark ?? -Infinity;
    for (const [key, f] of byAge.slice(0, entries.size - max)) {
      entries.delete(key);
      mark = Math.max(mark, f.mtimeMs);
    }
    // Entries sharing the new watermark's mtime are covered by it: no need to keep them.
    for (const [key, f] of entries) if (f.mtimeMs <= mark) entries.delete(key);
    this.watermark = mark;
  }

  private persist(): Promise<void> {
    const run = this.writing.then(() => writeFileAtomic(this.file, this.serialize(), { mode: 0o600 }));
    this.writing = run.catch(() => undefined);
    return run;
  }

  private serialize(): string {
    const stored: Stored = {
      version: VERSION,
      watermarkMs: this.watermark ?? null,
      entries: [...this.loaded().values()].map((f) => [f.dev, f.ino, f.size, f.mtimeMs]),
    };
    if (this.recordings.size > 0) stored.recordings = [...this.recordings.values()];
    return `${JSON.stringify(stored)}\n`;
  }

  /**
   * A corrupt index (written atomically, so only flash damage or a hand edit
   * makes one) is set aside for inspection and the index starts empty. The
   * two ways out are sending everything on the card again or skipping what
   * is older than the damage; a camera card holds days of clips and a
   * cellular link pays for each byte, so the watermark goes to the corrupt
   * file's mtime: it was last written when an upload finished, so files that
   * old were, in all likelihood, sent. The cost is a file that was still
   * waiting at that moment. The fresh index is written at once, or a restart
   * before the next upload would find no index and send everything.
   */
  private async recoverFromCorrupt(): Promise<void> {
    const aside = `${this.file}.corrupt`;
    let mtimeMs: number | undefined;
    try {
      mtimeMs = (await fs.stat(this.file)).mtimeMs;
      await fs.rename(this.file, aside);
    } catch (err) {
      this.options.logger?.debug({ file: this.file, err: String(err) }, 'cannot set the corrupt upload index aside');
    }
    this.entries = new Map();
    this.watermark = mtimeMs;
    this.recordings = new Map();
    this.options.logger?.warn(
      { file: this.file, aside, watermarkMs: mtimeMs },
      'the upload index was corrupt: set aside, starting empty; files not newer than it are taken as uploaded',
    );
    await this.persist().catch((err: unknown) => {
      this.options.logger?.debug({ file: this.file, err: String(err) }, 'cannot write the fresh upload index');
    });
  }
}
