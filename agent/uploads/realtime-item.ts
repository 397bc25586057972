// A real-time upload as an outbox item: a clip the camera is still writing
// (docs/uploads.md, "Real-time uploads"). Its payload names the file where the recorder
// writes it (`NAME.EXT.part`, or `NAME.EXT` written in place) and the name
// it has once finished; its progress is the asset and, per part sent, a
// hash of the bytes that went, so a restart sends no finished part again
// and the finish can tell which parts the recorder rewrote since.
//
// Parts are cut at fixed offsets: part n holds bytes [(n-1)·P, n·P) of the
// file, P = REALTIME_PART_BYTES, and the final part runs from there to the
// end. 8 MiB: above the service's 5 MiB floor for a part that is not final;
// twice that floor halves the requests (one URL request and one PUT per part:
// at 20 MB/s, a part every 0.4 s), while the tail left after the recorder
// stops (part 1, held back, and the last partial part: at most 2·P) still
// crosses a 40 MB/s link in under half a second. 10,000 parts of 8 MiB are
// 78 GiB, far beyond a take; a longer one is handed back to a whole-file
// upload.
import * as fs from '../lib/fs-async.js';
import type { OutboxItem } from '../outbox/types.js';
import { REALTIME_KIND } from './kinds.js';
import type { PartHashName } from './part-hash.js';

export { REALTIME_KIND };

export const REALTIME_PART_BYTES = 8 * 1024 * 1024;

export interface RealtimePayload {
  /** Where the recorder writes the clip: `NAME.EXT.part`, or `NAME.EXT` for a clip written in place. */
  path: string;
  /** Its path once finished (`path` without `.part`; the same for a clip written in place). */
  finalPath: string;
  /** The asset's name: the finished file's. */
  name: string;
  filetype: string;
  extension?: string;
  channelKey?: string;
  /** The file's identity: a rename keeps it, so the finished file is known as this recording. */
  ino: number;
  dev: number;
  /** Its modification time when first seen (the asset's `offset`). */
  mtimeMs: number;
  /**
   * Its birth time when queued, where the file system keeps one: a later take given the same name and the
   * freed inode is born at another time, so a cancelled item is not taken for it. Absent in older items.
   */
  birthMs?: number;
}

/**
 * What is on disk of a recording now, at its working name or else its finished name: its size and birth
 * time (0 where the file system keeps none), which the upload index keeps for a recording ended for good
 * (uploaded-index.ts RecordingIdentity). Nothing found: nothing known, and the index matches by inode and
 * name alone, as it did before it kept these.
 */
export async function recordingOnDisk(p: Pick<RealtimePayload, 'path' | 'finalPath'>): Promise<{ size?: number; birthMs?: number }> {
  for (const at of p.path === p.finalPath ? [p.path] : [p.path, p.finalPath]) {
    const st = await fs.lstat(at).catch(() => undefined);
    if (st?.isFile()) return { size: st.size, birthMs: st.birthtimeMs > 0 ? Math.round(st.birthtimeMs) : 0 };
  }
  return {};
}


export interface RealtimeProgress {
  assetId: string;
  /** By the service's clock: the asset expires 24 h later. */
  createdAt: number;
  /** The part size the asset was cut with. */
  partBytes: number;
  /** How `sent` was hashed (part-hash.ts). */
  hash: PartHashName;
  /** `sent[n-1]`: the hash of part n as it went; '' for a part not sent. */
  sent: string[];
  /** Bytes of the file on disk at the last record (what `queue` shows as the total while it records). */
  seen: number;
  /** Set once the final part is at storage: the finished file's size and modification time. */
  final?: { size: number; mtimeMs: number };
}

/** The same recording: one inode on one device, under the same finished name. */
export const sameRecording = (a: Pick<RealtimePayload, 'ino' | 'dev' | 'finalPath'>, b: Pick<RealtimePayload, 'ino' | 'dev' | 'finalPath'>): boolean =>
  a.ino === b.ino && a.dev === b.dev && a.finalPath === b.finalPath;

/** The progress record when it has the shape this agent writes; undefined otherwise (the upload starts over). */
export function realtimeProgressOf(v: unknown): RealtimeProgress | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const p = v as Partial<RealtimeProgress>;
  if (typeof p.assetId !== 'string' || typeof p.createdAt !== 'number' || !Number.isSafeInteger(p.partBytes) || (p.partBytes as number) <= 0) return undefined;
  if (!Array.isArray(p.sent) || !p.sent.every((h) => typeof h === 'string')) return undefined;
  if (!Number.isSafeInteger(p.seen) || (p.hash !== 'crc32' && p.hash !== 'sha256')) return undefined;
  return p as RealtimeProgress;
}

/** Bytes the parts at storage hold. */
export function realtimeBytesDone(item: OutboxItem): number {
  const prog = realtimeProgressOf(item.progress);
  if (prog === undefined) return 0;
  if (prog.final) return prog.final.size;
  return prog.sent.reduce((n, h) => n + (h === '' ? 0 : prog.partBytes), 0);
}

/** Bytes known so far: the finished size, else what was on disk at the last record. */
export function realtimeBytesTotal(item: OutboxItem): number {
  const prog = realtimeProgressOf(item.progress);
  if (prog === undefined) return 0;
  return prog.final?.size ?? Math.max(prog.seen, realtimeBytesDone(item));
}

/** Whether its final part went (the upload view's `realtime`). */
export const realtimeFinished = (item: OutboxItem): boolean => item.state === 'done' || realtimeProgressOf(item.progress)?.final !== undefined;
