// A press as the agent makes it (agent/logging/press.ts): which timecode it
// carries (the caller's, the time of day at the caller's or the profile's
// rate, or none), what is refused before anything is queued, and the offset
// it is sent with.
import { describe, expect, it } from '@jest/globals';
import type { FirmwareProfile } from '../../agent/config/types.js';
import { inputOf, makePress, offsetSeconds, PressRefused, timecodeOf, triggerBody, type Moment } from '../../agent/logging/press.js';
import { parseRate, timeOfDay } from '../../agent/lib/timecode.js';

const profile = (timecode?: FirmwareProfile['timecode']): Pick<FirmwareProfile, 'id' | 'channels' | 'timecode'> => ({
  id: 'pi',
  channels: [
    { key: 'main', name: 'Main', assetType: 'video', deviceModelId: 'm', detect: { anyPath: ['dev/video0'] }, inputs: [{ index: 0, name: 'Good take', key: 28 }, { index: 7, name: 'Slate' }] },
    { key: 'aux', name: 'Aux', assetType: 'video', deviceModelId: 'm2', detect: { anyPath: ['dev/video1'] } },
  ],
  ...(timecode !== undefined && { timecode }),
});
const P2398 = profile({ rate: { num: 24000, den: 1001 }, dropFrame: false });
const P2997DF = profile({ rate: { num: 30000, den: 1001 }, dropFrame: true });
const WALL = Date.UTC(2026, 4, 1, 9, 30, 15, 250);
const at: Moment = { mono: 5_000_000, boot: 'boot-a', wall: WALL };
const tod = (rate: string, df: boolean): string => timeOfDay(WALL, parseRate(rate), df, -new Date(WALL).getTimezoneOffset()).smpte;
const refused = (fn: () => unknown): PressRefused => {
  try {
    fn();
  } catch (err) {
    if (err instanceof PressRefused) return err;
    throw err;
  }
  throw new Error('not refused');
};

describe('the timecode a press carries', () => {
  it("is the caller's, at the caller's rate or else the profile's", () => {
    expect(timecodeOf({ timecode: '01:00:00:00', rate: 25 }, P2398, WALL).start).toEqual({ smpte: '01:00:00:00', rate: { num: 25, den: 1 }, dropFrame: false });
    expect(timecodeOf({ timecode: '01:00:00:00' }, P2398, WALL).start).toEqual({ smpte: '01:00:00:00', rate: { num: 24000, den: 1001 }, dropFrame: false });
    // Drop-frame when marked or asked, at a rate that has it.
    expect(timecodeOf({ timecode: '01:00:00;00' }, P2997DF, WALL).start?.dropFrame).toBe(true);
    expect(timecodeOf({ timecode: '01:00:00:00', dropFrame: true }, P2997DF, WALL).start?.smpte).toBe('01:00:00;00');
  });

  it("is else the time of day at the caller's rate (non-drop unless asked) or the profile's (its drop-frame)", () => {
    expect(timecodeOf({}, P2398, WALL).start?.smpte).toBe(tod('24000/1001', false));
    expect(timecodeOf({}, P2997DF, WALL).start?.smpte).toBe(tod('30000/1001', true));
    expect(timecodeOf({ rate: '30000/1001' }, P2997DF, WALL).start?.smpte).toBe(tod('30000/1001', true));
    expect(timecodeOf({ rate: 25 }, P2997DF, WALL).start?.smpte).toBe(tod('25', false));
    expect(timecodeOf({ rate: '30000/1001' }, P2398, WALL).start?.smpte).toBe(tod('30000/1001', false));
    expect(timecodeOf({ rate: '30000/1001', dropFrame: true }, P2398, WALL).start?.smpte).toBe(tod('30000/1001', true));
  });

  it('is none without a timecode and without a rate anywhere', () => {
    expect(timecodeOf({}, profile(), WALL)).toEqual({});
  });

  it.each([
    [{ timecode: '01:00:00:00' }, 'has no rate: give rate'],
    [{ dropFrame: true }, 'dropFrame needs a rate'],
    [{ dropFrame: 'yes', rate: 25 }, 'dropFrame "yes" must be true or false'],
    [{ rate: 'x' }, 'rate "x" is not a frame rate'],
  ])('refuses %j with a profile that has no rate: 400', (req, message) => {
    const e = refused(() => timecodeOf(req, profile(), WALL));
    expect([e.status, e.message]).toEqual([400, expect.stringContaining(message)]);
  });
});

describe('a press', () => {
  it('names an input the profile has (an index given as digits too), else 404 with what there is', () => {
    expect(inputOf(P2398, 'main', '7').input.name).toBe('Slate');
    expect(inputOf(P2398, 'main', 0).input.name).toBe('Good take');
    expect(refused(() => inputOf(P2398, 'main', '1')).message).toBe("channel 'main' has no input 1 in firmware profile pi (inputs: 0 Good take, 7 Slate)");
    expect(refused(() => inputOf(P2398, 'main', '007x')).message).toContain("has no input '007x'");
    expect(refused(() => inputOf(P2398, 'aux', 0)).message).toBe("channel 'aux' has no input 0 in firmware profile pi (inputs: none)");
    expect(refused(() => inputOf(P2398, 'nope', 0))).toMatchObject({ status: 404, message: "no channel 'nope' in firmware profile pi (channels with inputs: main)" });
  });

  it('carries its moment, its timecode and a duration when asked', () => {
    const p = makePress(P2398, 'main', '0', { timecode: '02:00:00:00', durationFrames: 48 }, at, 'api');
    expect(p).toEqual({
      channel: 'main',
      index: 0,
      at,
      start: { smpte_timecode: '02:00:00:00', rate: { playback: [24000, 1001], ntsc: 'non_drop' } },
      duration: { smpte_timecode: '00:00:02:00', rate: { playback: [24000, 1001], ntsc: 'non_drop' } },
      source: 'api',
    });
    expect(refused(() => makePress(profile(), 'main', 0, { durationFrames: 2 }, at, 'api')).message).toContain('durationFrames needs a rate');
  });

  it('is sent with the whole seconds it waited: by the monotonic clock on its boot, by the wall clocks after a reboot, never below 0', () => {
    expect(offsetSeconds(at, { mono: at.mono + 59_999, boot: 'boot-a', wall: 0 })).toBe(59);
    expect(offsetSeconds(at, { mono: 10, boot: 'boot-b', wall: WALL + 3_600_500 })).toBe(3_600);
    // A wall clock set back after the press (NTP on a Pi with no RTC): 0, not a negative offset.
    expect(offsetSeconds(at, { mono: 10, boot: 'boot-b', wall: WALL - 5_000 })).toBe(0);
    const p = makePress(P2398, 'main', 7, {}, at, 'key');
    expect(triggerBody(p, { mono: at.mono + 2_500, boot: 'boot-a', wall: 0 })).toEqual({ action_type: 'single_press', offset: 2, start: p.start });
    expect(triggerBody(makePress(profile(), 'main', 7, {}, at, 'key'), { mono: at.mono, boot: 'boot-a', wall: 0 })).toEqual({ action_type: 'single_press', offset: 0 });
  });
});
