// The timecode module (agent/lib/timecode.ts): labels and frame counts
// agree both ways at every rate, drop-frame skips exactly the labels SMPTE
// skips, time-of-day timecode follows the wall clock, and every malformed
// value is refused with a line that names it.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  dropFrameAllowed,
  durationOf,
  framesToTimecode,
  parseRate,
  parseTimecode,
  timebase,
  TimecodeError,
  timecodeToFrames,
  timeOfDay,
  toSmpteTime,
  type Rate,
} from '../../agent/lib/timecode.js';

const RATES: Rate[] = [
  { num: 24000, den: 1001 },
  { num: 24, den: 1 },
  { num: 25, den: 1 },
  { num: 30000, den: 1001 },
  { num: 30, den: 1 },
  { num: 50, den: 1 },
  { num: 60000, den: 1001 },
  { num: 60, den: 1 },
];
const DF_RATES = RATES.filter(dropFrameAllowed);
const rateArb = fc.constantFrom(...RATES);
const dayFrames = (r: Rate, df: boolean): number => (df ? 144 * (10 * 60 * timebase(r) - 9 * (timebase(r) / 15)) : 86_400 * timebase(r));

describe('rates', () => {
  it.each([
    [24, { num: 24, den: 1 }],
    ['25', { num: 25, den: 1 }],
    ['24000/1001', { num: 24000, den: 1001 }],
    ['48/2', { num: 24, den: 1 }],
    [[60000, 1001], { num: 60000, den: 1001 }],
  ])('%j is %j', (given, rate) => {
    expect(parseRate(given)).toEqual(rate);
  });

  it.each([[23.976, /24000\/1001|23976\/1001/], ['abc', /"abc" is not a frame rate/], [0, /above 0/], ['24/0', /above 0/], [-24, /above 0/], ['1000', /over 99/], ['1/2', /under 1/], [null, /null is not a frame rate/], [' 25', /" 25" is not a frame rate/], [[24], /\[24\] is not/]])('%j is refused, named', (given, msg) => {
    expect(() => parseRate(given)).toThrow(TimecodeError);
    expect(() => parseRate(given)).toThrow(msg);
  });

  it('a fractional number is refused with the fraction to give instead', () => {
    expect(() => parseRate(29.97)).toThrow('30000/1001');
  });
});

describe('labels and frame counts', () => {
  it('agree both ways at every rate, drop-frame and not, over a whole day (property)', () => {
    fc.assert(
      fc.property(rateArb, fc.boolean(), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (rate, wantDf, at) => {
        const df = wantDf && dropFrameAllowed(rate);
        const n = Math.floor(at * dayFrames(rate, df));
        const tc = framesToTimecode(n, rate, df);
        expect(timecodeToFrames(tc)).toBe(n);
        // Every label made is one a caller may give back.
        expect(parseTimecode(tc.smpte, rate, df)).toEqual(tc);
        // The next frame's label is the next one that exists.
        const next = framesToTimecode(n + 1, rate, df);
        expect(timecodeToFrames(next)).toBe((n + 1) % dayFrames(rate, df));
      }),
      { numRuns: 2000 },
    );
  });

  it('drop-frame skips frames 00 and 01 (29.97) or 00 to 03 (59.94) at every minute but the tenth', () => {
    for (const rate of DF_RATES) {
      const drop = timebase(rate) / 15;
      const labels = new Set<string>();
      for (let n = 0; n < 11 * 60 * timebase(rate); n++) labels.add(framesToTimecode(n, rate, true).smpte);
      for (let mm = 0; mm <= 10; mm++) {
        for (let ff = 0; ff < drop; ff++) {
          const label = `00:${String(mm).padStart(2, '0')}:00;${String(ff).padStart(2, '0')}`;
          expect(labels.has(label)).toBe(mm % 10 === 0);
        }
        expect(labels.has(`00:${String(mm).padStart(2, '0')}:00;${String(drop).padStart(2, '0')}`)).toBe(true);
      }
    }
    expect(framesToTimecode(1800, { num: 30000, den: 1001 }, true).smpte).toBe('00:01:00;02');
    expect(framesToTimecode(17982, { num: 30000, den: 1001 }, true).smpte).toBe('00:10:00;00');
    expect(framesToTimecode(107892, { num: 30000, den: 1001 }, true).smpte).toBe('01:00:00;00');
  });

  it('wraps at 24 hours', () => {
    const r = { num: 25, den: 1 };
    expect(framesToTimecode(86_400 * 25 + 3, r, false).smpte).toBe('00:00:00:03');
  });
});

describe("a caller's timecode", () => {
  const r2398 = parseRate('24000/1001');
  const r2997 = parseRate('30000/1001');

  it('is normalised: drop-frame marked with ; before the frames', () => {
    expect(parseTimecode('01:00:00:00', r2398)).toEqual({ smpte: '01:00:00:00', rate: r2398, dropFrame: false });
    expect(parseTimecode('01:02:03;04', r2997)).toEqual({ smpte: '01:02:03;04', rate: r2997, dropFrame: true });
    expect(parseTimecode('01;02;03;04', r2997).smpte).toBe('01:02:03;04');
    expect(parseTimecode('01:02:03:04', r2997, true).smpte).toBe('01:02:03;04');
    expect(parseTimecode('01:02:03:04', r2997, false).smpte).toBe('01:02:03:04');
  });

  it.each([
    ['1:00:00:00', r2398, undefined, /"1:00:00:00" is not a timecode/],
    ['01:00:00', r2398, undefined, /is not a timecode/],
    [3600, r2398, undefined, /3600 is not a timecode/],
    ['24:00:00:00', r2398, undefined, /hours 24 are over 23/],
    ['01:60:00:00', r2398, undefined, /minutes 60/],
    ['01:00:60:00', r2398, undefined, /seconds 60/],
    ['01:00:00:24', r2398, undefined, /frame 24 does not exist at 24000\/1001 \(frames 00 to 23\)/],
    ['01:00:00;00', r2398, undefined, /drop-frame, which exists only at 30000\/1001/],
    ['01:00:00:00', parseRate(25), true, /drop-frame, which exists only/],
    ['01:01:00;01', r2997, undefined, /skips frames 00 to 01 at the start of minute 01/],
    ['01:01:00;01', r2997, false, /marked drop-frame \(;\) but dropFrame is false/],
    ['01:00:00:00\n', r2398, undefined, /is not a timecode/],
  ])('%j at %j (dropFrame %j) is refused, named', (given, rate, df, msg) => {
    expect(() => parseTimecode(given, rate, df)).toThrow(TimecodeError);
    expect(() => parseTimecode(given, rate, df)).toThrow(msg);
  });

  it('never lets a malformed label through (property: anything accepted is a real label)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 14 }), rateArb, fc.option(fc.boolean(), { nil: undefined }), (s, rate, df) => {
        let tc;
        try {
          tc = parseTimecode(s, rate, df);
        } catch (err) {
          expect(err).toBeInstanceOf(TimecodeError);
          return;
        }
        expect(framesToTimecode(timecodeToFrames(tc), rate, tc.dropFrame)).toEqual(tc);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('time-of-day timecode', () => {
  const at = Date.UTC(2026, 0, 1, 13, 45, 7, 520);

  it("is the clock's time of day at a whole rate, the frame from the fraction of the second", () => {
    expect(timeOfDay(at, parseRate(25), false, 0).smpte).toBe('13:45:07:13');
    expect(timeOfDay(at, parseRate(25), false, 60).smpte).toBe('14:45:07:13');
    expect(timeOfDay(at, parseRate(25), false, -300).smpte).toBe('08:45:07:13');
  });

  it('does not drift from the clock at a fractional rate without drop-frame', () => {
    expect(timeOfDay(at, parseRate('24000/1001'), false, 0).smpte).toBe('13:45:07:12');
  });

  it('stays within a few frames of the clock all day in drop-frame (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...DF_RATES), fc.integer({ min: 0, max: 86_399_999 }), (rate, ms) => {
        const tc = timeOfDay(Date.UTC(2026, 0, 1) + ms, rate, true, 0);
        const m = /^(\d\d):(\d\d):(\d\d);(\d\d)$/.exec(tc.smpte)!;
        const labelMs = ((+m[1]! * 60 + +m[2]!) * 60 + +m[3]!) * 1000 + (+m[4]! * 1000) / timebase(rate);
        // Drop-frame drifts about 86 ms a day from real time and swings up to 67 ms within each minute (two frames at 29.97, four at 59.94); one more frame for the rounding down.
        // Near midnight the label has wrapped a few frames early: measured round the day.
        const d = Math.abs(labelMs - ms);
        expect(Math.min(d, 86_400_000 - d)).toBeLessThan(87 + 67 + 1001 / timebase(rate) + 1);
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses drop-frame at a rate without it', () => {
    expect(() => timeOfDay(at, parseRate(25), true, 0)).toThrow(/only for 30000\/1001 and 60000\/1001, not 25/);
  });
});

describe("the service's shape", () => {
  it('is playback [n, d] with ntsc non_drop, drop_frame, or null for a whole rate', () => {
    expect(toSmpteTime(parseTimecode('01:00:00:00', parseRate('24000/1001')))).toEqual({ smpte_timecode: '01:00:00:00', rate: { playback: [24000, 1001], ntsc: 'non_drop' } });
    expect(toSmpteTime(parseTimecode('01:00:00;00', parseRate('30000/1001')))).toEqual({ smpte_timecode: '01:00:00;00', rate: { playback: [30000, 1001], ntsc: 'drop_frame' } });
    expect(toSmpteTime(parseTimecode('01:00:00:00', parseRate(25)))).toEqual({ smpte_timecode: '01:00:00:00', rate: { playback: [25, 1], ntsc: null } });
  });

  it('a duration counts frames, never in drop-frame labels', () => {
    expect(durationOf(48, parseRate(24)).smpte_timecode).toBe('00:00:02:00');
    expect(durationOf(1800, parseRate('30000/1001'))).toEqual({ smpte_timecode: '00:01:00:00', rate: { playback: [30000, 1001], ntsc: 'non_drop' } });
    expect(() => durationOf(-1, parseRate(24))).toThrow(/durationFrames -1/);
    expect(() => durationOf(1.5, parseRate(24))).toThrow(/durationFrames 1.5/);
  });
});
