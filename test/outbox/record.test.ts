// The record framing: CRC-32 (IEEE, as zlib and PNG use it) against known
// vectors, the table fallback against the native one, and a reader that
// trusts a record only when its length, CRC and shape all hold.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { crc32, crc32Table, encodeRecord, readRecord, HEADER_BYTES, sequenceOf } from '../../agent/outbox/record.js';
import { scanSegment } from '../../agent/outbox/segments.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('CRC-32', () => {
  it.each([
    ['', 0x00000000],
    ['a', 0xe8b7be43],
    ['123456789', 0xcbf43926],
    ['The quick brown fox jumps over the lazy dog', 0x414fa339],
  ])('crc32(%j) = %s, with the table and with whatever this Node has', (input, expected) => {
    expect(crc32Table(text(input))).toBe(expected);
    expect(crc32(text(input))).toBe(expected);
  });

  it('the table agrees with the native one on any bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 2_000 }), (bytes) => crc32Table(bytes) === crc32(bytes)));
  });
});

describe('records', () => {
  const put = { t: 'put', id: 'boot:7', k: 'channel-connect', pr: 1, at: '2026-01-01T00:00:00.000Z', d: { camera: 'é' } } as const;

  it('frames a body as length, CRC, JSON, and reads it back', () => {
    const bytes = encodeRecord(put);
    const view = new DataView(bytes.buffer);
    expect(view.getUint32(0, true)).toBe(bytes.length - HEADER_BYTES);
    expect(view.getUint32(4, true)).toBe(crc32(bytes.subarray(HEADER_BYTES)));
    expect(readRecord(bytes, 0)).toEqual({ ok: true, rec: put, size: bytes.length });
  });

  it('refuses a short header, a short body, a zero length, a flipped bit, and a body that is not a record', () => {
    const bytes = encodeRecord(put);
    expect(readRecord(bytes.subarray(0, 5), 0).ok).toBe(false);
    expect(readRecord(bytes.subarray(0, bytes.length - 1), 0).ok).toBe(false);
    expect(readRecord(new Uint8Array(16), 0).ok).toBe(false);
    for (const at of [0, 4, HEADER_BYTES, bytes.length - 1]) {
      const bad = bytes.slice();
      bad[at]! ^= 0x10;
      expect(readRecord(bad, 0).ok).toBe(false);
    }
    // A good CRC over a body that is no record of ours (or no JSON at all) is still refused.
    for (const body of [text('{"t":"nope","id":"x"}'), text('{"t":"put","id":"x"}'), text('not json')]) {
      const framed = new Uint8Array(HEADER_BYTES + body.length);
      new DataView(framed.buffer).setUint32(0, body.length, true);
      new DataView(framed.buffer).setUint32(4, crc32(body), true);
      framed.set(body, HEADER_BYTES);
      expect(readRecord(framed, 0).ok).toBe(false);
    }
  });

  it('scanSegment tells a torn tail (newest segment, nothing good after) from corruption', () => {
    const a = encodeRecord(put);
    const b = encodeRecord({ t: 'done', id: 'boot:7' });
    const whole = Buffer.concat([a, b]);
    expect(scanSegment(whole, true)).toMatchObject({ status: 'ok', good: whole.length });
    expect(scanSegment(whole.subarray(0, whole.length - 2), true)).toMatchObject({ status: 'torn', good: a.length });
    expect(scanSegment(whole.subarray(0, whole.length - 2), false)).toMatchObject({ status: 'corrupt', good: a.length });
    const rotFirst = whole.slice();
    rotFirst[12]! ^= 1;
    expect(scanSegment(rotFirst, true)).toMatchObject({ status: 'corrupt', good: 0, beyond: [{ t: 'done', id: 'boot:7' }] });
  });

  it('reads the sequence out of an id', () => {
    expect(sequenceOf('0b5c2f4e-1d2a-4f4b-9a7e-3c1d2e3f4a5b:42')).toBe(42);
    expect(sequenceOf('nonsense')).toBe(-1);
  });
});
