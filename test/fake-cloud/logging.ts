// Real-time logging at the fake: the trigger call of a channel's input and a
// comment on an asset (../../../shared/spec/device-lifecycle.md, section 10),
// with a referee of the presses. Written from the spec alone: nothing here
// comes from the agent (its timecode module included), so a mistake the
// agent makes in SMPTE is not made again here and passed.
//
// The referee, per device:
// - the channel is one of this device's (else the service's 404);
// - the input index is a whole number (else 400);
// - action_type is `single_press`, offset a whole number >= 0;
// - `start` and `duration`, when sent, are SMPTE times: `smpte_timecode`
//   HH:MM:SS:FF (`;` before the frames in drop-frame) with hours 0-23,
//   minutes and seconds 0-59, frames below the rate's timebase and never a
//   label drop-frame skips; `rate.playback` [n, d] (or "n/d") of positive
//   whole numbers; `rate.ntsc` null for a whole-number rate, `non_drop` or
//   `drop_frame` (drop-frame only at 30000/1001 and 60000/1001) otherwise;
// - each press arrives once: a second trigger of the same channel and input
//   made at the same moment (its arrival minus its offset, within two
//   seconds: the offset is whole seconds) with the same start timecode is a
//   duplicate (flagged, and answered 204 as the service would).
// A malformed press is answered 400 or 422 and listed with what was wrong.
import { randomUUID } from 'node:crypto';
import { json, legacyError, noContent, parseJsonObject } from './http.js';
import type { Router } from './router.js';
import type { Clock, CloudState } from './state.js';

/** One trigger call as the fake received it. */
export interface PressRecord {
  /** Fake agent-time ms of its arrival. */
  t: number;
  deviceId: string;
  channelId: string;
  index: number;
  body: Record<string, unknown>;
  /** What the fake answered. */
  status: number;
  /** When it was made by its own account: arrival minus offset (ms). */
  madeAt?: number;
  /** What the referee found wrong (empty for a good press). */
  problems: string[];
  /** A second arrival of a press already received. */
  duplicate: boolean;
}

export interface CommentRecord {
  id: string;
  t: number;
  deviceId: string;
  assetId: string;
  text: string;
  timestamp: number | null;
}

export interface LoggingReport {
  /** Trigger calls received (good or not). */
  presses: number;
  /** Presses answered 204 that were not duplicates. */
  accepted: number;
  duplicates: number;
  /** Each refused or malformed press: what was wrong. */
  problems: string[];
}

const TIMECODE = /^(\d\d):(\d\d):(\d\d)([:;])(\d\d)$/;

/** What is wrong with a SMPTE time as the service takes it; empty when nothing. */
export function smpteProblems(v: unknown, what: string): string[] {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return [`${what} is not an object`];
  const o = v as Record<string, unknown>;
  const out: string[] = [];
  const rate = o.rate as Record<string, unknown> | undefined;
  let num = 0;
  let den = 0;
  if (typeof rate !== 'object' || rate === null) out.push(`${what}.rate is not an object`);
  else {
    const pb = rate.playback;
    if (Array.isArray(pb) && pb.length === 2) [num, den] = pb as [number, number];
    else if (typeof pb === 'string' && /^\d+\/\d+$/.test(pb)) [num, den] = pb.split('/').map(Number) as [number, number];
    if (!Number.isInteger(num) || !Number.isInteger(den) || num <= 0 || den <= 0) {
      out.push(`${what}.rate.playback ${JSON.stringify(pb)} is not [numerator, denominator] of positive whole numbers`);
      num = 0;
    }
    const whole = num > 0 && num % den === 0;
    const ntsc = rate.ntsc;
    if (ntsc !== null && ntsc !== 'non_drop' && ntsc !== 'drop_frame') out.push(`${what}.rate.ntsc ${JSON.stringify(ntsc)} is not null, "non_drop" or "drop_frame"`);
    else if (num > 0 && whole && ntsc !== null) out.push(`${what}.rate.ntsc is ${JSON.stringify(ntsc)} for the whole-number rate ${num}/${den} (null expected)`);
    else if (num > 0 && !whole && ntsc === null) out.push(`${what}.rate.ntsc is null for the fractional rate ${num}/${den}`);
    else if (ntsc === 'drop_frame' && !(den === 1001 && (num === 30000 || num === 60000))) out.push(`${what}.rate.ntsc is drop_frame at ${num}/${den}, which has none`);
  }
  const tc = o.smpte_timecode;
  const m = typeof tc === 'string' ? TIMECODE.exec(tc) : null;
  if (m === null) out.push(`${what}.smpte_timecode ${JSON.stringify(tc)} is not HH:MM:SS:FF`);
  else {
    const [hh, mm, ss, ff] = [m[1], m[2], m[3], m[5]].map(Number) as [number, number, number, number];
    const df = m[4] === ';';
    if (hh > 23 || mm > 59 || ss > 59) out.push(`${what}.smpte_timecode ${tc} is out of range`);
    if (num > 0) {
      const base = Math.round(num / den);
      if (ff >= base) out.push(`${what}.smpte_timecode ${tc} has frame ${ff} at ${base} frames a second`);
      const ntsc = rate?.ntsc;
      if (df && ntsc !== 'drop_frame') out.push(`${what}.smpte_timecode ${tc} is marked drop-frame but rate.ntsc is ${JSON.stringify(ntsc)}`);
      if (!df && ntsc === 'drop_frame') out.push(`${what}.smpte_timecode ${tc} is not marked drop-frame (;) though rate.ntsc is drop_frame`);
      const skipped = base === 60 ? 4 : 2;
      if (df && ss === 0 && mm % 10 !== 0 && ff < skipped) out.push(`${what}.smpte_timecode ${tc} is a label drop-frame skips`);
    }
  }
  return out;
}

export class Logging {
  readonly presses: PressRecord[] = [];
  readonly comments: CommentRecord[] = [];

  constructor(
    private readonly state: CloudState,
    private readonly clock: Clock,
    /** Whether an asset exists and is this device's. */
    private readonly assetOwner: (assetId: string) => string | undefined,
  ) {}

  report(deviceId: string): LoggingReport {
    const mine = this.presses.filter((p) => p.deviceId === deviceId);
    return {
      presses: mine.length,
      accepted: mine.filter((p) => p.status === 204 && !p.duplicate).length,
      duplicates: mine.filter((p) => p.duplicate).length,
      problems: mine.flatMap((p) => p.problems.map((x) => `press at ${p.t} ms on ${p.channelId}/${p.index}: ${x}`)),
    };
  }

  routes(router: Router): void {
    router
      .add({
        method: 'POST',
        pattern: '/v2/devices/channels/{id}/inputs/{index}/trigger',
        auth: 'bearer',
        handler: (ctx) => {
          const device = this.state.devices.get(ctx.deviceId!)!;
          const [channelId, rawIndex] = ctx.params as [string, string];
          const body = ctx.body.length === 0 ? {} : parseJsonObject(ctx.body);
          const rec: PressRecord = { t: ctx.t, deviceId: device.id, channelId, index: Number(rawIndex), body: body ?? {}, status: 0, problems: [], duplicate: false };
          this.presses.push(rec);
          const refuse = (status: number, problem: string) => {
            rec.problems.push(problem);
            rec.status = status;
            return legacyError(status, undefined, problem);
          };
          if (!device.channels.some((c) => c.id === channelId)) return refuse(404, `channel ${channelId} is not one of this device's`);
          if (!/^\d+$/.test(rawIndex)) return refuse(400, `input index ${JSON.stringify(rawIndex)} is not a whole number`);
          if (body === undefined) return refuse(400, 'the body is not a JSON object');
          const problems: string[] = [];
          if (body.action_type !== 'single_press') problems.push(`action_type ${JSON.stringify(body.action_type)} is not "single_press"`);
          const offset = body.offset;
          if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0) problems.push(`offset ${JSON.stringify(offset)} is not a whole number >= 0`);
          if (body.start !== undefined) problems.push(...smpteProblems(body.start, 'start'));
          if (body.duration !== undefined) problems.push(...smpteProblems(body.duration, 'duration'));
          if (problems.length > 0) {
            rec.problems.push(...problems);
            rec.status = 422;
            return legacyError(422, undefined, problems.join('; '));
          }
          rec.madeAt = ctx.t - (offset as number) * 1000;
          const tc = (body.start as { smpte_timecode?: string } | undefined)?.smpte_timecode;
          rec.duplicate = this.presses.some(
            (p) =>
              p !== rec &&
              p.status === 204 &&
              p.deviceId === rec.deviceId &&
              p.channelId === channelId &&
              p.index === rec.index &&
              (p.body.start as { smpte_timecode?: string } | undefined)?.smpte_timecode === tc &&
              p.madeAt !== undefined &&
              Math.abs(p.madeAt - rec.madeAt!) < 2_000,
          );
          rec.status = 204;
          return noContent();
        },
      })
      .add({
        method: 'POST',
        pattern: '/v2/devices/assets/{id}/comments',
        auth: 'bearer',
        handler: (ctx) => {
          const [assetId] = ctx.params as [string];
          if (this.assetOwner(assetId) !== ctx.deviceId) return legacyError(404, undefined, `no asset ${assetId} of this device`);
          const body = parseJsonObject(ctx.body);
          if (body === undefined) return legacyError(400, undefined, 'the body is not a JSON object');
          if (typeof body.text !== 'string' || body.text === '') return legacyError(400, undefined, 'text is required');
          const ts = body.timestamp;
          if (ts !== undefined && ts !== null && (typeof ts !== 'number' || !Number.isInteger(ts) || ts < 0)) return legacyError(400, undefined, 'timestamp must be a number of frames from 0');
          const c: CommentRecord = { id: randomUUID(), t: ctx.t, deviceId: ctx.deviceId!, assetId, text: body.text, timestamp: (ts as number | null | undefined) ?? null };
          this.comments.push(c);
          return json(200, {
            _type: 'comment',
            id: c.id,
            text: c.text,
            timestamp: c.timestamp,
            frame: c.timestamp,
            duration: null,
            owner: null,
            device_channel_input_id: null,
            inserted_at: this.clock.iso(c.t),
          });
        },
      });
  }
}
