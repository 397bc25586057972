// Real-time logging end to end in agent time (rig.ts; issue 31): presses
// through the local API and from the profile's input device (a FIFO under the
// host root), and comments on clips, reaching the fake cloud once each with
// the right channel, input, timecode and rate, and the offset they waited;
// presses made offline arriving after a kill -9 and an outage; refusals that
// queue nothing. (The CLI as a process: integration/logging-cli.test.ts.)
import { afterEach, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { apiEvents, apiRequest, type ApiReply } from '../../agent/localapi/client.js';
import { apiSocketOf } from '../../agent/localapi/local-api-unit.js';
import { encodeEvent, EV_KEY, layoutFor } from '../../agent/logging/input-device.js';
import { parseRate, timeOfDay } from '../../agent/lib/timecode.js';
import type { PressRecord } from '../fake-cloud/index.js';
import { until as realUntil } from '../support/until.js';
import { MINUTE, Rig, SECOND, WALL_START } from './rig.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const INPUT_DEVICE = 'dev/input/by-path/platform-gpio-keys-event';

/** A camera with buttons: the generic profile's one channel, three inputs (two on keys), time-of-day timecode at 23.976. */
function profileDir(r: Rig, extra: Record<string, unknown> = {}): string {
  const dir = join(r.root, 'profiles');
  mkdirSync(dir, { recursive: true });
  const profile = {
    id: 'pi-buttons',
    name: 'Raspberry Pi camera with buttons',
    minFirmware: '0.0.0',
    assetType: 'video',
    heartbeat: { minSeconds: 60, maxSeconds: 255 },
    channels: [
      {
        key: 'main',
        name: 'Main sensor',
        assetType: 'video',
        deviceModelId: 'c2c-generic-camera',
        detect: { anyPath: ['dev/video0'] },
        inputs: [
          { index: 0, name: 'Good take', key: 'KEY_ENTER' },
          { index: 1, name: 'Bad take', key: 'KEY_1' },
          { index: 7, name: 'Slate' },
        ],
      },
    ],
    requiredMetadata: [],
    inputDevice: INPUT_DEVICE,
    timecode: { rate: '24000/1001' },
    ...extra,
  };
  writeFileSync(join(dir, 'pi-buttons.json'), JSON.stringify(profile));
  return dir;
}

/** The rig started with the buttons' profile, its channel plugged and known to the service. */
async function online(r: Rig, env: Record<string, string> = {}): Promise<string> {
  r.plug('dev/video0');
  r.start({ C2C_PROFILES_DIR: profileDir(r), ...env });
  await r.until('the channel connected', () => channelId(r) !== undefined, 2 * MINUTE);
  await r.until('online', () => r.state() === 'online', MINUTE);
  return channelId(r)!;
}

/**
 * One request to the daemon's local API while agent time moves on, 10 ms a
 * step: a press or a comment is answered once on flash, after the outbox's
 * group commit (a timer of the virtual clock), which Rig.api, holding time
 * still, would wait for forever.
 */
async function api<T = Record<string, any>>(r: Rig, method: string, path: string, body?: unknown): Promise<ApiReply<T>> {
  let reply: ApiReply<T> | undefined;
  let failed: unknown;
  void apiRequest<T>(apiSocketOf(r.runtimeDir), method, path, body).then(
    (v) => (reply = v),
    (e: unknown) => (failed = e ?? new Error('failed')),
  );
  for (let i = 0; reply === undefined && failed === undefined; i++) {
    if (i > 5_000) throw new Error(`no answer to ${method} ${path}`);
    await new Promise((res) => setTimeout(res, 1));
    if (reply === undefined && failed === undefined) await r.advance(10);
  }
  if (failed !== undefined) throw failed;
  await r.settle();
  return reply!;
}

const channelId = (r: Rig): string | undefined => ((r.cloud.device(r.device.id) as { channels?: Array<{ id: string }> }).channels ?? [])[0]?.id;
const presses = (r: Rig): PressRecord[] => r.cloud.presses(r.device.id);
const press = (r: Rig, channel: string, index: number | string, body?: unknown) => api<{ press?: Record<string, unknown>; error?: { kind: string; message: string } }>(r, 'POST', `/v1/inputs/${channel}/${index}`, body);
const todAt = (wallMs: number, rate = '24000/1001', df = false): string => timeOfDay(wallMs, parseRate(rate), df, -new Date(wallMs).getTimezoneOffset()).smpte;

describe('presses through the local API', () => {
  it('arrive once each with their channel, input, timecode and rate; offset 0 when sent at once', async () => {
    const r = (rig = await Rig.up());
    const ch = await online(r);
    const t0 = r.now();
    const a = await press(r, 'main', 0, { timecode: '01:00:00:00' });
    expect(a.status).toBe(202);
    expect(a.body).toEqual({ press: { id: expect.any(String), channel: 'main', index: 0, state: 'queued' } });
    // No timecode: the time of day at the profile's rate, from the moment of the press.
    const tb = r.now();
    const b = await press(r, 'main', 1);
    expect(b.status).toBe(202);
    const c = await press(r, 'main', '7', { timecode: '10:00:00;00', rate: '30000/1001' });
    expect(c.status).toBe(202);
    await r.until('three presses at the service', () => presses(r).length >= 3, MINUTE);
    await r.advance(5 * MINUTE);
    const got = presses(r);
    expect(got.map((p) => [p.channelId, p.index, p.status, p.body])).toEqual([
      [ch, 0, 204, { action_type: 'single_press', offset: 0, start: { smpte_timecode: '01:00:00:00', rate: { playback: [24000, 1001], ntsc: 'non_drop' } } }],
      [ch, 1, 204, { action_type: 'single_press', offset: 0, start: { smpte_timecode: expect.any(String), rate: { playback: [24000, 1001], ntsc: 'non_drop' } } }],
      [ch, 7, 204, { action_type: 'single_press', offset: 0, start: { smpte_timecode: '10:00:00;00', rate: { playback: [30000, 1001], ntsc: 'drop_frame' } } }],
    ]);
    // The time of day of the moment the request reached the daemon (the rig moves agent time 10 ms a step while it waits).
    const tod = (got[1]!.body.start as { smpte_timecode: string }).smpte_timecode;
    expect(Array.from({ length: 100 }, (_, k) => todAt(WALL_START + tb + 10 * k))).toContain(tod);
    expect(t0).toBeLessThanOrEqual(tb);
    expect(r.cloud.logging(r.device.id)).toEqual({ presses: 3, accepted: 3, duplicates: 0, problems: [] });
    expect(r.status()?.logging).toEqual({ pending: 0, sent: 3, failed: 0 });
  });

  it('are told on /v1/events: queued, then sent with the offset', async () => {
    const r = (rig = await Rig.up());
    await online(r);
    const lines: Array<Record<string, unknown>> = [];
    const ac = new AbortController();
    void apiEvents(apiSocketOf(r.runtimeDir), (e) => lines.push(e), { signal: ac.signal }).catch(() => undefined);
    try {
      await realUntil('the events stream', () => lines.length > 0);
      const a = await press(r, 'main', 0);
      const id = a.body.press!.id;
      await r.until('the press sent', () => lines.some((l) => l.type === 'press' && l.state === 'sent'), MINUTE);
      await realUntil('its lines', () => lines.filter((l) => l.type === 'press').length >= 2);
      expect(lines.filter((l) => l.type === 'press').map(({ at: _at, timecode: _tc, ...l }) => l)).toEqual([
        { type: 'press', id, channel: 'main', index: 0, state: 'queued' },
        { type: 'press', id, channel: 'main', index: 0, state: 'sent', offset: 0 },
      ]);
    } finally {
      ac.abort();
    }
  });

  it('a malformed timecode or rate is a 400, an input the profile has not a 404, and nothing is queued or sent', async () => {
    const r = (rig = await Rig.up());
    await online(r);
    const refusals: Array<[string, number | string, unknown, number, string]> = [
      ['main', 0, { timecode: '25:00:00:00' }, 400, 'hours 25 are over 23'],
      ['main', 0, { timecode: '01:00:00:24' }, 400, 'frame 24 does not exist at 24000/1001'],
      ['main', 0, { timecode: '01:00:00;00' }, 400, 'drop-frame, which exists only at 30000/1001 and 60000/1001'],
      ['main', 0, { rate: 'fast' }, 400, 'rate "fast" is not a frame rate'],
      ['main', 0, { rate: 29.97 }, 400, '30000/1001'],
      ['main', 0, { durationFrames: -2 }, 400, 'durationFrames -2'],
      ['main', 0, [1, 2], 400, 'the body must be a JSON object'],
      ['main', 5, undefined, 404, "channel 'main' has no input 5 in firmware profile pi-buttons (inputs: 0 Good take, 1 Bad take, 7 Slate)"],
      ['main', 'x', undefined, 404, "has no input 'x'"],
      ['aux', 0, undefined, 404, "no channel 'aux' in firmware profile pi-buttons (channels with inputs: main)"],
    ];
    for (const [channel, index, body, status, message] of refusals) {
      const reply = await press(r, channel, index, body);
      expect([reply.status, reply.body.error?.message]).toEqual([status, expect.stringContaining(message)]);
    }
    await r.advance(2 * MINUTE);
    expect(presses(r)).toEqual([]);
    expect(r.status()?.queue?.byKind.press).toBeUndefined();
    expect(r.status()?.logging).toEqual({ pending: 0, sent: 0, failed: 0 });
  });
});

describe("the service's answers to a press", () => {
  const TOKEN = '/v2/auth/token';

  it('a 401 goes through the one 401 policy (one refresh, sent again at once), a 5xx and a 429 are tried again: each press arrives once', async () => {
    const r = (rig = await Rig.up());
    const ch = await online(r);
    const trigger = (i: number) => `/v2/devices/channels/${ch}/inputs/${i}/trigger`;
    r.cloud.control.addFault({ kind: 'status', status: 401, method: 'POST', path: trigger(0), count: 1 });
    r.cloud.control.addFault({ kind: 'status', status: 503, method: 'POST', path: trigger(1), count: 2 });
    r.cloud.control.addFault({ kind: 'rate-limit', retryAfter: '7', method: 'POST', path: trigger(7), count: 1 });
    const since = r.now();
    for (const i of [0, 1, 7]) expect((await press(r, 'main', i, { timecode: '02:00:00:00' })).status).toBe(202);
    await r.until('three presses taken', () => presses(r).filter((p) => p.status === 204).length === 3, 10 * MINUTE);
    await r.advance(5 * MINUTE);
    expect(r.entries('POST', TOKEN).filter((e) => e.t >= since).map((e) => e.status)).toEqual([200]);
    // Refused ones never reached the handler (the fault answered): each press was taken once.
    expect(presses(r).map((p) => p.index).sort()).toEqual([0, 1, 7]);
    const answers = (i: number) => r.entries('POST', trigger(i)).map((e) => e.status);
    expect(answers(0)).toEqual([401, 204]);
    expect(answers(1)).toEqual([503, 503, 204]);
    expect(answers(7)).toEqual([429, 204]);
    const [limited, taken] = r.entries('POST', trigger(7));
    expect(taken!.t - limited!.t).toBeGreaterThanOrEqual(7 * SECOND);
    expect(r.status()?.logging).toEqual({ pending: 0, sent: 3, failed: 0 });
  });

  it('another 4xx ends the press failed, with the reason, never sent again', async () => {
    const r = (rig = await Rig.up());
    const ch = await online(r);
    const path = `/v2/devices/channels/${ch}/inputs/0/trigger`;
    r.cloud.control.addFault({ kind: 'status', status: 422, method: 'POST', path });
    const lines: Array<Record<string, unknown>> = [];
    const ac = new AbortController();
    void apiEvents(apiSocketOf(r.runtimeDir), (e) => lines.push(e), { signal: ac.signal }).catch(() => undefined);
    try {
      await realUntil('the events stream', () => lines.length > 0);
      expect((await press(r, 'main', 0)).status).toBe(202);
      await r.until('the press failed', () => r.status()?.logging?.failed === 1, 5 * MINUTE);
      await r.advance(30 * MINUTE);
      expect(r.entries('POST', path).map((e) => e.status)).toEqual([422]);
      expect(r.status()?.logging).toEqual({ pending: 0, sent: 0, failed: 1 });
      await realUntil('the failed line', () => lines.some((l) => l.type === 'press' && l.state === 'failed'));
      expect(lines.find((l) => l.type === 'press' && l.state === 'failed')).toMatchObject({ channel: 'main', index: 0, reason: expect.stringContaining('422') });
    } finally {
      ac.abort();
    }
  });
});

describe('presses made offline', () => {
  it('arrive after an outage and a kill -9, once each, with the seconds they waited', async () => {
    const r = (rig = await Rig.up());
    const ch = await online(r);
    r.loseNetwork(20 * MINUTE);
    const madeAt: number[] = [];
    madeAt.push(r.now());
    expect((await press(r, 'main', 0, { timecode: '11:00:00:00' })).status).toBe(202);
    await r.advance(3 * MINUTE + 500);
    madeAt.push(r.now());
    expect((await press(r, 'main', 1, { timecode: '11:03:00:12' })).status).toBe(202);
    await r.advance(2 * MINUTE);
    // kill -9: acknowledged means on flash; the next daemon sends them.
    r.kill();
    await r.advance(MINUTE);
    r.start({ C2C_PROFILES_DIR: profileDir(r) });
    await r.until('both presses at the service', () => presses(r).length >= 2, 40 * MINUTE);
    await r.advance(10 * MINUTE);
    const got = presses(r);
    expect(got).toHaveLength(2);
    expect(got.map((p) => [p.channelId, p.index, (p.body.start as { smpte_timecode: string }).smpte_timecode])).toEqual([
      [ch, 0, '11:00:00:00'],
      [ch, 1, '11:03:00:12'],
    ]);
    // Each offset is the whole seconds between the press and its send, by the agent's clock (the fake's is the same line).
    got.forEach((p, i) => expect(p.body.offset).toBe(Math.floor((p.t - madeAt[i]!) / SECOND)));
    expect(got[0]!.body.offset).toBeGreaterThanOrEqual(20 * 60 - 1);
    expect(r.cloud.logging(r.device.id)).toEqual({ presses: 2, accepted: 2, duplicates: 0, problems: [] });
  });

  it('a press whose answer was lost (killed as it reached the service) arrives again only as the same press, flagged by the referee if twice', async () => {
    const r = (rig = await Rig.up());
    await online(r);
    // The network away for a moment, so the 202 comes back before the first send; the daemon dies as that send reaches the service.
    r.loseNetwork(10 * SECOND);
    const madeAt = r.now();
    expect((await press(r, 'main', 0, { timecode: '12:00:00:00' })).status).toBe(202);
    r.onRequest((q) => q.path.endsWith('/trigger'), () => r.kill());
    await r.until('the kill', () => r.daemon === undefined, MINUTE);
    await r.advance(30 * SECOND);
    r.start({ C2C_PROFILES_DIR: profileDir(r) });
    await r.until('the press sent again', () => presses(r).length >= 2, 5 * MINUTE);
    // At least once: the service cannot tell us it had it. The resend carries the same moment by its offset.
    const [first, second] = presses(r);
    expect(Math.abs(first!.t - (first!.body.offset as number) * 1000 - madeAt)).toBeLessThan(SECOND);
    expect(Math.abs(second!.t - (second!.body.offset as number) * 1000 - madeAt)).toBeLessThan(SECOND);
    expect(r.cloud.logging(r.device.id).duplicates).toBe(1);
  });

  it('a press on a channel the service does not know yet waits for the channel sync', async () => {
    const r = (rig = await Rig.up());
    r.start({ C2C_PROFILES_DIR: profileDir(r) });
    await r.until('online', () => r.state() === 'online', MINUTE);
    expect(channelId(r)).toBeUndefined();
    const madeAt = r.now();
    expect((await press(r, 'main', 0, { timecode: '09:00:00:00' })).status).toBe(202);
    await r.advance(2 * MINUTE);
    expect(presses(r)).toEqual([]);
    r.plug('dev/video0');
    await r.until('the press at the service', () => presses(r).length > 0, 10 * MINUTE);
    const [p] = presses(r);
    expect(p!.channelId).toBe(channelId(r));
    expect(p!.status).toBe(204);
    expect(p!.body.offset).toBe(Math.floor((p!.t - madeAt) / SECOND));
  });
});

describe('presses from the input device (a FIFO in place of the gpio-keys device)', () => {
  it('each key-down of a key an input names is that press, once; other keys and key-ups are not', async () => {
    const r = (rig = await Rig.up());
    const fifo = join(r.host, INPUT_DEVICE);
    mkdirSync(join(fifo, '..'), { recursive: true });
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const ch = await online(r);
    const layout = layoutFor();
    const key = (code: number, value: number, timeMs: number) => encodeEvent({ timeMs, type: EV_KEY, code, value }, layout);
    const syn = (timeMs: number) => encodeEvent({ timeMs, type: 0, code: 0, value: 0 }, layout);
    const wall = (): number => WALL_START + r.now();
    const write = (b: Buffer): void => {
      const fd = openSync(fifo, 'w');
      writeSync(fd, b);
      closeSync(fd);
    };
    // The records' own times, a second and a half before the clock (a record from the future is taken as read now).
    const t1 = wall() - 1_500;
    // KEY_ENTER: Good take (0); KEY_2 is no input's; KEY_1: Bad take (1).
    write(Buffer.concat([key(28, 1, t1), syn(t1), key(28, 0, t1 + 90), syn(t1 + 90), key(3, 1, t1 + 200), key(3, 0, t1 + 300), key(2, 1, t1 + 400), key(2, 2, t1 + 900), key(2, 0, t1 + 1000)]));
    // Read by the daemon as it comes (real I/O); then queued with the next group commit, in agent time.
    await realUntil('two buttons read', () => r.lines.filter((l) => l.msg === 'button pressed').length >= 2, { hangMs: 20_000 });
    await r.until('two presses at the service', () => presses(r).length >= 2, MINUTE);
    await r.advance(2 * MINUTE);
    const got = presses(r);
    expect(got.map((p) => [p.channelId, p.index, p.status])).toEqual([
      [ch, 0, 204],
      [ch, 1, 204],
    ]);
    expect((got[0]!.body.start as { smpte_timecode: string }).smpte_timecode).toBe(todAt(t1));
    expect((got[1]!.body.start as { smpte_timecode: string }).smpte_timecode).toBe(todAt(t1 + 400));
    expect(r.cloud.logging(r.device.id)).toEqual({ presses: 2, accepted: 2, duplicates: 0, problems: [] });
  });
});

describe('comments', () => {
  it('reach the clip\'s asset at their frame, a comment made before the upload held until its asset exists', async () => {
    const r = (rig = await Rig.up({ cloud: { uploadPartBytes: 256 * 1024 } }));
    await online(r, r.mediaEnv(10));
    r.writeMedia('take-001.mp4', 600 * 1024);
    // Made before the clip held still: no asset yet.
    const early = await api<{ comment?: Record<string, unknown> }>(r, 'POST', '/v1/comments', { path: 'take-001.mp4', text: 'Good take: the second line', frame: 48 });
    expect(early.status).toBe(202);
    expect(early.body).toEqual({ comment: { id: expect.any(String), state: 'held' } });
    await r.until('the clip stored', () => r.cloud.assets().some((a) => a.name === 'take-001.mp4' && a.complete), 5 * MINUTE);
    const asset = r.cloud.assets().find((a) => a.name === 'take-001.mp4')!;
    await r.until('the comment', () => r.cloud.comments(asset.id).length > 0, MINUTE);
    // Made after: its asset known, queued at once; a comment on the whole clip has no timestamp.
    const late = await api<{ comment?: Record<string, unknown> }>(r, 'POST', '/v1/comments', { path: join(r.media, 'take-001.mp4'), text: 'whole clip' });
    expect(late.body.comment?.state).toBe('queued');
    await r.until('two comments', () => r.cloud.comments(asset.id).length >= 2, MINUTE);
    expect(r.cloud.comments().map((c) => [c.assetId, c.text, c.timestamp])).toEqual([
      [asset.id, 'Good take: the second line', 48],
      [asset.id, 'whole clip', null],
    ]);
    await r.until('the status document counting them', () => r.status()?.logging?.sent === 2, MINUTE);
    expect(r.status()?.logging).toEqual({ pending: 0, sent: 2, failed: 0 });
  });

  it('are refused as an upload of the path would be, and for a bad text or frame; nothing is queued', async () => {
    const r = (rig = await Rig.up());
    await online(r, r.mediaEnv(10));
    r.writeMedia('take-002.mp4', 1000);
    const refusals: Array<[unknown, number, string]> = [
      [{ path: 'nope.mp4', text: 'x' }, 404, 'does not exist'],
      [{ path: '/etc/passwd', text: 'x' }, 403, 'is outside the media dir and the upload roots'],
      [{ path: 'take-002.mp4', text: '' }, 400, 'text must be the comment'],
      [{ path: 'take-002.mp4', text: 'x', frame: -1 }, 400, 'frame -1 must be a whole number of frames from 0'],
      [{ path: 'take-002.mp4', text: 'x', frame: 1.5 }, 400, 'frame 1.5'],
      [{ text: 'x' }, 400, "path must be the clip's file path"],
    ];
    for (const [body, status, message] of refusals) {
      const reply = await api<{ error?: { message: string } }>(r, 'POST', '/v1/comments', body);
      expect([reply.status, reply.body.error?.message]).toEqual([status, expect.stringContaining(message)]);
    }
    expect(r.status()?.queue?.byKind.comment).toBeUndefined();
  });
});
