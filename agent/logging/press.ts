// A press as an outbox item (docs/real-time-logging.md): which input of which
// channel, the moment it was made, and its timecode. Made here from whatever
// pressed it (the local API, `c2c-agent press`, a key on the input device),
// checked against the firmware profile before anything is queued; sent once
// by press-worker.ts, with `offset` the whole seconds it waited.
import type { ChannelSpec, FirmwareProfile, InputSpec } from '../config/types.js';
import { durationOf, formatRate, parseRate, parseTimecode, timeOfDay, TimecodeError, toSmpteTime, type Rate, type SmpteTime, type Timecode } from '../lib/timecode.js';
import { quote } from '../lib/text.js';
import type { TriggerBody } from './logging-api.js';

export { PRESS_KIND } from './host.js';
/** Kept before uploads when the queue's cap must drop something: a press is a few hundred bytes and cannot be made again. */
export const PRESS_PRIORITY = 20;

/** When something was pressed or asked: agent-monotonic ms on boot `boot`, and the wall clock (for another boot's wait, and reports). */
export interface Moment {
  mono: number;
  boot: string;
  wall: number;
}

export type PressSource = 'api' | 'cli' | 'key';

export interface PressPayload {
  /** The profile channel's key. */
  channel: string;
  /** The input's index at the service. */
  index: number;
  at: Moment;
  /** The timecode of the press, when one is known (the caller's, or the time of day at the profile's rate). */
  start?: SmpteTime;
  duration?: SmpteTime;
  source: PressSource;
}

/** What a caller may give with a press (POST /v1/inputs/{channel}/{index}'s body, `press`'s options). */
export interface PressRequest {
  timecode?: unknown;
  rate?: unknown;
  dropFrame?: unknown;
  durationFrames?: unknown;
}

/** A press refused before anything was queued: 404 for an input the profile does not have, 400 for a malformed value. */
export class PressRefused extends Error {
  constructor(
    readonly status: 400 | 404,
    message: string,
  ) {
    super(message);
  }
}

const list = (xs: string[]): string => (xs.length === 0 ? 'none' : xs.join(', '));

/** The channel and input a press names, from the profile; 404 with what there is instead. */
export function inputOf(profile: Pick<FirmwareProfile, 'id' | 'channels'>, channel: string, index: unknown): { channel: ChannelSpec; input: InputSpec } {
  const ch = profile.channels.find((c) => c.key === channel);
  const withInputs = profile.channels.filter((c) => (c.inputs?.length ?? 0) > 0).map((c) => c.key);
  if (ch === undefined) throw new PressRefused(404, `no channel ${quote(channel)} in firmware profile ${profile.id} (channels with inputs: ${list(withInputs)})`);
  const n = typeof index === 'string' && /^\d{1,3}$/.test(index) ? Number(index) : index;
  const input = typeof n === 'number' ? ch.inputs?.find((i) => i.index === n) : undefined;
  if (input === undefined) {
    const shown = typeof n === 'number' ? String(n) : typeof index === 'string' ? quote(index) : JSON.stringify(index);
    throw new PressRefused(404, `channel ${quote(channel)} has no input ${shown} in firmware profile ${profile.id} (inputs: ${list((ch.inputs ?? []).map((i) => `${i.index} ${i.name}`))})`);
  }
  return { channel: ch, input };
}

/** The caller's value as a 400 when the timecode module refuses it. */
function checked<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof TimecodeError) throw new PressRefused(400, err.message);
    throw err;
  }
}

/**
 * The timecode a press carries (docs/real-time-logging.md, "Timecode"): the
 * caller's, at the caller's rate or else the profile's; without one, the time
 * of day at `at.wall` at the caller's rate or else the profile's, drop-frame
 * where asked (or where the profile says so, at its rate). Neither a timecode
 * nor a rate anywhere: none.
 */
export function timecodeOf(req: PressRequest, profile: Pick<FirmwareProfile, 'timecode'>, wallMs: number): { start?: Timecode; rate?: Rate } {
  if (req.dropFrame !== undefined && typeof req.dropFrame !== 'boolean') throw new PressRefused(400, `dropFrame ${JSON.stringify(req.dropFrame)} must be true or false`);
  const given = req.rate === undefined ? undefined : checked(() => parseRate(req.rate));
  const rate = given ?? profile.timecode?.rate;
  const df = req.dropFrame as boolean | undefined;
  if (req.timecode !== undefined) {
    if (rate === undefined) throw new PressRefused(400, `timecode ${JSON.stringify(req.timecode)} has no rate: give rate (24000/1001, 25...), or set timecode.rate in the firmware profile`);
    return { start: checked(() => parseTimecode(req.timecode, rate, df)), rate };
  }
  if (rate === undefined) {
    if (df !== undefined) throw new PressRefused(400, 'dropFrame needs a rate: give rate, or set timecode.rate in the firmware profile');
    return {};
  }
  // The profile's drop-frame goes with the profile's rate; a rate of the caller's is non-drop unless asked.
  const sameAsProfile = profile.timecode !== undefined && (given === undefined || formatRate(given) === formatRate(profile.timecode.rate));
  const dropFrame = df ?? (sameAsProfile ? (profile.timecode?.dropFrame ?? false) : false);
  const utcOffset = -new Date(wallMs).getTimezoneOffset();
  return { start: checked(() => timeOfDay(wallMs, rate, dropFrame, utcOffset)), rate };
}

/** A press, checked against the profile: refused (PressRefused) before anything is queued. */
export function makePress(profile: Pick<FirmwareProfile, 'id' | 'channels' | 'timecode'>, channel: string, index: unknown, req: PressRequest, at: Moment, source: PressSource): PressPayload {
  const { input } = inputOf(profile, channel, index);
  const { start, rate } = timecodeOf(req, profile, at.wall);
  let duration: SmpteTime | undefined;
  if (req.durationFrames !== undefined) {
    if (rate === undefined) throw new PressRefused(400, 'durationFrames needs a rate: give rate, or set timecode.rate in the firmware profile');
    duration = checked(() => durationOf(req.durationFrames as number, rate));
  }
  return { channel, index: input.index, at, ...(start !== undefined && { start: toSmpteTime(start) }), ...(duration !== undefined && { duration }), source };
}

/** The payload when it has the shape this agent writes; undefined otherwise (dead-lettered: nothing to send). */
export function pressOf(v: unknown): PressPayload | undefined {
  const p = v as Partial<PressPayload> | null;
  if (typeof p !== 'object' || p === null || typeof p.channel !== 'string' || !Number.isSafeInteger(p.index)) return undefined;
  const at = p.at as Partial<Moment> | undefined;
  if (typeof at !== 'object' || typeof at.mono !== 'number' || typeof at.boot !== 'string' || typeof at.wall !== 'number') return undefined;
  return p as PressPayload;
}

/**
 * Whole seconds between `at` and now: on the monotonic clock within one
 * boot (a kill -9 or a restart keeps it), by the wall clocks across a reboot
 * (a power cut: the monotonic clock started again); never below 0.
 */
export function offsetSeconds(at: Moment, now: { mono: number; boot: string; wall: number }): number {
  const ms = at.boot === now.boot ? now.mono - at.mono : now.wall - at.wall;
  return Math.max(0, Math.floor(ms / 1000));
}

/** The trigger call's body for `p`, sent now. */
export function triggerBody(p: PressPayload, now: { mono: number; boot: string; wall: number }): TriggerBody {
  return { action_type: 'single_press', offset: offsetSeconds(p.at, now), ...(p.start !== undefined && { start: p.start }), ...(p.duration !== undefined && { duration: p.duration }) };
}
