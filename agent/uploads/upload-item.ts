// An upload as an outbox item: its payload (the file), what the outbox
// remembers of it between attempts (the asset and the finished parts), and
// what the rest of the agent reads from it (`queue`, the figures of `status`).
//
// The finished parts are written as runs: chunks finish almost in order, so
// a file of thousands of parts is a handful of numbers, where a plain list
// would make every progress record of a long upload longer than the last
// (a 8 GiB file in 5 MiB parts: 1,640 records of up to 8 KB each, each one
// parsed, copied and written).
import { MAX_UPLOAD_PARTS } from '../api/assets.js';
import { CANCELLED, type OutboxItem } from '../outbox/types.js';
import { UPLOAD_KIND } from './kinds.js';
import { REALTIME_KIND, realtimeBytesDone, realtimeBytesTotal, realtimeFinished, type RealtimePayload } from './realtime-item.js';
import type { FileIdentity } from './uploaded-index.js';

export type { FileIdentity };

export { UPLOAD_KIND };
/** Reasons that start with this are files the paused service refused: shown as such, never retried. */
export const PAUSED_REFUSED = 'paused-refused';
/** A done upload's note starts with this when a cancel came after its last part was on its way and storage took it (last-part.ts). */
export const COMPLETED_DESPITE_CANCEL = 'completed-despite-cancel';

export interface UploadPayload extends FileIdentity {
  path: string;
  name: string;
  filetype: string;
  extension?: string;
  /** The profile channel key (the sub-folder it came from). */
  channelKey?: string;
}

/** A part number, or an inclusive run [first, last] of them (records written before runs hold only numbers). */
export type PartRun = number | [number, number];

/** `createdAt` is by the service's clock; the URLs live in upload-urls.ts. */
export interface UploadProgress {
  assetId: string;
  parts: number;
  createdAt: number;
  done: PartRun[];
  /** The file's inode change time when the asset was created: a later attempt goes on only while it is the same (version-check.ts). */
  ctimeMs?: number;
  /** The content check (version-check.ts): where each part's sample lies, and the XOR of the sample digests of the parts sent. */
  check?: { seed: number; sent: string };
}

/** The same file as queued (path, inode, size, modification time): one item, one asset. */
export const sameUpload = (a: UploadPayload, b: UploadPayload): boolean => a.path === b.path && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;

/** The finished parts as runs, smallest first. */
export function encodeParts(parts: Iterable<number>): PartRun[] {
  const sorted = [...parts].sort((a, b) => a - b);
  const out: PartRun[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === (sorted[j] as number) + 1) j++;
    out.push(j === i ? (sorted[i] as number) : [sorted[i] as number, sorted[j] as number]);
    i = j + 1;
  }
  return out;
}

/**
 * The finished parts below `parts` as sorted, disjoint inclusive runs.
 * Anything that is not a part number or a run of them is ignored; runs are
 * cut to the asset's parts and merged, so no record (CRC-checked, but even
 * so) makes anyone walk more than the asset's parts.
 */
function runsOf(done: unknown, parts: number): Array<[number, number]> {
  if (!Array.isArray(done) || !Number.isSafeInteger(parts) || parts > MAX_UPLOAD_PARTS) return [];
  const runs: Array<[number, number]> = [];
  for (const r of done) {
    const [a, b] = Number.isSafeInteger(r) ? [r as number, r as number]
      : Array.isArray(r) && r.length === 2 && Number.isSafeInteger(r[0]) && Number.isSafeInteger(r[1]) ? [r[0] as number, r[1] as number]
      : [1, 0];
    const first = Math.max(0, a);
    const last = Math.min(b, parts - 1);
    if (first <= last) runs.push([first, last]);
  }
  runs.sort((x, y) => x[0] - y[0]);
  const merged: Array<[number, number]> = [];
  for (const [a, b] of runs) {
    const top = merged.at(-1);
    if (top !== undefined && a <= top[1] + 1) top[1] = Math.max(top[1], b);
    else merged.push([a, b]);
  }
  return merged;
}

/** The finished part numbers below `parts`. */
export function decodeParts(done: unknown, parts: number): Set<number> {
  const out = new Set<number>();
  for (const [a, b] of runsOf(done, parts)) for (let n = a; n <= b; n++) out.add(n);
  return out;
}

/** The local API's states (docs/local-api.md): an item the queue's cap dropped is dead-lettered, its reason saying so. */
export type UploadState = 'queued' | 'uploading' | 'done' | 'paused-refused' | 'dead-lettered' | 'cancelled' | typeof COMPLETED_DESPITE_CANCEL;

export interface UploadView {
  name: string;
  path: string;
  bytesDone: number;
  bytesTotal: number;
  state: UploadState;
  /** A real-time upload (realtime-item.ts): 'recording' while the camera writes it (bytesTotal is what is on disk so far), 'finished' once its final part went. */
  realtime?: 'recording' | 'finished';
}

/** The file is split evenly over its parts: this many bytes each, the last one to the end of the file. */
export const partBytes = (size: number, parts: number): number => Math.ceil(size / parts);

/** Bytes of the file its finished parts hold (the file split evenly over `parts`, the last part to the end). */
export function bytesDone(item: OutboxItem): number {
  const p = item.payload as UploadPayload;
  if (item.state === 'done') return p.size;
  const prog = item.progress as Partial<UploadProgress> | null | undefined;
  if (!prog || !Number.isSafeInteger(prog.parts) || (prog.parts as number) < 1) return 0;
  const chunk = partBytes(p.size, prog.parts as number);
  // Summed by run, not by part: status asks for every pending upload at every refresh.
  let n = 0;
  for (const [a, b] of runsOf(prog.done, prog.parts as number)) n += Math.max(0, Math.min(p.size, (b + 1) * chunk) - Math.min(p.size, a * chunk));
  return Math.min(p.size, n);
}

/** Uploads of both kinds: a finished file (`upload`) and a clip uploaded while it is recorded (`realtime-upload`). */
export const isUploadKind = (kind: string): boolean => kind === UPLOAD_KIND || kind === REALTIME_KIND;

/** An upload item (either kind) as `queue` and the local API list it; undefined for another kind. */
export function uploadView(item: OutboxItem, inFlight: boolean): UploadView | undefined {
  if (!isUploadKind(item.kind)) return undefined;
  const state: UploadState =
    item.state === 'pending' ? (inFlight ? 'uploading' : 'queued')
    : item.state === 'dead' ? (item.reason?.startsWith(PAUSED_REFUSED) ? 'paused-refused' : item.reason?.startsWith(CANCELLED) ? 'cancelled' : 'dead-lettered')
    : item.state === 'dropped' ? 'dead-lettered'
    : item.reason?.startsWith(COMPLETED_DESPITE_CANCEL) ? COMPLETED_DESPITE_CANCEL
    : item.state;
  if (item.kind === REALTIME_KIND) {
    const r = item.payload as RealtimePayload;
    // Once finished, the clip is at its finished name (the .part was renamed); while recording, where the recorder writes.
    const finished = realtimeFinished(item);
    return { name: r.name, path: finished ? r.finalPath : r.path, bytesDone: realtimeBytesDone(item), bytesTotal: realtimeBytesTotal(item), state, realtime: finished ? 'finished' : 'recording' };
  }
  const p = item.payload as UploadPayload;
  return { name: p.name, path: p.path, bytesDone: bytesDone(item), bytesTotal: p.size, state };
}
