// What keeps this camera from uploading, so that `status`, the STATUS= line
// and the status document never hide it (docs/troubleshooting.md, "Nothing
// is uploaded"): no media dir (clips are not taken by themselves), auto-upload
// off (and how many clips found wait for it), the upload window closed
// (until its next opening), and storage or the service refusing every
// attempt (since when, and the last reason: the outbox dispatcher's row of
// failures, outbox/dispatcher.ts). Each is said once in the log, as a
// warning, when it begins; never again while it lasts, so a healthy
// heartbeat logs nothing. The list itself is made when asked (the uploads
// section, uploads-unit.ts), from the facts as they are then.
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { formatDuration, quotePath } from '../lib/text.js';
import type { EventBus } from '../core/event-bus.js';
import type { DaemonUnit } from '../core/unit.js';
import type { KindFailing } from '../outbox/dispatcher.js';
import type { UploadBlock, UploadBlockKind } from './section.js';
import { UPLOAD_KIND } from './upload-item.js';
import { REALTIME_KIND } from './realtime-item.js';
import { isoTime } from '../lib/iso-time.js';

export interface UploadBlocksDeps {
  /** The mediaDir setting; undefined: none set. */
  mediaDir: string | undefined;
  /** The preference autoUpload (prefs/prefs-store.ts). */
  autoUpload: () => boolean;
  /** Clips the media watcher found and the uploads unit holds back while autoUpload is off. */
  held?: () => number;
  /** The upload window, when one is configured (upload-window.ts). */
  window?: { closedNow(): boolean; nextOpening(): number | undefined };
  /** The dispatcher's kinds whose attempts keep failing (outbox/dispatcher.ts view().failing). */
  failing: () => Record<string, KindFailing> | undefined;
  clock: Clock;
  bus: EventBus;
  logger?: Logger;
}

const UPLOAD_KINDS = [UPLOAD_KIND, REALTIME_KIND];

export class UploadBlocks implements DaemonUnit {
  readonly name = 'upload-blocks';
  /** The kinds said in the log and still in effect: said again only once one ended and began anew. */
  private said = new Set<UploadBlockKind>();
  /** What the last look found (kinds and clips waiting), to tell the status publisher when it changes. */
  private seen = '';

  constructor(private readonly d: UploadBlocksDeps) {}

  start(): void {
    // Whatever may start or end one: a preference, an attempt's outcome, the window, the queue's figures, a clip held back.
    for (const e of ['prefsChanged', 'outboxSettled', 'uploadWindowOpened', 'statusChanged', 'mediaFileReady'] as const) this.d.bus.on(e, this, () => this.look());
    this.look();
  }

  stop(): Promise<void> {
    this.d.bus.removeListeners(this);
    return Promise.resolve();
  }

  /** The window closes with the time, not with an event: looked at with each snapshot too (nothing is written). */
  onSnapshot(): void {
    this.look();
  }

  /** What keeps uploads from going now, in the order a person should look at them. */
  current(): UploadBlock[] {
    const out: UploadBlock[] = [];
    const { d } = this;
    if (d.mediaDir === undefined) out.push({ kind: 'no-media-dir' });
    if (!d.autoUpload()) {
      const waiting = d.mediaDir === undefined ? undefined : d.held?.();
      out.push({ kind: 'auto-upload-off', ...(waiting !== undefined && { waiting }) });
    }
    if (d.window?.closedNow() === true) {
      const next = d.window.nextOpening();
      out.push({ kind: 'window-closed', ...(next !== undefined && { until: this.momentAtWall(next) }) });
    }
    const refused = this.refusal();
    if (refused !== undefined) out.push(refused);
    return out;
  }

  /** The upload kinds' row of failed attempts: the earliest, with the latest error. */
  private refusal(): UploadBlock | undefined {
    const failing = this.d.failing() ?? {};
    const rows = UPLOAD_KINDS.flatMap((k) => failing[k] ?? []);
    if (rows.length === 0) return undefined;
    const first = rows.reduce((a, b) => (b.since.monotonic < a.since.monotonic ? b : a));
    const attempts = rows.reduce((n, r) => n + r.attempts, 0);
    return { kind: 'refused', since: first.since, attempts, reason: rows.at(-1)!.lastError };
  }

  /** A wall time ahead as a Moment: its agent-monotonic time reckoned from now. */
  private momentAtWall(wallMs: number): { at: string; monotonic: number } {
    const { clock } = this.d;
    return { at: isoTime(wallMs), monotonic: clock.now() + (wallMs - clock.wallNow()) * clock.scale };
  }

  /**
   * Logs each block that began since the last look, once; forgets those
   * that ended. When what it found changed (a block began or ended, a clip
   * more waits), the status file and STATUS= are told (statusChanged): the
   * look after that finds nothing new, so it stops there.
   */
  private look(): void {
    const now = this.current();
    const kinds = new Set(now.map((b) => b.kind));
    for (const b of now) {
      if (this.said.has(b.kind)) continue;
      this.d.logger?.warn({ block: b.kind, ...blockFields(b) }, blockLogLine(b, this.d.mediaDir, this.d.clock.wallNow()));
    }
    this.said = kinds;
    const seen = now.map((b) => `${b.kind}:${b.waiting ?? ''}`).join(',');
    if (seen === this.seen) return;
    this.seen = seen;
    this.d.bus.emit('statusChanged', {});
  }
}

function blockFields(b: UploadBlock): Record<string, unknown> {
  return { ...(b.waiting !== undefined && { waiting: b.waiting }), ...(b.until && { until: b.until.at }), ...(b.since && { since: b.since.at }), ...(b.reason !== undefined && { reason: b.reason }) };
}

/** The log's line when a block begins. */
function blockLogLine(b: UploadBlock, mediaDir: string | undefined, wallNow: number): string {
  switch (b.kind) {
    case 'no-media-dir':
      return 'no media dir is set (mediaDir): clips are not uploaded by themselves, only files queued with c2c-agent upload';
    case 'auto-upload-off':
      return `autoUpload is off: clips found in ${mediaDir === undefined ? 'the media dir' : quotePath(mediaDir)} are not queued until it is on again (c2c-agent prefs autoUpload=on)`;
    case 'window-closed':
      return `the upload window is closed${b.until ? ` until ${b.until.at} (in ${formatDuration(Math.max(0, Date.parse(b.until.at) - wallNow))})` : ''}: uploads wait for it`;
    case 'refused':
      return `uploads are not going: ${b.attempts ?? 0} attempts in a row failed since ${b.since?.at ?? '?'}; last: ${b.reason ?? '?'}`;
  }
}
