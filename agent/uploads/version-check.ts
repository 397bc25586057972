// One upload sends one version of a file, never a mix. A camera may rewrite
// a clip in place (same size) or keep appending to it while it uploads; the
// service builds the object from whatever bytes each part carried, so a
// change between the first part and the last would be stored as a clip that
// never existed.
//
// Two checks, both cheap enough for a Raspberry Pi uploading from an SD card:
//
// - The file's metadata, on the descriptor the upload holds open and on the
//   path (size, modification time, inode change time, inode): before the
//   first part, after every part, and before the last bytes go. Any write
//   moves the inode change time, which no program can set back; a file
//   renamed over the path, or a folder on its way swapped, shows another
//   inode; a link put at the path is a change of its own. Two fstat and two
//   stat per part (parts are megabytes).
// - A sample of the bytes, for what metadata can miss: FAT and exFAT keep
//   times to 2 s or 10 ms and have no real inode change time, so a same-size
//   rewrite whose mtime was set back, or one within a tick, keeps every
//   number. Each part's sample (its first and last 4 KiB and one 4 KiB block
//   at a place a per-upload seed picks) is hashed before the part is sent,
//   and all of them are read again before the last bytes of the upload go:
//   12 KiB per part, twice, about 0.5 % more reads for the 5 MiB parts the
//   service hands out, and a few hundred sha256 blocks per GB. Hashing every
//   part in full and reading the file again at the end would double the
//   reads (25 to 50 s per GB on an SD card) and cost 10 s or more of sha256
//   per GB on a Pi 4, which has no crypto instructions. The digests are
//   combined by XOR, so the progress record keeps 16 hex characters whatever
//   the part count, and a restart checks the parts sent before it too.
import { constants, promises as fs, type Stats } from 'node:fs';
import { createHash } from 'node:crypto';
import { describeFileType } from '../lib/bounded-read.js';
import { linkRefusal, openedOutsideRoots, type UploadRoots } from './upload-paths.js';

/** Bytes in each block of a part's sample. */
export const SAMPLE_BLOCK_BYTES = 4096;
/** Bytes of each part's digest kept (XORed together; 64 bits tell versions apart). */
const DIGEST_BYTES = 8;

/** What the checks read of a file: node's Stats fits. */
export type FileFacts = Pick<Stats, 'dev' | 'ino' | 'nlink' | 'size' | 'mtimeMs' | 'ctimeMs' | 'isFile' | 'isDirectory' | 'isFIFO' | 'isSocket' | 'isCharacterDevice' | 'isBlockDevice' | 'isSymbolicLink'>;

export interface OpenFile {
  /** The descriptor: storage PUTs read their bytes through it (api/storage-body.ts), never through the path. */
  readonly fd: number;
  stat(): Promise<FileFacts>;
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  close(): Promise<void>;
}

/** The file operations an upload uses (tests replace them). */
export interface UploadFiles {
  /** Opens for reading without blocking (a FIFO must not wedge the upload), and without following a link as the last component. */
  open(file: string): Promise<OpenFile>;
  /** The file a path leads to (links followed). */
  stat(file: string): Promise<FileFacts>;
  /** The path itself (a link as a link). */
  lstat(file: string): Promise<FileFacts>;
}

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | constants.O_NOFOLLOW;

export const nodeUploadFiles: UploadFiles = {
  open: (file) => fs.open(file, OPEN_FLAGS),
  stat: (file) => fs.stat(file),
  lstat: (file) => fs.lstat(file),
};

/** A file opened for an upload and checked, before a byte of it is read. */
export interface CheckedFile {
  file: OpenFile;
  st: FileFacts;
  /** The path's last component was a link (one the media watcher followed, inside the media dir). */
  viaLink: boolean;
}

/**
 * Opens `path` for one attempt at an upload and checks what it opened, on
 * the descriptor every byte will be read from: a regular file, with one
 * name (upload-paths.ts linkRefusal), lying inside the root its path is
 * under (upload-paths.ts openedOutsideRoots; not checked without `roots`).
 * Links in the path are resolved first, and the real path opened without
 * following a link, so the file the checks look at is the file opened.
 * Throws the open's error, NotRegular, or NotTaken (the descriptor closed).
 */
export async function openForUpload(path: string, files: UploadFiles, roots?: UploadRoots): Promise<CheckedFile> {
  const viaLink = (await files.lstat(path)).isSymbolicLink();
  const file = await files.open(await fs.realpath(path));
  try {
    const st = await file.stat();
    if (!st.isFile()) throw new NotRegular(describeKind(st));
    const why = linkRefusal(st) ?? (roots === undefined ? undefined : await openedOutsideRoots(path, file.fd, st, roots));
    if (why !== undefined) throw new NotTaken(why);
    return { file, st, viaLink };
  } catch (err) {
    await file.close().catch(() => undefined);
    throw err;
  }
}

/**
 * The numbers that tell one version of a file from another. The inode change
 * time is absent where it is not known, or not the file's own (a recording's
 * rename to its finished name changes it; after a crash only its size and
 * modification time are on record).
 */
export interface Version {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs?: number;
}

export const versionOf = (s: FileFacts): Version => ({ dev: s.dev, ino: s.ino, size: s.size, mtimeMs: s.mtimeMs, ctimeMs: s.ctimeMs });

/** What changed from `was` to `now`, in words; undefined when nothing did. */
export function describeChange(was: Version, now: Version): string | undefined {
  if (now.ino !== was.ino || now.dev !== was.dev) return 'another file was put in its place';
  if (now.size !== was.size) return `its size changed from ${was.size} to ${now.size} bytes`;
  if (now.mtimeMs !== was.mtimeMs) return 'its modification time changed';
  if (was.ctimeMs !== undefined && now.ctimeMs !== was.ctimeMs) return 'it was written to or its inode changed (inode change time)';
  return undefined;
}

/**
 * What changed at `path` since it held version `was`, in words; undefined
 * when it still leads to that version. A link put at the path counts as a
 * change even when it leads back to the file (someone is at work there),
 * unless the file was reached through a link to begin with (`viaLink`).
 * For an upload under way (PinnedFile) and for the delete after one
 * (finish-upload.ts).
 */
export async function changedAt(path: string, was: Version, files: UploadFiles, viaLink = false): Promise<string | undefined> {
  let at: FileFacts;
  try {
    if (!viaLink && (await files.lstat(path)).isSymbolicLink()) return 'its path is now a symbolic link';
    at = await files.stat(path);
  } catch (err) {
    return `it is no longer at its path (${(err as NodeJS.ErrnoException).code ?? 'error'})`;
  }
  return describeChange(was, versionOf(at));
}

/** "a FIFO (named pipe)", "a directory", ... for what is not a regular file (the words bounded reads use). */
export const describeKind = (st: FileFacts): string => describeFileType(st as Stats);

/** A 32-bit mix of the seed and the part number (murmur3's finalizer): where the part's middle block lies. */
function mix(seed: number, part: number): number {
  let h = (seed ^ Math.imul(part + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Part `part` ([start, end) of the file)'s sample: [position, length] blocks, in order. */
export function sampleBlocks(part: number, start: number, end: number, seed: number): Array<[number, number]> {
  const len = end - start;
  if (len <= 0) return [];
  if (len <= 3 * SAMPLE_BLOCK_BYTES) return [[start, len]];
  const room = len - SAMPLE_BLOCK_BYTES;
  const middle = start + Math.floor((mix(seed, part) / 2 ** 32) * (room + 1));
  return [[start, SAMPLE_BLOCK_BYTES], [middle, SAMPLE_BLOCK_BYTES], [end - SAMPLE_BLOCK_BYTES, SAMPLE_BLOCK_BYTES]];
}

/** Reads up to `length` bytes at `position`; short only at the end of the file. */
export async function readAt(file: OpenFile, buffer: Buffer, length: number, position: number): Promise<number> {
  let got = 0;
  while (got < length) {
    const { bytesRead } = await file.read(buffer, got, length - got, position + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got;
}

export const zeroDigest = (): Buffer => Buffer.alloc(DIGEST_BYTES);

export function xorInto(acc: Buffer, d: Buffer): void {
  for (let i = 0; i < DIGEST_BYTES; i++) acc[i] = (acc[i] as number) ^ (d[i] as number);
}

/**
 * The open file an upload reads from, with the version it had when the
 * upload began. Every byte sent and every sample comes through this
 * descriptor (openForUpload), so nothing put at the path later (a file
 * renamed over it, a folder on its way swapped for one holding a link to
 * credentials.json) can slip into them; the path is asked after every part
 * only to stop an upload whose file is no longer there.
 */
export class PinnedFile {
  private constructor(
    readonly path: string,
    readonly file: OpenFile,
    readonly baseline: Version,
    private readonly files: UploadFiles,
    private readonly viaLink: boolean,
  ) {}

  /** Opens and checks `path` (openForUpload); throws as it does. */
  static async open(path: string, files: UploadFiles, roots?: UploadRoots): Promise<PinnedFile> {
    const { file, st, viaLink } = await openForUpload(path, files, roots);
    return new PinnedFile(path, file, versionOf(st), files, viaLink);
  }

  /** The descriptor storage PUTs read from. */
  get fd(): number {
    return this.file.fd;
  }

  /** What changed since the upload began, on the descriptor or at the path; undefined when nothing did. */
  async changed(): Promise<string | undefined> {
    return describeChange(this.baseline, versionOf(await this.file.stat())) ?? (await changedAt(this.path, this.baseline, this.files, this.viaLink));
  }

  /** Reached through a link the media watcher followed (the path's last component). */
  get reachedViaLink(): boolean {
    return this.viaLink;
  }

  /** The digest of part `part`'s sample as the file holds it now. */
  async sample(part: number, start: number, end: number, seed: number): Promise<Buffer> {
    const hash = createHash('sha256');
    const head = Buffer.allocUnsafe(4);
    head.writeUInt32BE(part);
    hash.update(head);
    // Its own buffer: two parts are sampled at once.
    const buf = Buffer.allocUnsafe(SAMPLE_BLOCK_BYTES * 3);
    for (const [pos, len] of sampleBlocks(part, start, end, seed)) {
      const n = await readAt(this.file, buf, len, pos);
      // A short read (the file shrank) hashes differently from the full one.
      hash.update(buf.subarray(0, n));
    }
    return hash.digest().subarray(0, DIGEST_BYTES);
  }

  /** Every part's sample read again and combined: equal to `sent` when the file still holds what was sent. */
  async samplesMatch(parts: number, chunk: number, seed: number, sent: Buffer): Promise<boolean> {
    const acc = zeroDigest();
    const size = this.baseline.size;
    for (let i = 0; i < parts; i++) {
      const start = Math.min(size, i * chunk);
      xorInto(acc, await this.sample(i, start, Math.min(size, start + chunk), seed));
    }
    return acc.equals(sent);
  }

  close(): Promise<void> {
    return this.file.close();
  }
}

/** The path holds something an upload cannot read as a file. */
export class NotRegular extends Error {
  constructor(readonly kind: string) {
    super(`is ${kind}, not a regular file`);
  }
}

/** The file is not one an upload may read (more than one name, or outside its root): the reason. */
export class NotTaken extends Error {
  constructor(readonly why: string) {
    super(why);
  }
}

/** The file changed while it uploaded: the upload stops and the file goes again once it holds still. */
export class VersionChanged extends Error {
  constructor(readonly why: string) {
    super(`the file changed while it uploaded: ${why}`);
  }
}
