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
// <state-dir>/uploaded.json (mode 0600, written atomically) changes only
// when an upload finishes, never on a healthy start.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { sweepOwnTemps, writeFileAtomic } from '../lib/atomic-write.js';
import { readBoundedText, TOO_LARGE } from '../lib/bounded-read.js';
import { AgentError } from '../lib/errors.js';
import { errnoOf, fsError } from '../lib/fs-errors.js';
import type { Logger } from '../lib/logger.js';

export const UPLOADED_INDEX_FILE = 'uploaded.json';
export const MAX_ENTRIES = 5000;
const VERSION = 1;
/**
 * The most the file can hold: an entry is four JSON numbers, each at most 24
 * characters (a float mtime, a 2^53 inode), so 128 bytes is room to spare.
 * A larger file is no index this agent wrote and is treated as corrupt.
 */
const MAX_FILE_BYTES = MAX_ENTRIES * 128 + 4096;

export interface FileIdentity {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

export interface UploadedIndexOptions {
  logger?: Logger;
  /** Tests lower it; default MAX_ENTRIES. */
  maxEntries?: number;
}

/** On disk: tuples keep 5000 entries near 200 KB. */
interface Stored {
  version: number;
  watermarkMs: number | null;
  entries: Array<[dev: number, ino: number, size: number, mtimeMs: number]>;
}

// Not the device number: a card reader plugged back in or remounted gets a new
// one, and every clip on it would look new. Inode, size and mtime together
// already tell two clips apart.
const keyOf = (f: FileIdentity): string => `${f.ino}:${f.size}:${f.mtimeMs}`;
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
  return ok ? (r as unknown as Stored) : undefined;
}

export class UploadedIndex {
  private entries: Map<string, FileIdentity> | undefined;
  private watermark: number | undefined;
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
      return;
    }
    const stored = parse(text);
    if (stored === undefined) return this.recoverFromCorrupt();
    this.entries = new Map(stored.entries.map(([dev, ino, size, mtimeMs]) => [keyOf({ dev, ino, size, mtimeMs }), { dev, ino, size, mtimeMs }]));
    this.watermark = stored.watermarkMs ?? undefined;
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

  private loaded(): Map<string, FileIdentity> {
    if (this.entries === undefined) throw new AgentError('internal', 'the upload index was used before load()');
    return this.entries;
  }

  private evict(): void {
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
    this.options.logger?.warn(
      { file: this.file, aside, watermarkMs: mtimeMs },
      'the upload index was corrupt: set aside, starting empty; files not newer than it are taken as uploaded',
    );
    await this.persist().catch((err: unknown) => {
      this.options.logger?.debug({ file: this.file, err: String(err) }, 'cannot write the fresh upload index');
    });
  }
}
