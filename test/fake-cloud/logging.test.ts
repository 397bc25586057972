// The fake's real-time logging (logging.ts): the trigger call with its
// referee (this device's channel, a whole index, single_press, a whole offset
// from 0, well-formed SMPTE times, each press once) and the comments call
// (an asset of this device, a text, a timestamp in frames).
import { afterEach, describe, expect, it } from '@jest/globals';
import { startFakeCloud } from './index.js';
import type { FakeCloud } from './index.js';
import { call } from './test-helpers.js';
import { smpteProblems } from './logging.js';

let cloud: FakeCloud | undefined;
afterEach(async () => {
  await cloud?.close();
  cloud = undefined;
});

type Json = Record<string, any>;
let now = 0;

async function postJson(c: FakeCloud, path: string, body: unknown, i = 0): Promise<{ status: number; body: Json }> {
  const r = await call(c.url, path, { method: 'POST', token: c.devices[i]!.accessToken, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, body: text ? (JSON.parse(text) as Json) : {} };
}

async function withChannel(): Promise<{ c: FakeCloud; channel: string; other: string }> {
  now = 0;
  const c = (cloud = await startFakeCloud({ devices: 2, clock: () => now }));
  const ch = await postJson(c, '/v2/devices/channels', { client_id: c.devices[0]!.clientId, device_model_id: 'cam-hd' });
  const other = await postJson(c, '/v2/devices/channels', { client_id: c.devices[1]!.clientId, device_model_id: 'cam-hd' }, 1);
  return { c, channel: ch.body.id as string, other: other.body.id as string };
}

const tc = (smpte: string, playback: [number, number], ntsc: string | null) => ({ smpte_timecode: smpte, rate: { playback, ntsc } });

describe('the trigger call', () => {
  it('takes a good press (204) and records it, with when it was made', async () => {
    const { c, channel } = await withChannel();
    now = 50_000;
    const r = await postJson(c, `/v2/devices/channels/${channel}/inputs/0/trigger`, { action_type: 'single_press', offset: 12, start: tc('01:00:00:00', [24000, 1001], 'non_drop') });
    expect(r.status).toBe(204);
    expect(c.presses(c.devices[0]!.id)).toEqual([expect.objectContaining({ channelId: channel, index: 0, status: 204, madeAt: 38_000, problems: [], duplicate: false })]);
    expect(c.logging(c.devices[0]!.id)).toEqual({ presses: 1, accepted: 1, duplicates: 0, problems: [] });
  });

  it("refuses another device's channel (404) and an index that is no whole number (400)", async () => {
    const { c, other } = await withChannel();
    expect((await postJson(c, `/v2/devices/channels/${other}/inputs/0/trigger`, { action_type: 'single_press', offset: 0 })).status).toBe(404);
    expect((await postJson(c, '/v2/devices/channels/nope/inputs/0/trigger', { action_type: 'single_press', offset: 0 })).status).toBe(404);
    const { c: c2, channel } = await withChannel();
    expect((await postJson(c2, `/v2/devices/channels/${channel}/inputs/1.5/trigger`, { action_type: 'single_press', offset: 0 })).status).toBe(400);
    expect(c2.logging(c2.devices[0]!.id).problems).toEqual([expect.stringContaining('input index "1.5" is not a whole number')]);
  });

  it.each([
    [{ action_type: 'double_press', offset: 0 }, 'action_type "double_press" is not "single_press"'],
    [{ offset: 0 }, 'action_type undefined is not "single_press"'],
    [{ action_type: 'single_press', offset: -1 }, 'offset -1 is not a whole number >= 0'],
    [{ action_type: 'single_press', offset: 1.5 }, 'offset 1.5 is not a whole number >= 0'],
    [{ action_type: 'single_press' }, 'offset undefined is not'],
    [{ action_type: 'single_press', offset: 0, start: tc('1:00:00:00', [25, 1], null) }, 'start.smpte_timecode "1:00:00:00" is not HH:MM:SS:FF'],
    [{ action_type: 'single_press', offset: 0, start: tc('01:00:00:25', [25, 1], null) }, 'has frame 25 at 25 frames a second'],
    [{ action_type: 'single_press', offset: 0, start: tc('24:00:00:00', [25, 1], null) }, 'is out of range'],
    [{ action_type: 'single_press', offset: 0, start: tc('01:00:00:00', [25, 1], 'non_drop') }, 'start.rate.ntsc is "non_drop" for the whole-number rate 25/1 (null expected)'],
    [{ action_type: 'single_press', offset: 0, start: tc('01:00:00:00', [24000, 1001], null) }, 'start.rate.ntsc is null for the fractional rate 24000/1001'],
    [{ action_type: 'single_press', offset: 0, start: tc('01:00:00;00', [24000, 1001], 'drop_frame') }, 'drop_frame at 24000/1001, which has none'],
    [{ action_type: 'single_press', offset: 0, start: tc('01:01:00;01', [30000, 1001], 'drop_frame') }, 'is a label drop-frame skips'],
    [{ action_type: 'single_press', offset: 0, start: tc('01:01:00:05', [30000, 1001], 'drop_frame') }, 'is not marked drop-frame (;)'],
    [{ action_type: 'single_press', offset: 0, start: tc('01:00:00:00', [0, 1], null) }, 'playback [0,1] is not'],
    [{ action_type: 'single_press', offset: 0, duration: 'PT1S' }, 'duration is not an object'],
  ])('refuses a malformed press (422): %j', async (body, problem) => {
    const { c, channel } = await withChannel();
    const r = await postJson(c, `/v2/devices/channels/${channel}/inputs/0/trigger`, body);
    expect(r.status).toBe(422);
    expect(c.logging(c.devices[0]!.id).problems.join('\n')).toContain(problem);
  });

  it('flags a press that arrives twice (the same moment, input and timecode), not two presses', async () => {
    const { c, channel } = await withChannel();
    const path = `/v2/devices/channels/${channel}/inputs/0/trigger`;
    now = 10_000;
    await postJson(c, path, { action_type: 'single_press', offset: 0, start: tc('10:00:00:00', [25, 1], null) });
    // The same press sent again 30 s later (its answer was lost): made at the same moment by its offset.
    now = 40_400;
    await postJson(c, path, { action_type: 'single_press', offset: 30, start: tc('10:00:00:00', [25, 1], null) });
    // Another press of the same button a frame later, and one on another input at the same moment: presses of their own.
    await postJson(c, path, { action_type: 'single_press', offset: 30, start: tc('10:00:00:01', [25, 1], null) });
    await postJson(c, `/v2/devices/channels/${channel}/inputs/1/trigger`, { action_type: 'single_press', offset: 30, start: tc('10:00:00:00', [25, 1], null) });
    expect(c.logging(c.devices[0]!.id)).toEqual({ presses: 4, accepted: 3, duplicates: 1, problems: [] });
    expect(c.presses().map((p) => p.duplicate)).toEqual([false, true, false, false]);
  });

  it('knows good SMPTE times of every kind', () => {
    expect(smpteProblems(tc('23:59:59:23', [24000, 1001], 'non_drop'), 's')).toEqual([]);
    expect(smpteProblems(tc('01:10:00;00', [30000, 1001], 'drop_frame'), 's')).toEqual([]);
    expect(smpteProblems(tc('01:11:00;04', [60000, 1001], 'drop_frame'), 's')).toEqual([]);
    expect(smpteProblems({ smpte_timecode: '01:00:00:00', rate: { playback: '25/1', ntsc: null } }, 's')).toEqual([]);
  });
});

describe('the comments call', () => {
  it('comments on an asset of this device (200) with its frame, and refuses what is not', async () => {
    const { c } = await withChannel();
    const a = await postJson(c, '/v2/devices/assets', { name: 'take.mp4', filetype: 'video/mp4', filesize: 1000, offset: 0 });
    expect(a.status).toBe(200);
    const id = a.body.id as string;
    const r = await postJson(c, `/v2/devices/assets/${id}/comments`, { text: 'Good take', timestamp: 48 });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ text: 'Good take', timestamp: 48, frame: 48 });
    expect(c.comments(id)).toEqual([expect.objectContaining({ assetId: id, text: 'Good take', timestamp: 48 })]);
    expect((await postJson(c, `/v2/devices/assets/${id}/comments`, { text: 'whole clip' })).body.timestamp).toBeNull();
    expect((await postJson(c, `/v2/devices/assets/${id}/comments`, { text: '' })).status).toBe(400);
    expect((await postJson(c, `/v2/devices/assets/${id}/comments`, { text: 'x', timestamp: -1 })).status).toBe(400);
    expect((await postJson(c, '/v2/devices/assets/nope/comments', { text: 'x' })).status).toBe(404);
    // Another device's asset is not there for this one.
    expect((await postJson(c, `/v2/devices/assets/${id}/comments`, { text: 'x' }, 1)).status).toBe(404);
  });
});
