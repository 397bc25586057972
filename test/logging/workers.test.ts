// The outbox's workers for real-time logging (agent/logging/workers.ts), on a
// FakeClock with the service's calls stubbed: what each answer comes to, a
// press waiting for its channel's sync, a comment waiting for its clip's
// asset, and each wait's bound.
import { describe, expect, it } from '@jest/globals';
import { EventBus } from '../../agent/core/event-bus.js';
import { AgentError } from '../../agent/lib/errors.js';
import { CommentWorker, CHANNEL_WAIT_MS, ASSET_WAIT_MS, PressWorker, type LoggingWorkerDeps } from '../../agent/logging/workers.js';
import type { CommentBody, TriggerBody } from '../../agent/logging/logging-api.js';
import type { OutboxItem } from '../../agent/outbox/types.js';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';

const BOOT = 'boot-1';

function rig(o: { map?: Record<string, string>; items?: OutboxItem[]; fail?: AgentError } = {}) {
  const clock = new FakeClock();
  const bus = new EventBus();
  const sent: Array<{ channelId: string; index: number; body: TriggerBody }> = [];
  const comments: Array<{ assetId: string; body: CommentBody }> = [];
  const state = { map: o.map ?? {}, items: o.items ?? [], fail: o.fail };
  const syncs: string[] = [];
  bus.on('channelSyncRequested', {}, ({ why }) => syncs.push(why));
  const deps: LoggingWorkerDeps = {
    api: {
      trigger: async (channelId, index, body) => {
        if (state.fail) throw state.fail;
        sent.push({ channelId, index, body });
      },
      comment: async (assetId, body) => {
        if (state.fail) throw state.fail;
        comments.push({ assetId, body });
      },
    },
    clock,
    bootId: BOOT,
    profile: { channels: [{ key: 'main', name: 'Main', assetType: 'video', deviceModelId: 'm', detect: { anyPath: ['x'] } }] },
    channelIds: async () => state.map,
    items: () => state.items,
    bus,
  };
  return { clock, bus, sent, comments, state, syncs, press: new PressWorker(deps), comment: new CommentWorker(deps) };
}

const item = (kind: string, payload: unknown, extra: Partial<OutboxItem> = {}): OutboxItem => ({ id: `${BOOT}:1`, kind, priority: 20, payload, createdAt: '', bytes: 0, state: 'pending', ...extra });
const pressItem = (clockNow: number) => item('press', { channel: 'main', index: 3, at: { mono: clockNow - 4_200, boot: BOOT, wall: 0 }, source: 'api' });
const signal = (): AbortSignal => new AbortController().signal;

describe('the press worker', () => {
  it('sends the trigger call once with the seconds the press waited', async () => {
    const r = rig({ map: { main: 'ch-1' } });
    const outcome = await r.press.run(pressItem(r.clock.now()), signal());
    expect(outcome).toEqual({ result: 'done', note: 'sent with offset 4 s' });
    expect(r.sent).toEqual([{ channelId: 'ch-1', index: 3, body: { action_type: 'single_press', offset: 4 } }]);
  });

  it.each([
    [new AgentError('not-found', 'POST … answered 404', { status: 404 }), 'dead'],
    [new AgentError('protocol', 'POST … answered 422', { status: 422 }), 'dead'],
    [new AgentError('forbidden', 'POST … answered 403', { status: 403 }), 'dead'],
    [new AgentError('unauthorized', 'POST … answered 401', { status: 401 }), 'retry'],
    [new AgentError('server', 'POST … answered 503', { status: 503 }), 'retry'],
    [new AgentError('rate-limited', 'POST … answered 429', { status: 429 }), 'retry'],
    [new AgentError('network', 'ECONNRESET'), 'retry'],
  ])('%s: %s', async (err, result) => {
    const r = rig({ map: { main: 'ch-1' }, fail: err });
    const outcome = await r.press.run(pressItem(r.clock.now()), signal());
    expect(outcome.result).toBe(result);
    if (outcome.result === 'dead') expect(outcome.reason).toBe(err.message);
  });

  it('a press on a channel the service does not know yet asks for a sync once and goes when the sync brings the channel', async () => {
    const r = rig();
    const running = r.press.run(pressItem(r.clock.now()), signal());
    await flushMicrotasks();
    expect(r.syncs).toEqual(['a press on channel main, which the service does not know yet']);
    // A sync that did not connect it: still waiting.
    r.bus.emit('channelsSynced', { map: {} });
    await r.clock.advance(60_000);
    expect(r.sent).toEqual([]);
    r.state.map = { main: 'ch-9' };
    r.bus.emit('channelsSynced', { map: r.state.map });
    expect(await running).toMatchObject({ result: 'done' });
    expect(r.sent.map((s) => [s.channelId, s.body.offset])).toEqual([['ch-9', 64]]);
    expect(r.syncs).toHaveLength(1);
  });

  it('waits for its channel at most CHANNEL_WAIT_MS an attempt, then ends to be tried again; a stop ends the wait at once', async () => {
    const r = rig();
    const running = r.press.run(pressItem(r.clock.now()), signal());
    await r.clock.advance(CHANNEL_WAIT_MS);
    const outcome = await running;
    expect(outcome).toMatchObject({ result: 'retry', error: { message: expect.stringContaining("the service has no channel for 'main' yet") } });
    const ac = new AbortController();
    const stopped = r.press.run(pressItem(r.clock.now()), ac.signal);
    await flushMicrotasks();
    ac.abort(new Error('stopping'));
    expect(await stopped).toMatchObject({ result: 'retry' });
  });

  it('a record of another shape, or a channel no longer in the profile, is dead with the reason', async () => {
    const r = rig({ map: { main: 'ch-1' } });
    expect(await r.press.run(item('press', { nope: 1 }), signal())).toEqual({ result: 'dead', reason: 'not a press this agent wrote (its record has another shape)' });
    expect(await r.press.run(item('press', { channel: 'gone', index: 0, at: { mono: 0, boot: BOOT, wall: 0 } }), signal())).toEqual({ result: 'dead', reason: "channel 'gone' is no longer in the firmware profile" });
  });
});

describe('the comment worker', () => {
  const comment = item('comment', { path: '/m/take.mp4.part', finalPath: '/m/take.mp4', name: 'take.mp4', dev: 1, ino: 42, text: 'Good take', frame: 48, at: { mono: 0, boot: BOOT, wall: 0 } });
  const upload = (progress: unknown, extra: Partial<OutboxItem> = {}): OutboxItem => item('upload', { path: '/m/take.mp4', dev: 1, ino: 42 }, { id: `${BOOT}:0`, progress, ...extra });

  it("waits for the clip's asset (an upload of the same file recording its id), then comments on it at its frame", async () => {
    const r = rig();
    const running = r.comment.run(comment, signal());
    await r.clock.advance(60_000);
    expect(r.comments).toEqual([]);
    // Another file of the same name (another inode) is not this clip.
    r.state.items = [item('upload', { path: '/m/take.mp4', dev: 1, ino: 43 }, { progress: { assetId: 'other' } }), upload(undefined)];
    await r.clock.advance(10_000);
    expect(r.comments).toEqual([]);
    r.state.items = [upload({ assetId: 'asset-7' })];
    r.bus.emit('outboxSettled', {});
    expect(await running).toEqual({ result: 'done', note: 'sent on asset asset-7' });
    expect(r.comments).toEqual([{ assetId: 'asset-7', body: { text: 'Good take', timestamp: 48 } }]);
  });

  it('a real-time upload of the recording counts: the same inode at its working name', async () => {
    const r = rig({ items: [item('realtime-upload', { path: '/m/take.mp4.part', finalPath: '/m/take.mp4', dev: 1, ino: 42 }, { progress: { assetId: 'rt-1' } })] });
    expect(await r.comment.run(comment, signal())).toMatchObject({ result: 'done' });
    expect(r.comments[0]!.assetId).toBe('rt-1');
  });

  it("ends dead when the clip's upload ended without finishing, and after ASSET_WAIT_MS without an asset is tried again later", async () => {
    const r = rig({ items: [upload({ assetId: 'a' }, { state: 'dead', reason: 'cancelled: by hand' })] });
    expect(await r.comment.run(comment, signal())).toEqual({ result: 'dead', reason: 'the clip take.mp4 has no asset to comment on: its upload ended without finishing (cancelled: by hand)' });
    const idle = rig();
    const running = idle.comment.run(comment, signal());
    await idle.clock.advance(ASSET_WAIT_MS);
    expect(await running).toMatchObject({ result: 'retry', error: { message: expect.stringContaining('the clip take.mp4 has no asset yet') } });
  });
});
