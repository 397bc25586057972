// The per-part hash of real-time uploads: CRC-32 where this Node has
// zlib.crc32 (the check value of "123456789" is cbf43926, whatever the
// buffers it comes in), SHA-256's first 16 hex digits otherwise.
import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import { PART_HASH, partHasher } from '../../agent/uploads/part-hash.js';

describe('part hash', () => {
  it('CRC-32 where zlib has it, over buffers in any split', () => {
    expect(PART_HASH).toBe(typeof (zlib as { crc32?: unknown }).crc32 === 'function' ? 'crc32' : 'sha256');
    const h = partHasher('crc32');
    if (h === undefined) return expect(PART_HASH).toBe('sha256');
    h.update(Buffer.from('1234'));
    h.update(Buffer.from('56789'));
    expect(h.digest()).toBe('cbf43926');
    const zero = partHasher('crc32')!;
    zero.update(Buffer.from([0]));
    expect(zero.digest()).toMatch(/^[0-9a-f]{8}$/);
  });

  it('SHA-256: the first 16 hex digits', () => {
    const h = partHasher('sha256')!;
    h.update(Buffer.from('abc'));
    expect(h.digest()).toBe(createHash('sha256').update('abc').digest('hex').slice(0, 16));
  });
});
