// SMPTE timecode for real-time logging (agent/logging/, docs/real-time-logging.md, "Timecode"):
// a rate, a label HH:MM:SS:FF (HH:MM:SS;FF in drop-frame), and the
// service's wire shape (docs/service-api.md, "Real-time logging"):
// `{"smpte_timecode": "01:00:00:00", "rate": {"playback": [24000, 1001],
// "ntsc": "non_drop"}}`, `ntsc` null for a whole-number rate.
//
// Pure functions, no clock: the press takes its wall time from the daemon's
// Clock and hands it in. Every value from a caller (the local API, the CLI,
// a profile) is checked here, and a refusal is one line naming the value.

/** A frame rate as a fraction: 24000/1001 is 23.976. */
export interface Rate {
  num: number;
  den: number;
}

/** A timecode: its label (normalised: `:` between fields, `;` before frames in drop-frame), its rate, drop-frame or not. */
export interface Timecode {
  smpte: string;
  rate: Rate;
  dropFrame: boolean;
}

/** The service's SMPTE time (docs/service-api.md, "Real-time logging"). */
export interface SmpteTime {
  smpte_timecode: string;
  rate: { playback: [number, number]; ntsc: 'non_drop' | 'drop_frame' | null };
}

/** The highest rate taken: above it a frame field of two digits no longer holds a frame number. */
export const MAX_FPS = 99;

/** What a refused value comes to: the reason, one line, naming the value. */
export class TimecodeError extends Error {}

const fail = (msg: string): never => {
  throw new TimecodeError(msg);
};

const show = (v: unknown): string => {
  const s = typeof v === 'string' ? JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v) : JSON.stringify(v);
  return s ?? String(v);
};

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * A rate as a caller gives it: a whole number of frames per second (24, or
 * "24"), or a fraction "N/D" of whole numbers (`"24000/1001"`), or the
 * service's `[N, D]`. Reduced; at most MAX_FPS frames per second.
 */
export function parseRate(v: unknown, what = 'rate'): Rate {
  let num: number;
  let den: number;
  if (typeof v === 'number') [num, den] = [v, 1];
  else if (Array.isArray(v) && v.length === 2 && v.every((x) => typeof x === 'number')) [num, den] = v as [number, number];
  else if (typeof v === 'string' && /^\d{1,9}(\/\d{1,9})?$/.test(v)) {
    const [n, d] = v.split('/');
    [num, den] = [Number(n), d === undefined ? 1 : Number(d)];
  } else {
    return fail(`${what} ${show(v)} is not a frame rate: give a whole number of frames per second (25) or a fraction N/D (24000/1001 for 23.976)`);
  }
  if (!Number.isSafeInteger(num) || !Number.isSafeInteger(den) || num <= 0 || den <= 0) {
    const hint = typeof v === 'number' && Number.isFinite(v) && v > 0 ? ` (a fractional rate is N/D: ${Math.round(v * 1001)}/1001 for ${v})` : '';
    return fail(`${what} ${show(v)} is not a frame rate: numerator and denominator must be whole numbers above 0${hint}`);
  }
  const g = gcd(num, den);
  const r = { num: num / g, den: den / g };
  if (r.num / r.den > MAX_FPS) return fail(`${what} ${show(v)} is over ${MAX_FPS} frames per second`);
  if (r.num / r.den < 1) return fail(`${what} ${show(v)} is under 1 frame per second`);
  return r;
}

/** The rate as written: "25" or "24000/1001". */
export const formatRate = (r: Rate): string => (r.den === 1 ? String(r.num) : `${r.num}/${r.den}`);

/** Frames counted per second of timecode: 24 for 23.976, 30 for 29.97. */
export const timebase = (r: Rate): number => Math.round(r.num / r.den);

/** Drop-frame exists for 29.97 and 59.94 (30000/1001, 60000/1001) only. */
export const dropFrameAllowed = (r: Rate): boolean => r.den === 1001 && (r.num === 30000 || r.num === 60000);

/** Frame labels skipped at each minute but every tenth in drop-frame: 2 at 29.97, 4 at 59.94. */
const droppedPerMinute = (r: Rate): number => timebase(r) / 15;

const FRAMES_IN_DAY = (r: Rate): number => 24 * 3600 * timebase(r);
const pad = (n: number): string => String(n).padStart(2, '0');

/** The label of frame `n` counted from 00:00:00:00, wrapping at 24 hours. */
export function framesToTimecode(n: number, rate: Rate, dropFrame: boolean): Timecode {
  if (!Number.isSafeInteger(n) || n < 0) fail(`frame count ${show(n)} is not a whole number >= 0`);
  if (dropFrame && !dropFrameAllowed(rate)) fail(`drop-frame is only for 30000/1001 and 60000/1001, not ${formatRate(rate)}`);
  const fps = timebase(rate);
  let f = n;
  if (dropFrame) {
    // Labels skipped: `drop` at the start of every minute but minutes 0, 10, 20...
    const drop = droppedPerMinute(rate);
    const per10 = 10 * 60 * fps - 9 * drop; // real frames in ten minutes
    const perMin = 60 * fps - drop; // real frames in a minute that drops
    const realDay = (24 * 6) * per10;
    f %= realDay;
    const tens = Math.floor(f / per10);
    const rest = f % per10;
    const skipped = 9 * drop * tens + (rest < drop ? 0 : drop * Math.floor((rest - drop) / perMin));
    f += skipped;
  } else {
    f %= FRAMES_IN_DAY(rate);
  }
  const ff = f % fps;
  const s = Math.floor(f / fps);
  const smpte = `${pad(Math.floor(s / 3600) % 24)}:${pad(Math.floor(s / 60) % 60)}:${pad(s % 60)}${dropFrame ? ';' : ':'}${pad(ff)}`;
  return { smpte, rate, dropFrame };
}

/** The frame a label stands for, counted from 00:00:00:00 (the inverse of framesToTimecode within a day). */
export function timecodeToFrames(tc: Timecode): number {
  const m = /^(\d\d):(\d\d):(\d\d)[:;](\d\d)$/.exec(tc.smpte);
  if (m === null) return fail(`timecode ${show(tc.smpte)} is not HH:MM:SS:FF`);
  const [hh, mm, ss, ff] = m.slice(1).map(Number) as [number, number, number, number];
  const fps = timebase(tc.rate);
  const totalMinutes = 60 * hh + mm;
  let n = (3600 * hh + 60 * mm + ss) * fps + ff;
  if (tc.dropFrame) n -= droppedPerMinute(tc.rate) * (totalMinutes - Math.floor(totalMinutes / 10));
  return n;
}

/**
 * A caller's timecode at `rate`: `HH:MM:SS:FF`, or with `;` before the frames
 * (the drop-frame mark; `HH;MM;SS;FF` and `.` as well). `dropFrame` undefined:
 * drop-frame when the label says so. Hours 0-23, minutes and seconds 0-59,
 * frames below the rate's timebase, and in drop-frame no label drop-frame skips.
 */
export function parseTimecode(v: unknown, rate: Rate, dropFrame?: boolean, what = 'timecode'): Timecode {
  if (typeof v !== 'string') return fail(`${what} ${show(v)} is not a timecode: give HH:MM:SS:FF (HH:MM:SS;FF in drop-frame)`);
  const m = /^(\d\d)([:;.])(\d\d)([:;.])(\d\d)([:;.])(\d\d)$/.exec(v);
  if (m === null) return fail(`${what} ${show(v)} is not a timecode: give HH:MM:SS:FF (HH:MM:SS;FF in drop-frame)`);
  const [hh, mm, ss, ff] = [m[1], m[3], m[5], m[7]].map(Number) as [number, number, number, number];
  const marked = m[6] !== ':' || m[2] !== ':' || m[4] !== ':';
  const df = dropFrame ?? marked;
  if (dropFrame === false && m[6] === ';') fail(`${what} ${show(v)} is marked drop-frame (;) but dropFrame is false`);
  if (df && !dropFrameAllowed(rate)) fail(`${what} ${show(v)} is drop-frame, which exists only at 30000/1001 and 60000/1001, not at ${formatRate(rate)}`);
  if (hh > 23) fail(`${what} ${show(v)}: hours ${pad(hh)} are over 23`);
  if (mm > 59) fail(`${what} ${show(v)}: minutes ${pad(mm)} are over 59`);
  if (ss > 59) fail(`${what} ${show(v)}: seconds ${pad(ss)} are over 59`);
  const fps = timebase(rate);
  if (ff >= fps) fail(`${what} ${show(v)}: frame ${pad(ff)} does not exist at ${formatRate(rate)} (frames 00 to ${pad(fps - 1)})`);
  if (df && ss === 0 && mm % 10 !== 0 && ff < droppedPerMinute(rate)) fail(`${what} ${show(v)}: drop-frame skips frames 00 to ${pad(droppedPerMinute(rate) - 1)} at the start of minute ${pad(mm)}`);
  return { smpte: `${pad(hh)}:${pad(mm)}:${pad(ss)}${df ? ';' : ':'}${pad(ff)}`, rate, dropFrame: df };
}

/**
 * Time-of-day timecode at `wallMs` (epoch ms) in a zone `utcOffsetMinutes`
 * east of UTC (the camera's local time: `-new Date(wallMs).getTimezoneOffset()`).
 * Non-drop: the clock's own hours, minutes and seconds, the frame the
 * fraction of its second at the timebase, so the label never drifts from the
 * clock at a fractional rate either. Drop-frame: the frames since midnight at
 * the rate's true speed, labelled drop-frame (which is what drop-frame is for:
 * it keeps the label within a frame or two of the clock all day).
 */
export function timeOfDay(wallMs: number, rate: Rate, dropFrame: boolean, utcOffsetMinutes: number): Timecode {
  const DAY = 86_400_000;
  const local = (((wallMs + utcOffsetMinutes * 60_000) % DAY) + DAY) % DAY;
  if (dropFrame) {
    if (!dropFrameAllowed(rate)) fail(`drop-frame is only for 30000/1001 and 60000/1001, not ${formatRate(rate)}`);
    // Frames whose start is at or before `local`, at num/den frames per second, without floating error.
    const frames = Math.floor((local * rate.num) / (rate.den * 1000));
    return framesToTimecode(frames, rate, true);
  }
  const fps = timebase(rate);
  const sec = Math.floor(local / 1000);
  const ff = Math.floor(((local % 1000) * fps) / 1000);
  return framesToTimecode(sec * fps + ff, rate, false);
}

/** The service's shape of a timecode (docs/service-api.md, "Real-time logging"). */
export function toSmpteTime(tc: Timecode): SmpteTime {
  return {
    smpte_timecode: tc.smpte,
    rate: { playback: [tc.rate.num, tc.rate.den], ntsc: tc.rate.den === 1 ? null : tc.dropFrame ? 'drop_frame' : 'non_drop' },
  };
}

/** A length of `frames` frames as the service's SMPTE time (a duration counts frames: never drop-frame labels). */
export function durationOf(frames: number, rate: Rate): SmpteTime {
  if (!Number.isSafeInteger(frames) || frames < 0 || frames >= FRAMES_IN_DAY(rate)) fail(`durationFrames ${show(frames)} is not a whole number of frames from 0 to under a day`);
  return toSmpteTime(framesToTimecode(frames, rate, false));
}
