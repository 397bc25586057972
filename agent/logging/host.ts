// Real-time logging's part that is there from the daemon's start, small on
// purpose (everything else loads on first use, feature.ts): it puts presses
// and comments in the outbox for whoever makes them (the local API's
// handlers, the input device), follows them to their end, and reports.
//
// - The status document's `logging` section: `pending` (presses and comments
//   not yet sent or given up), `sent` and `failed` since the daemon started.
//   Shown from the start when the profile has inputs, else once a press or a
//   comment was made or found in the queue.
// - GET /v1/events' `press` and `comment` lines: `queued` (or `held`, a
//   comment whose clip has no asset yet) when made, then `sent` or `failed`
//   with the reason, whichever way the item ended (the worker's verdict, or
//   the dispatcher giving up after its attempts), so a camera's UI can light
//   the button's LED once the service has the press.
import { profileHasInputs } from '../config/types.js';
import type { FeatureContext } from '../core/feature.js';
import type { DaemonUnit } from '../core/unit.js';
import type { StatusSections } from '../core/status-document.js';
import type { OutboxItem } from '../outbox/types.js';

export const PRESS_KIND = 'press';
export const COMMENT_KIND = 'comment';
export const LOGGING_KINDS = [PRESS_KIND, COMMENT_KIND] as const;

export { loggingSection, type LoggingSection } from './section.js';

export type PressState = 'queued' | 'sent' | 'failed';
export type CommentState = 'held' | 'queued' | 'sent' | 'failed';

/** A `press` line of GET /v1/events. */
export interface PressLine {
  id: string;
  channel: string;
  index: number;
  state: PressState;
  /** The timecode it carries, when it has one. */
  timecode?: string;
  /** Sent: the seconds it waited (the trigger call's offset). */
  offset?: number;
  /** Failed: why. */
  reason?: string;
}

/** A `comment` line of GET /v1/events. */
export interface CommentLine {
  id: string;
  path: string;
  state: CommentState;
  reason?: string;
}

declare module '../core/event-lines.js' {
  interface EventLines {
    press: PressLine;
    comment: CommentLine;
  }
}
declare module '../core/feature.js' {
  interface FeatureServices {
    logging: LoggingHost;
  }
}

/** What the host needs of an item's payload for its lines (press.ts and comment.ts write more). */
interface Said {
  channel?: string;
  index?: number;
  path?: string;
  start?: { smpte_timecode?: string };
}

export class LoggingHost implements DaemonUnit {
  readonly name = 'logging';
  /** The ids of presses and comments put or found pending, not yet seen ended. */
  private readonly open = new Map<string, { kind: string; said: Said }>();
  private sent = 0;
  private failed = 0;
  private active: boolean;
  private running = false;

  constructor(private readonly ctx: FeatureContext) {
    this.active = profileHasInputs(ctx.profile);
  }

  start(): void {
    this.running = true;
    this.ctx.bus.on('outboxSettled', this, () => this.settled());
    // What a previous run left queued is followed too (and loads the workers: outbox/lazy-workers.ts).
    void this.ctx.outbox.ready().then((ok) => {
      if (!ok || !this.running) return;
      for (const kind of LOGGING_KINDS) for (const i of this.ctx.outbox.pending(kind)) this.follow(i);
    });
  }

  async stop(): Promise<void> {
    this.running = false;
    this.ctx.bus.removeListeners(this);
    return Promise.resolve();
  }

  report(): Partial<StatusSections> {
    if (!this.active) return {};
    // Pending in memory: an item just sent is counted sent at once, never both pending and sent until its end reaches flash.
    const pending = LOGGING_KINDS.reduce((n, k) => n + this.ctx.outbox.pending(k).length, 0);
    return { logging: { pending, sent: this.sent, failed: this.failed } };
  }

  /** Puts a press or a comment in the outbox; resolves once it is on flash, with the item (its line said). */
  async put(kind: (typeof LOGGING_KINDS)[number], payload: unknown, priority: number, state: PressState | CommentState = 'queued'): Promise<OutboxItem> {
    const item = await this.ctx.outbox.put(kind, payload, { priority });
    if (item.state === 'dropped') throw new Error(`the queue dropped it at once (${item.reason ?? item.state}): it is at its cap`);
    this.follow(item);
    this.say(item, state);
    // The dispatcher may have sent it already, while its record waited for the group commit.
    if (item.state !== 'pending') this.end(item);
    this.ctx.bus.emit('statusChanged', {});
    return item;
  }

  private follow(item: OutboxItem): void {
    this.active = true;
    this.open.set(item.id, { kind: item.kind, said: (item.payload ?? {}) as Said });
  }

  /** An attempt ended somewhere in the queue: the presses and comments that are no longer pending are over. */
  private settled(): void {
    if (this.open.size === 0) return;
    const still = new Set(LOGGING_KINDS.flatMap((k) => this.ctx.outbox.pending(k).map((i) => i.id)));
    const over = [...this.open.keys()].filter((id) => !still.has(id));
    if (over.length === 0) return;
    // A sent press is not idempotent at the service: its end goes to flash now, not with the next group
    // commit up to half a second later, so a power cut after the service took it sends it again only in
    // the moment between the answer and this write.
    this.ctx.outbox.flush().catch((err: unknown) => this.ctx.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'cannot write the end of a press or comment to flash yet; the queue keeps trying'));
    const items = new Map(this.ctx.outbox.items().map((i) => [i.id, i]));
    for (const id of over) {
      const item = items.get(id);
      if (item === undefined) this.open.delete(id);
      else this.end(item);
    }
    this.ctx.bus.emit('statusChanged', {});
  }

  /** An item followed is over: counted and said, once. */
  private end(item: OutboxItem): void {
    if (!this.open.delete(item.id)) return;
    if (item.state === 'done') this.sent++;
    else this.failed++;
    this.say(item, item.state === 'done' ? 'sent' : 'failed');
  }

  private say(item: OutboxItem, state: PressState | CommentState): void {
    const said = (item.payload ?? {}) as Said;
    const reason = state === 'failed' ? (item.reason ?? item.state) : undefined;
    if (item.kind === PRESS_KIND) {
      const offset = state === 'sent' ? /offset (\d+) s/.exec(item.reason ?? '')?.[1] : undefined;
      this.ctx.lines.publish('press', {
        id: item.id,
        channel: said.channel ?? '',
        index: said.index ?? -1,
        state: state === 'held' ? 'queued' : state,
        ...(said.start?.smpte_timecode !== undefined && { timecode: said.start.smpte_timecode }),
        ...(offset !== undefined && { offset: Number(offset) }),
        ...(reason !== undefined && { reason }),
      });
    } else {
      this.ctx.lines.publish('comment', { id: item.id, path: said.path ?? '', state, ...(reason !== undefined && { reason }) });
    }
  }
}
