// Media uploads in the daemon: finished clips in the media dir (from the
// watcher) and files handed over by `c2c-agent upload` (request files in
// the queue's incoming/ folder) become `upload` items in the outbox, unless
// the index says they went already or one is queued for the same file. A
// file the worker found changed while it uploaded comes back the same way,
// marked to wait: it is queued (a new item, a new asset) once it has held
// still for the settle time. With real-time uploads on, a clip the watcher
// sees still being written becomes a `realtime-upload` item (one per
// recording: its inode and finished name), and the finished file it turns
// into is not queued again; nor is that of a recording cancelled or refused
// by the paused service, which the index remembers (its queue item does not
// last).
//
// This file is the queueing and the unit that runs it, one line of work
// (work-line.ts) for everything that may queue; each other idea is a module
// of its own: the finds held back while autoUpload is off (held-finds.ts),
// uploads queued, cancelled and reprioritised by hand (by-hand.ts), the
// incoming/ folder (incoming.ts), the rate (rate-meter.ts), the section's
// figures (upload-figures.ts), and what blocks uploads (upload-blocks.ts).
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { uploadProgress } from './upload-summary.js';
import type { DaemonUnit } from '../core/unit.js';
import type { EventBus } from '../core/event-bus.js';
import type { StatusSections } from '../core/status-document.js';
import type { UploadBlock } from './section.js';
import type { OutboxItem, PutOptions } from '../outbox/types.js';
import { UPLOAD_KIND, sameUpload, type FileIdentity, type UploadPayload } from './upload-item.js';
import type { LastParts } from './last-part.js';
import type { SkippedView } from './media-watcher.js';
import { EndedRecordings, bornMs } from './ended-recordings.js';
import { REALTIME_KIND, type RealtimePayload } from './realtime-item.js';
import type { RecordingView } from './realtime-worker.js';
import type { UploadRoots } from './upload-paths.js';
import type { RecordingIdentity } from './uploaded-index.js';
import { ByHand, type CancelResult, type QueuedByHand } from './by-hand.js';
import { HeldFinds } from './held-finds.js';
import { IncomingRequests } from './incoming.js';
import { RateMeter } from './rate-meter.js';
import { filesLeft, uploadFigures } from './upload-figures.js';
import type { WorkLine } from './work-line.js';

export type { CancelResult, QueuedByHand };

export interface UploadsUnitDeps {
  /** Absent without a media dir: only `c2c-agent upload` feeds the queue then. */
  watcher?: { start(): void; stop(): void; skipped?(): SkippedView; missingDir?(): string | undefined };
  /** The upload window, when one is configured. */
  window?: { start(): Promise<void>; stop(): void };
  /** uploaded-index.ts: files sent, cancelled or refused, and recordings cancelled or refused before they were finished. */
  index: {
    load(): Promise<void>;
    has(f: FileIdentity): boolean;
    add(f: FileIdentity): Promise<void>;
    hasRecording(r: RecordingIdentity): boolean;
    addRecording(r: RecordingIdentity): Promise<void>;
    recordingFinished(r: RecordingIdentity, f: FileIdentity): Promise<void>;
  };
  outbox: {
    ready(): Promise<boolean>;
    put(kind: string, payload: unknown, opts?: PutOptions): Promise<OutboxItem>;
    pending(kind?: string): OutboxItem[];
    items(): OutboxItem[];
    cancel(id: string, why: string): Promise<boolean>;
    setUrgent(id: string, urgent: boolean): Promise<boolean>;
  };
  /** The preference autoUpload (prefs/prefs-store.ts): off, the media watcher's finds are held back until it is on again. */
  autoUpload?: () => boolean;
  queueDir: string;
  /**
   * The media dir and the upload roots (the local API's, upload-paths.ts): a
   * file handed back after a change is queued again only if it still passes
   * their checks, so a clip swapped for a link out of them while it settles
   * (to credentials.json) is not uploaded. Absent: not checked (unit tests).
   */
  roots?: UploadRoots;
  /** Agent ms a file handed back after a change must hold still before it is queued again (the mediaSettleSeconds setting). */
  settleMs: number;
  /** The presigned URL files: those no pending upload refers to are removed at start. */
  urls?: { sweep(keep: Set<string>): Promise<number> };
  clock: Clock;
  logger?: Logger;
  /** Listened to while the unit runs: mediaFileReady (a clip to queue) and bytesSent (the rate); statusChanged is published on it. */
  bus: EventBus;
  /** The recordings uploading in real time now (the realtime worker's), for the status document. */
  recordings?: () => RecordingView[];
  /** Releases what uploads hold open (the storage client's sockets). */
  close?: () => void;
  /** Where a cancel meets the moment an upload's last bytes go (shared with the upload workers). */
  lastParts?: LastParts;
  /** What keeps clips from being taken or uploads from going now (upload-blocks.ts), for the status document and STATUS=. */
  blocked?: () => UploadBlock[];
}

export class UploadsUnit implements DaemonUnit {
  readonly name = 'uploads';
  private running = false;
  /** The index was read: without it nothing is queued (uploads are off until restart, as start() says). */
  private indexRead = false;
  private work: Promise<void> = Promise.resolve();
  private indexLoaded: Promise<void> = Promise.resolve();
  private readonly line: WorkLine = {
    then: (step) => {
      // A step that throws all the same is a bug: said once, and the line goes on (a rejected line would skip
      // every later step and leave the rejection unhandled).
      this.work = this.work.then(step).catch((err: unknown) => this.d.logger?.error({ err: String(err) }, 'an upload step failed (a bug); the uploads go on'));
    },
    run: <T>(step: () => Promise<T>): Promise<T> => {
      const run = this.work.then(step);
      this.work = run.then(
        () => undefined,
        () => undefined,
      );
      return run;
    },
  };
  /** Which recording a file is, in the queue or the index (ended-recordings.ts). */
  private readonly recordings: EndedRecordings;
  private readonly held: HeldFinds;
  private readonly byHand: ByHand;
  private readonly incoming: IncomingRequests;
  private readonly rate: RateMeter;

  constructor(private readonly d: UploadsUnitDeps) {
    this.recordings = new EndedRecordings({ index: d.index, items: () => d.outbox.items() });
    this.held = new HeldFinds(d.logger);
    this.byHand = new ByHand({ ...d, recordings: this.recordings, held: this.held, line: this.line, indexRead: () => this.indexRead });
    this.incoming = new IncomingRequests({ queueDir: d.queueDir, settleMs: d.settleMs, ...(d.roots && { roots: d.roots }), clock: d.clock, ...(d.logger && { logger: d.logger }), line: this.line, queue: (p) => this.queue(p) });
    this.rate = new RateMeter(d.clock);
  }

  start(): void {
    this.running = true;
    this.d.bus.on('mediaFileReady', this, ({ file }) => this.fileReady(file));
    this.d.bus.on('mediaFileGrowing', this, ({ file }) => this.fileGrowing(file));
    this.d.bus.on('bytesSent', this, ({ bytes }) => this.bytesSent(bytes));
    this.d.bus.on('prefsChanged', this, ({ prefs }) => {
      if (prefs.autoUpload) this.releaseHeld();
    });
    this.work = this.indexLoaded = this.d.index.load().then(
      () => {
        this.indexRead = true;
        if (!this.running) return;
        void this.sweepUrls();
        void this.d.window?.start().catch((err: unknown) => this.d.logger?.error({ err: String(err) }, 'cannot start the upload window; uploads run at any time'));
        this.d.watcher?.start();
        this.incoming.start();
      },
      (err: unknown) => this.d.logger?.error({ err: String(err) }, 'cannot read the index of uploaded files; uploads are off until restart'),
    );
  }

  /** Resolves once start() has read the index (whatever came of it): the workers use it from then on. */
  loaded(): Promise<void> {
    return this.indexLoaded;
  }

  async stop(): Promise<void> {
    this.running = false;
    this.d.bus.removeListeners(this);
    const incomingStopped = this.incoming.stop();
    this.d.watcher?.stop();
    this.d.window?.stop();
    await Promise.all([this.work, incomingStopped]);
    this.d.close?.();
  }

  /** A file in the media dir is ready: queued, or held back while autoUpload is off. */
  fileReady(p: UploadPayload): void {
    if (this.d.autoUpload?.() === false) return this.held.hold(p);
    this.line.then(() => this.queue(p));
  }

  /** A clip still being written (real-time uploads on). */
  fileGrowing(p: RealtimePayload): void {
    // autoUpload off: a recording is taken once it is on again (as a finished file, held meanwhile).
    if (this.d.autoUpload?.() === false) return;
    this.line.then(() => this.queueRecording(p));
  }

  /** autoUpload is on again: what the watcher found meanwhile is queued now, oldest first. */
  private releaseHeld(): void {
    for (const p of this.held.release()) this.line.then(() => this.queue(p));
  }

  /** Media-dir finds held back (autoUpload off). */
  get heldCount(): number {
    return this.held.count;
  }

  /** Files asked for through the local API (by-hand.ts), in line with the watcher's queueing. */
  queueByHand(files: UploadPayload[], urgent: boolean): Promise<QueuedByHand[]> {
    return this.byHand.queueByHand(files, urgent);
  }

  /** Cancels an upload (by-hand.ts). */
  cancel(id: string): Promise<CancelResult> {
    return this.byHand.cancel(id);
  }

  /** Cancels every upload not yet done; the ids cancelled. */
  cancelAll(): Promise<string[]> {
    return this.byHand.cancelAll();
  }

  /** Raises (high) or lowers an upload's place in the queue. */
  setPriority(id: string, high: boolean): Promise<'ok' | 'not-found' | 'ended'> {
    return this.byHand.setPriority(id, high);
  }

  /** Bytes that just left, for the rate. */
  bytesSent(n: number): void {
    this.rate.add(n);
    this.d.bus.emit('statusChanged', {});
  }

  report(): Pick<Partial<StatusSections>, 'uploads'> {
    return { uploads: this.figures() };
  }

  statusText(): string | undefined {
    return uploadProgress(this.figures());
  }

  /**
   * Bytes a second sent to storage over the last RATE_WINDOW_MS (the network
   * section shows it too); 0 once nothing is left to send. The status
   * document is written only when something changes, so the rate of the
   * last 30 s of an upload, written as it ended, would otherwise be read as
   * the rate of an idle agent until the next change (a 3 MB clip: 100000).
   */
  bytesPerSecond(): number {
    return filesLeft(this.d) === 0 ? 0 : this.rate.perSecond();
  }

  private figures(): ReturnType<typeof uploadFigures> {
    return uploadFigures(this.d, this.bytesPerSecond());
  }

  private async queue(p: UploadPayload): Promise<void> {
    if (!this.indexRead || this.d.index.has(p)) return;
    const recording = { ino: p.ino, dev: p.dev, finalPath: p.path };
    // The finished file of a recording cancelled or refused by the paused service: never queued, and known
    // from now on by its own identity (one write), as a cancelled or refused whole file is.
    if (await this.recordings.inIndex(recording, p.path)) {
      await this.d.index.recordingFinished(recording, p).catch((err: unknown) => this.d.logger?.warn({ name: p.name, err: String(err) }, 'cannot record a cancelled recording in the index'));
      return;
    }
    // Before the outbox is replayed, pending() does not yet show what a previous run queued.
    if (!(await this.d.outbox.ready())) return;
    if (this.d.outbox.pending(UPLOAD_KIND).some((i) => sameUpload(i.payload as UploadPayload, p))) return;
    // The finished file of a recording uploading in real time (that upload finishes it), or of one cancelled or
    // refused that the index did not record (its write failed, or an older agent ended it).
    const birthMs = this.recordings.taken(recording) ? await bornMs(p.path) : 0;
    if (this.recordings.taken(recording, undefined, birthMs)) {
      if (this.recordings.endedInQueue(recording, birthMs)) {
        await this.d.index.add(p).catch((err: unknown) => this.d.logger?.warn({ name: p.name, err: String(err) }, 'cannot record a cancelled recording in the index'));
      }
      return;
    }
    try {
      await this.d.outbox.put(UPLOAD_KIND, p);
      this.d.logger?.info({ name: p.name, bytes: p.size, channel: p.channelKey }, 'upload queued');
      this.d.bus.emit('statusChanged', {});
    } catch (err) {
      this.d.logger?.warn({ err: String(err), name: p.name }, 'cannot queue an upload');
    }
  }

  private async queueRecording(p: RealtimePayload): Promise<void> {
    // Cancelled or refused before: seen again (after a restart, or once the queue reclaimed its item), it is not started again.
    if (!this.indexRead || (await this.recordings.inIndex(p, p.path))) return;
    if (!(await this.d.outbox.ready())) return;
    const birthMs = await bornMs(p.path);
    if (this.recordings.taken(p, undefined, birthMs)) return;
    try {
      await this.d.outbox.put(REALTIME_KIND, birthMs > 0 ? { ...p, birthMs } : p);
      this.d.logger?.info({ name: p.name, path: p.path, channel: p.channelKey }, 'real-time upload queued: the clip is still being written');
      this.d.bus.emit('statusChanged', {});
    } catch (err) {
      this.d.logger?.warn({ err: String(err), name: p.name }, 'cannot queue a real-time upload');
    }
  }

  private async sweepUrls(): Promise<void> {
    if (!this.d.urls || !(await this.d.outbox.ready())) return;
    const keep = new Set(this.d.outbox.pending(UPLOAD_KIND).flatMap((i) => ((i.progress as { assetId?: string } | null)?.assetId ? [(i.progress as { assetId: string }).assetId] : [])));
    const removed = await this.d.urls.sweep(keep);
    if (removed > 0) this.d.logger?.info({ removed }, 'removed the URL files of uploads that no longer run');
  }
}
