// lib/iso-time.ts gives toISOString's text without formatting a Date (which
// makes V8 load ICU's time zone data: 0.9 MiB of an idle daemon's RSS).
import { describe, expect, it } from '@jest/globals';
import { isoTime } from '../../agent/lib/iso-time.js';

describe('isoTime', () => {
  it('is toISOString, whatever the time: now, the epoch, before it, the edges of 4-digit years, the limits', () => {
    const times = [0, Date.now(), -1, 1.5, 253402300799999, 253402300800000, -62167219200000, -62167219200001, 8.64e15, -8.64e15];
    let seed = 7;
    for (let i = 0; i < 5000; i++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      times.push(Math.floor((seed / 2 ** 31 - 0.5) * 1.6e13));
    }
    for (const ms of times) expect(isoTime(ms)).toBe(new Date(ms).toISOString());
  });

  it('a time that is not valid is a RangeError, as toISOString throws', () => {
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
    expect(() => isoTime(8.64e15 + 1)).toThrow(RangeError);
  });
});
