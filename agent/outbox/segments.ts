// Segment files and what reading one back can find. Segments are numbered
// in the order they were started, and a new one is only started once the
// previous one's records are fsynced: so only the newest segment can end in
// a torn record, and a bad record anywhere else is rot, not a power cut.
import path from 'node:path';
import { errnoOf } from '../lib/fs-errors.js';
import type { OutboxFs } from './types.js';
import { HEADER_BYTES, readRecord, type OutboxRecord } from './record.js';

export const QUARANTINE_DIR = 'quarantine';

/**
 * The most a segment file can hold, so a read of one is bounded: a segment
 * is closed at segmentBytes, but the first item of one goes in whatever its
 * size, and an item is at most the cap (cap.ts); the rest is room for the
 * counters and end records around it. A larger file under a segment's name
 * was not written by the outbox (or under a larger cap) and reads as corrupt.
 */
export function segmentReadLimit(segmentBytes: number, capBytes: number): number {
  return segmentBytes + capBytes + 64 * 1024;
}

const NAME = /^seg-(\d{6,})\.log$/;

export function segmentName(no: number): string {
  return `seg-${String(no).padStart(6, '0')}.log`;
}

export function segmentPath(dir: string, no: number): string {
  return path.join(dir, segmentName(no));
}

/** The segment numbers in `dir`, ascending; an absent dir has none. */
export async function listSegments(fs: OutboxFs, dir: string): Promise<number[]> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (err) {
    if (codeOf(err) === 'ENOENT') return [];
    throw err;
  }
  const out: number[] = [];
  for (const name of names) {
    const m = NAME.exec(name);
    if (m) out.push(Number(m[1]));
  }
  return out.sort((a, b) => a - b);
}

export interface Scanned {
  records: Array<{ rec: OutboxRecord; size: number }>;
  /** Bytes up to the end of the last good record. */
  good: number;
  /** ok: every byte is a good record; torn: a tail to cut; corrupt: a bad record with good ones after it, or in an older segment. */
  status: 'ok' | 'torn' | 'corrupt';
  /** In a corrupt segment, the good records found past the bad one: not replayed, only counted as lost. */
  beyond?: OutboxRecord[];
}

/**
 * Reads every record of one segment. In the newest segment a bad record
 * that no good record follows is a write a power cut interrupted (a short
 * tail, or the zeros some file systems leave in a file extended but not
 * yet written): it is torn. A bad record with good ones after it, or a bad
 * record in any older segment, is corruption.
 */
export function scanSegment(bytes: Uint8Array, newest: boolean): Scanned {
  const records: Scanned['records'] = [];
  let off = 0;
  while (off < bytes.length) {
    const r = readRecord(bytes, off);
    if (!r.ok) {
      const next = goodRecordAfter(bytes, off + 1);
      if (newest && next === undefined) return { records, good: off, status: 'torn' };
      const rest = next === undefined ? undefined : scanSegment(bytes.subarray(next), false);
      const beyond = rest === undefined ? [] : [...rest.records.map((x) => x.rec), ...(rest.beyond ?? [])];
      return { records, good: off, status: 'corrupt', beyond };
    }
    records.push({ rec: r.rec, size: r.size });
    off += r.size;
  }
  return { records, good: off, status: 'ok' };
}

const OPEN_BRACE = 0x7b;

/** The offset of the next good record at or after `from`, if any. */
function goodRecordAfter(bytes: Uint8Array, from: number): number | undefined {
  for (let off = from; off + HEADER_BYTES < bytes.length; off++) {
    // Every body is a JSON object: skip the CRC for offsets that cannot start one.
    if (bytes[off + HEADER_BYTES] !== OPEN_BRACE) continue;
    if (readRecord(bytes, off).ok) return off;
  }
  return undefined;
}

export function codeOf(err: unknown): string | undefined {
  // An AgentError from lib/bounded-read.ts keeps the code in its details.
  return typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : errnoOf(err);
}
