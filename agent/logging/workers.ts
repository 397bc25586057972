// The outbox's workers for real-time logging (the dispatcher runs them while
// the service answers, outbox/dispatcher.ts): a press is sent once as the
// trigger call, a comment once its clip's asset exists. What an answer means
// is the outbox's one classification (outbox/outcome.ts): a 401 goes to the
// token source's one 401 policy (`callRefused`, asked by the dispatcher), any
// other 4xx ends the item dead with the reason, 5xx, 429 and the network are
// tried again.
//
// Two waits happen inside an attempt, on the Clock and cut short by a stop or
// a cancel: a press on a channel the service does not know yet waits for the
// channel sync (one is asked for), and a comment waits for its clip's asset.
// Each holds one of its kind's slots (two, outbox/dispatcher.ts) meanwhile,
// and after its bound the attempt ends to be tried again like any failure.
import type { AgentEvent, EventBus } from '../core/event-bus.js';
import type { FirmwareProfile } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import { AgentError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { Worker } from '../outbox/dispatcher.js';
import { classify, type Outcome } from '../outbox/outcome.js';
import type { OutboxItem } from '../outbox/types.js';
import { assetOf, COMMENT_KIND, commentOf } from './comment.js';
import type { LoggingEndpoints } from './logging-api.js';
import { PRESS_KIND, pressOf, triggerBody } from './press.js';

/** How long one attempt at a press waits for its channel's sync before it ends, to be tried again (agent ms). */
export const CHANNEL_WAIT_MS = 10 * 60_000;
/** How long one attempt at a comment waits for its clip's asset before it ends, to be tried again (agent ms). */
export const ASSET_WAIT_MS = 6 * 3_600_000;
/** A comment waiting for its asset looks at the queue this often besides when the uploads move (agent ms). */
export const ASSET_LOOK_MS = 5_000;

export interface LoggingWorkerDeps {
  api: LoggingEndpoints;
  clock: Clock;
  /** This boot's id: a press made on another boot waited by the wall clock (press.ts offsetSeconds). */
  bootId: string;
  profile: Pick<FirmwareProfile, 'channels'>;
  /** The channel record (channels/channel-map.ts): profile key -> the service's channel id. */
  channelIds: () => Promise<Record<string, string>>;
  /** Every item the queue holds (the uploads among them, with their asset ids). */
  items: () => OutboxItem[];
  /** Hears channelsSynced and the uploads moving; publishes channelSyncRequested. */
  bus: EventBus;
  logger?: Logger;
}

/** Resolves when one of `events` is published, after `ms`, or when `signal` aborts: which. */
function nextEvent(bus: EventBus, events: readonly AgentEvent[], clock: Clock, ms: number, signal: AbortSignal): Promise<'event' | 'time' | 'aborted'> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve('aborted');
    const owner = {};
    const done = (why: 'event' | 'time' | 'aborted'): void => {
      bus.removeListeners(owner);
      timer.cancel();
      signal.removeEventListener('abort', onAbort);
      resolve(why);
    };
    const onAbort = (): void => done('aborted');
    const timer = clock.setTimer(() => done('time'), ms);
    for (const e of events) bus.on(e, owner, () => done('event'));
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

const waitedTooLong = (what: string): Outcome => ({ result: 'retry', error: new AgentError('unavailable', what) });

export class PressWorker implements Worker {
  readonly kind = PRESS_KIND;

  constructor(private readonly d: LoggingWorkerDeps) {}

  async run(item: OutboxItem, signal: AbortSignal): Promise<Outcome> {
    const p = pressOf(item.payload);
    if (p === undefined) return { result: 'dead', reason: 'not a press this agent wrote (its record has another shape)' };
    if (!this.d.profile.channels.some((c) => c.key === p.channel)) return { result: 'dead', reason: `channel '${p.channel}' is no longer in the firmware profile` };
    const channelId = await this.channelId(p.channel, signal);
    if (typeof channelId !== 'string') return channelId;
    const { clock } = this.d;
    const body = triggerBody(p, { mono: clock.now(), boot: this.d.bootId, wall: clock.wallNow() });
    try {
      await this.d.api.trigger(channelId, p.index, body, signal);
    } catch (err) {
      return classify(err);
    }
    this.d.logger?.info({ id: item.id, channel: p.channel, index: p.index, offset: body.offset, timecode: body.start?.smpte_timecode }, 'press sent');
    return { result: 'done', note: `sent with offset ${body.offset} s` };
  }

  /** The service's id of the channel, once it has one: the sync is asked for and waited for, at most CHANNEL_WAIT_MS. */
  private async channelId(key: string, signal: AbortSignal): Promise<string | Outcome> {
    const { clock, bus } = this.d;
    const until = clock.now() + CHANNEL_WAIT_MS;
    let asked = false;
    for (;;) {
      const id = (await this.d.channelIds().catch(() => ({}) as Record<string, string>))[key];
      if (id !== undefined) return id;
      if (!asked) {
        asked = true;
        this.d.logger?.info({ channel: key }, 'a press waits for its channel: the service does not know it yet; syncing the channels');
        bus.emit('channelSyncRequested', { why: `a press on channel ${key}, which the service does not know yet` });
      }
      const left = until - clock.now();
      if (left <= 0) return waitedTooLong(`the service has no channel for '${key}' yet (is it plugged in? see \`c2c-agent channels\`); the press waits for the channel sync`);
      const why = await nextEvent(bus, ['channelsSynced'], clock, left, signal);
      if (why === 'aborted') return waitedTooLong('stopped while waiting for the channel sync');
    }
  }
}

export class CommentWorker implements Worker {
  readonly kind = COMMENT_KIND;

  constructor(private readonly d: LoggingWorkerDeps) {}

  async run(item: OutboxItem, signal: AbortSignal): Promise<Outcome> {
    const c = commentOf(item.payload);
    if (c === undefined) return { result: 'dead', reason: 'not a comment this agent wrote (its record has another shape)' };
    const { clock, bus } = this.d;
    const until = clock.now() + ASSET_WAIT_MS;
    let assetId: string | undefined;
    for (;;) {
      const found = assetOf(this.d.items(), c);
      if (found.kind === 'asset') {
        assetId = found.assetId;
        break;
      }
      if (found.kind === 'ended') return { result: 'dead', reason: `the clip ${c.name} has no asset to comment on: ${found.reason}` };
      const left = until - clock.now();
      if (left <= 0) return waitedTooLong(`the clip ${c.name} has no asset yet (it is not uploading); the comment waits for its upload`);
      const why = await nextEvent(bus, ['outboxSettled', 'statusChanged'], clock, Math.min(left, ASSET_LOOK_MS), signal);
      if (why === 'aborted') return waitedTooLong('stopped while waiting for the clip\'s asset');
    }
    try {
      await this.d.api.comment(assetId, { text: c.text, ...(c.frame !== undefined && { timestamp: c.frame }) }, signal);
    } catch (err) {
      return classify(err);
    }
    this.d.logger?.info({ id: item.id, asset: assetId, frame: c.frame }, 'comment sent');
    return { result: 'done', note: `sent on asset ${assetId}` };
  }
}
