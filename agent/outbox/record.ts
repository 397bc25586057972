// One record of a segment file: u32 body length, u32 CRC-32 of the body
// (both little-endian), then the body, a JSON object. The CRC is what tells
// a torn or rotted record from a good one, so a record is trusted only when
// its length fits the file, its CRC matches and its body parses to a known
// shape. Keys are short because every put pays for them on flash.
import { builtin } from '../lib/builtin.js';
import type { OutboxItem } from './types.js';

/** length + CRC, in front of every body. */
export const HEADER_BYTES = 8;

/** Written first in every segment: the counters and the next sequence, so deleting older segments loses neither. */
export interface CountersRecord {
  t: 'counters';
  seq: number;
  dropped: Record<string, number>;
  quarantined: number;
}

/** A new item, or (when `id` is already known) a copy of a pending one carried forward, `pg` being its newest progress. */
export interface PutRecord {
  t: 'put';
  id: string;
  k: string;
  g?: string;
  pr: number;
  at: string;
  d: unknown;
  pg?: unknown;
  /** 1: urgent (OutboxItem.urgent), taken before the others. */
  u?: 1;
}

export interface ProgressRecord {
  t: 'progress';
  id: string;
  d: unknown;
}

/** done, dead and drop end an item; drop names the kind so the count survives the loss of the put. */
export interface EndRecord {
  t: 'done' | 'dead' | 'drop';
  id: string;
  k?: string;
  r?: string;
}

export type OutboxRecord = CountersRecord | PutRecord | ProgressRecord | EndRecord;

// Node 20.0 to 20.14 have no zlib.crc32; the table is the same polynomial (0xEDB88320, reflected).
let table: Uint32Array | undefined;

function crcTable(): Uint32Array {
  if (table !== undefined) return table;
  table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
}

export function crc32Table(data: Uint8Array): number {
  const t = crcTable();
  let c = 0xffffffff;
  for (let i = 0; i < data.length; i++) c = t[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// zlib is loaded with the first record, not at start: a daemon with an empty
// queue never needs it (about 1 MiB of RSS for the module).
let native: ((data: Uint8Array) => number) | null | undefined;

export function crc32(data: Uint8Array): number {
  native ??= builtin<{ crc32?: (data: Uint8Array) => number }>('node:zlib').crc32 ?? null;
  return native !== null ? native(data) >>> 0 : crc32Table(data);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export function encodeRecord(rec: OutboxRecord): Uint8Array {
  const body = encoder.encode(JSON.stringify(rec));
  const out = new Uint8Array(HEADER_BYTES + body.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, body.length, true);
  view.setUint32(4, crc32(body), true);
  out.set(body, HEADER_BYTES);
  return out;
}

/** The size a record will take on disk, without building it twice. */
export function recordSize(rec: OutboxRecord): number {
  return HEADER_BYTES + encoder.encode(JSON.stringify(rec)).length;
}

export type Framed = { ok: true; rec: OutboxRecord; size: number } | { ok: false };

/** Reads the record at `off`, or says it is not a good one (short, bad CRC, not a record). */
export function readRecord(bytes: Uint8Array, off: number): Framed {
  if (bytes.length - off < HEADER_BYTES) return { ok: false };
  const view = new DataView(bytes.buffer, bytes.byteOffset + off, HEADER_BYTES);
  const len = view.getUint32(0, true);
  if (len === 0 || len > bytes.length - off - HEADER_BYTES) return { ok: false };
  const body = bytes.subarray(off + HEADER_BYTES, off + HEADER_BYTES + len);
  if (crc32(body) !== view.getUint32(4, true)) return { ok: false };
  let rec: unknown;
  try {
    rec = JSON.parse(decoder.decode(body));
  } catch {
    return { ok: false };
  }
  return isRecord(rec) ? { ok: true, rec, size: HEADER_BYTES + len } : { ok: false };
}

function isRecord(v: unknown): v is OutboxRecord {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  switch (r.t) {
    case 'counters':
      return typeof r.seq === 'number' && typeof r.quarantined === 'number' && typeof r.dropped === 'object' && r.dropped !== null;
    case 'put':
      return typeof r.id === 'string' && typeof r.k === 'string' && typeof r.pr === 'number' && typeof r.at === 'string';
    case 'progress':
    case 'done':
    case 'dead':
    case 'drop':
      return typeof r.id === 'string';
    default:
      return false;
  }
}

/** A pending item written again in full: a put with the same id that carries its newest progress. */
export function copyRecord(item: OutboxItem, progress: unknown): PutRecord {
  const rec: PutRecord = { t: 'put', id: item.id, k: item.kind, pr: item.priority, at: item.createdAt, d: item.payload };
  if (item.group !== undefined) rec.g = item.group;
  if (progress !== undefined) rec.pg = progress;
  if (item.urgent === true) rec.u = 1;
  return rec;
}

/**
 * What the urgency flag adds to a put or a copy: `,"u":1`, the last key of
 * both. The cap charges every item for it from its put on (ledger.ts
 * chargeOf), so raising an item never makes it cost more.
 */
const FLAG_PROBE: PutRecord = { t: 'put', id: '', k: '', pr: 0, at: '', d: null };
export const URGENT_FLAG_BYTES = recordSize({ ...FLAG_PROBE, u: 1 }) - recordSize(FLAG_PROBE);

/** The sequence number in an id (`<boot id>:<sequence>`), or -1 for an id this outbox did not make. */
export function sequenceOf(id: string): number {
  const n = Number(id.slice(id.lastIndexOf(':') + 1));
  return Number.isSafeInteger(n) && n >= 0 ? n : -1;
}
