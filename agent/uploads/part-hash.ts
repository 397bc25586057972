// The hash a real-time upload keeps per part sent, to tell at the finish
// which parts the recorder rewrote since (realtime-worker.ts). It must only
// see accidental change, never an adversary, and the finish reads the whole
// clip through it once more: speed decides. CRC-32 (zlib.crc32, Node 20.15
// and later) runs at memory speed on x86 and on ARMv8's CRC instructions; a
// rewritten part goes unnoticed with a chance of 2^-32. SHA-256 is the
// fallback on an older Node: on a Raspberry Pi 4, which has no SHA
// instructions, it hashes about 120 MB/s, so a 4 GB clip would add half a
// minute to the stop.
import { createHash } from 'node:crypto';
import zlib from 'node:zlib';

export type PartHashName = 'crc32' | 'sha256';

const crc32 = (zlib as { crc32?: (data: NodeJS.ArrayBufferView, value?: number) => number }).crc32;

/** The hash new uploads use on this Node. */
export const PART_HASH: PartHashName = typeof crc32 === 'function' ? 'crc32' : 'sha256';

export interface PartHasher {
  update(bytes: Buffer): void;
  /** Hex: 8 digits for CRC-32, the first 16 of SHA-256. */
  digest(): string;
}

/** A hasher of `name`, or undefined when this Node cannot compute it (a record written by a newer Node). */
export function partHasher(name: PartHashName): PartHasher | undefined {
  if (name === 'sha256') {
    const h = createHash('sha256');
    return { update: (b) => void h.update(b), digest: () => h.digest('hex').slice(0, 16) };
  }
  if (typeof crc32 !== 'function') return undefined;
  let value = 0;
  return { update: (b) => void (value = crc32(b, value)), digest: () => value.toString(16).padStart(8, '0') };
}
