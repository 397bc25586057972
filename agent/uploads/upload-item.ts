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
import type { OutboxItem } from '../outbox/types.js';
import type { FileIdentity } from './uploaded-index.js';

export type { FileIdentity };

export const UPLOAD_KIND = 'upload';
/** Reasons that start with this are files the paused service refused: shown as such, never retried. */
export const PAUSED_REFUSED = 'paused-refused';

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
}

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
 * The finished part numbers below `parts`; anything that is not a part
 * number or a run of them is ignored, and a run is cut to the asset's parts
 * (a record is CRC-checked, but a run of 10^15 must not be walked even so).
 */
export function decodeParts(done: unknown, parts: number): Set<number> {
  const out = new Set<number>();
  if (!Array.isArray(done) || !Number.isSafeInteger(parts) || parts > MAX_UPLOAD_PARTS) return out;
  const add = (first: number, last: number): void => {
    for (let n = Math.max(0, first); n <= Math.min(last, parts - 1); n++) out.add(n);
  };
  for (const r of done) {
    if (Number.isSafeInteger(r)) add(r as number, r as number);
    else if (Array.isArray(r) && r.length === 2 && Number.isSafeInteger(r[0]) && Number.isSafeInteger(r[1])) add(r[0] as number, r[1] as number);
  }
  return out;
}

export type UploadState = 'queued' | 'uploading' | 'done' | 'paused-refused' | 'dead-lettered' | 'dropped';

export interface UploadView {
  name: string;
  path: string;
  bytesDone: number;
  bytesTotal: number;
  state: UploadState;
}

/** Bytes of the file its finished parts hold (the file split evenly over `parts`, the last part to the end). */
export function bytesDone(item: OutboxItem): number {
  const p = item.payload as UploadPayload;
  if (item.state === 'done') return p.size;
  const prog = item.progress as Partial<UploadProgress> | null | undefined;
  if (!prog || !Number.isSafeInteger(prog.parts) || (prog.parts as number) < 1) return 0;
  const chunk = Math.ceil(p.size / (prog.parts as number));
  let n = 0;
  for (const i of decodeParts(prog.done, prog.parts as number)) n += Math.max(0, Math.min(p.size, (i + 1) * chunk) - i * chunk);
  return Math.min(p.size, n);
}

/** An upload item as `queue` lists it; undefined for another kind. */
export function uploadView(item: OutboxItem, inFlight: boolean): UploadView | undefined {
  if (item.kind !== UPLOAD_KIND) return undefined;
  const p = item.payload as UploadPayload;
  const state: UploadState =
    item.state === 'pending' ? (inFlight ? 'uploading' : 'queued')
    : item.state === 'dead' ? (item.reason?.startsWith(PAUSED_REFUSED) ? 'paused-refused' : 'dead-lettered')
    : item.state;
  return { name: p.name, path: p.path, bytesDone: bytesDone(item), bytesTotal: p.size, state };
}
