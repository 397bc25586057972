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
// last). The unit also keeps the figures `status` shows: files and bytes
// left, rate, the media-dir entries skipped, and what keeps uploads from
// going (upload-blocks.ts).
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Clock, Timer } from '../lib/clock.js';
import { DirWatcher } from '../lib/dir-watcher.js';
import { AgentError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { CANCEL_WAIT_MS } from '../lib/timing.js';
import { uploadProgress } from './upload-summary.js';
import type { DaemonUnit } from '../core/unit.js';
import type { EventBus } from '../core/event-bus.js';
import type { StatusSections } from '../core/status-document.js';
import type { UploadBlock, UploadsSection } from './section.js';
import { CANCELLED, type OutboxItem, type PutOptions } from '../outbox/types.js';
import { readUploadRequest, INCOMING_DIR } from './upload-request.js';
import { COMPLETED_DESPITE_CANCEL, UPLOAD_KIND, bytesDone, isUploadKind, sameUpload, type FileIdentity, type UploadPayload } from './upload-item.js';
import type { LastParts } from './last-part.js';
import type { SkippedView } from './media-watcher.js';
import { EndedRecordings, bornMs } from './ended-recordings.js';
import { REALTIME_KIND, realtimeBytesDone, realtimeBytesTotal, type RealtimePayload } from './realtime-item.js';
import type { RecordingView } from './realtime-worker.js';
import { resolveUploadPath, type UploadRoots } from './upload-paths.js';
import type { RecordingIdentity } from './uploaded-index.js';

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

/**
 * incoming/ is watched, so a request is taken as soon as `upload` writes it;
 * this slow look (agent ms) only covers a file system whose watch misses
 * events. A fast poll would list a directory thousands of times an hour to
 * find nothing, and allocate for it.
 */
const INCOMING_POLL_MS = 60_000;
/** The rate shown is over this much agent time. */
const RATE_WINDOW_MS = 30_000;
/** A changed file is looked at no more often than this (agent ms), whatever the settle time: a zero would spin. */
const SETTLE_LOOK_MIN_MS = 1_000;

/** Media-dir finds held back while autoUpload is off, at most this many (a card holds days of clips; each is a few hundred bytes here). */
const HELD_MAX = 10_000;

/** One path asked for through the local API, and what became of it. */
export interface QueuedByHand {
  path: string;
  /** The upload's id; null for a file the index knows as sent (or cancelled) whose item the queue no longer holds. */
  id: string | null;
  duplicate: boolean;
}

/**
 * What a cancel came to. `completed-despite-cancel`: the upload's last part
 * was on its way and storage took it, so the service completed the asset;
 * `last-part-on-its-way`: storage had not answered that part within
 * CANCEL_WAIT_MS, and the upload ends completed-despite-cancel or cancelled
 * by that answer.
 */
export type CancelResult = 'cancelled' | 'not-found' | 'done' | 'ended' | typeof COMPLETED_DESPITE_CANCEL | 'last-part-on-its-way';

/** The same file as the contract counts it: path, size and modification time. */
const sameFile = (a: UploadPayload, b: UploadPayload): boolean => a.path === b.path && a.size === b.size && a.mtimeMs === b.mtimeMs;

/** A file handed back after a change: its (ino, size, mtime, ctime) at the last look. */
interface Settling {
  p: UploadPayload;
  sig?: string;
}

export class UploadsUnit implements DaemonUnit {
  readonly name = 'uploads';
  private incoming: DirWatcher | undefined;
  private running = false;
  private work: Promise<void> = Promise.resolve();
  private sent: Array<{ at: number; bytes: number }> = [];
  /** Files to queue once they hold still, by the request file that asked (removed once all are queued or gone). */
  private readonly settling = new Map<string, Settling[]>();
  private settleTimer: Timer | undefined;
  /** Media-dir finds held back while autoUpload is off, by path. */
  private readonly held = new Map<string, UploadPayload>();
  private heldFullSaid = false;

  /** Which recording a file is, in the queue or the index (ended-recordings.ts). */
  private readonly recordings: EndedRecordings;

  constructor(private readonly d: UploadsUnitDeps) {
    this.recordings = new EndedRecordings({ index: d.index, items: () => d.outbox.items() });
  }

  start(): void {
    this.running = true;
    this.d.bus.on('mediaFileReady', this, ({ file }) => this.fileReady(file));
    this.d.bus.on('mediaFileGrowing', this, ({ file }) => this.fileGrowing(file));
    this.d.bus.on('bytesSent', this, ({ bytes }) => this.bytesSent(bytes));
    this.d.bus.on('prefsChanged', this, ({ prefs }) => {
      if (prefs.autoUpload) this.releaseHeld();
    });
    this.work = this.d.index.load().then(
      () => {
        if (!this.running) return;
        void this.sweepUrls();
        void this.d.window?.start().catch((err: unknown) => this.d.logger?.error({ err: String(err) }, 'cannot start the upload window; uploads run at any time'));
        this.d.watcher?.start();
        this.watchIncoming();
      },
      (err: unknown) => this.d.logger?.error({ err: String(err) }, 'cannot read the index of uploaded files; uploads are off until restart'),
    );
  }

  async stop(): Promise<void> {
    this.running = false;
    this.d.bus.removeListeners(this);
    this.settleTimer?.cancel();
    this.settleTimer = undefined;
    this.incoming?.stop();
    this.d.watcher?.stop();
    this.d.window?.stop();
    await this.work;
    this.d.close?.();
  }

  /** A file in the media dir is ready: queued, or held back while autoUpload is off. */
  fileReady(p: UploadPayload): void {
    if (this.d.autoUpload?.() === false) return this.hold(p);
    this.work = this.work.then(() => this.queue(p));
  }

  /** A clip still being written (real-time uploads on). */
  fileGrowing(p: RealtimePayload): void {
    // autoUpload off: a recording is taken once it is on again (as a finished file, held meanwhile).
    if (this.d.autoUpload?.() === false) return;
    this.work = this.work.then(() => this.queueRecording(p));
  }

  private hold(p: UploadPayload): void {
    if (this.held.size >= HELD_MAX && !this.held.has(p.path)) {
      if (!this.heldFullSaid) this.d.logger?.warn({ held: this.held.size }, 'autoUpload is off and many clips wait; the newest are not remembered until it is on again (a restart finds them)');
      this.heldFullSaid = true;
      return;
    }
    this.held.set(p.path, p);
  }

  /** autoUpload is on again: what the watcher found meanwhile is queued now, oldest first. */
  private releaseHeld(): void {
    const files = [...this.held.values()].sort((a, b) => a.mtimeMs - b.mtimeMs);
    this.held.clear();
    this.heldFullSaid = false;
    for (const p of files) this.work = this.work.then(() => this.queue(p));
  }

  /** Media-dir finds held back (autoUpload off). */
  get heldCount(): number {
    return this.held.size;
  }

  /**
   * Files asked for through the local API (already checked by
   * upload-paths.ts), queued whatever autoUpload says. One file is one
   * upload: a file queued, sent, or cancelled before (same path, size and
   * modification time) gives back its id with duplicate true; `urgent`
   * raises a queued duplicate too. Runs in line with the watcher's queueing,
   * so the two never both queue one file.
   */
  queueByHand(files: UploadPayload[], urgent: boolean): Promise<QueuedByHand[]> {
    const run = this.work.then(async () => {
      if (!(await this.d.outbox.ready())) throw new AgentError('unavailable', 'the upload queue could not be opened (see the daemon\'s log); nothing was queued');
      const out: QueuedByHand[] = [];
      const batch: Array<{ p: UploadPayload; id: string | null }> = [];
      for (const p of files) {
        const again = batch.find((b) => sameFile(b.p, p));
        if (again !== undefined) {
          out.push({ path: p.path, id: again.id, duplicate: true });
          continue;
        }
        const existing = this.existing(p) ?? (await this.recordings.itemFor(p));
        if (existing !== undefined) {
          if (urgent && existing.state === 'pending' && existing.urgent !== true) await this.d.outbox.setUrgent(existing.id, true);
          out.push({ path: p.path, id: existing.id, duplicate: true });
        } else if (this.d.index.has(p) || (await this.recordings.askedForInIndex(p))) out.push({ path: p.path, id: null, duplicate: true });
        else {
          const item = await this.d.outbox.put(UPLOAD_KIND, p, urgent ? { urgent } : {});
          this.held.delete(p.path);
          this.d.logger?.info({ name: p.name, bytes: p.size, urgent }, 'upload queued through the local API');
          out.push({ path: p.path, id: item.id, duplicate: false });
        }
        batch.push({ p, id: out.at(-1)!.id });
      }
      this.d.bus.emit('statusChanged', {});
      return out;
    });
    this.work = run.then(() => undefined, () => undefined);
    return run;
  }

  /** The item that already stands for this file: waiting, sent, or cancelled (one that failed may be asked for again). */
  private existing(p: UploadPayload): OutboxItem | undefined {
    const mine = this.d.outbox.items().filter((i) => i.kind === UPLOAD_KIND && sameFile(i.payload as UploadPayload, p));
    return mine.find((i) => i.state === 'pending') ?? mine.find((i) => i.state === 'done' || (i.state === 'dead' && i.reason?.startsWith(CANCELLED) === true));
  }

  /**
   * Cancels an upload: never retried, its attempt in flight stopped, and the
   * file recorded in the index so the media watcher does not queue it again,
   * across restarts (the index is what outlives the queue's records). A
   * recording has no finished size or mtime yet: the index keeps it by inode
   * and finished name until its finished file is seen (queue()).
   *
   * Unless the last bytes of its last part are on their way already: no
   * abort takes them back (last-part.ts). Then storage's answer decides,
   * waited for up to CANCEL_WAIT_MS: taken, the upload is done and says
   * completed despite the cancel; refused, it is cancelled as above; not
   * known yet, the answer says so and the cancel is settled when it comes.
   */
  async cancel(id: string): Promise<CancelResult> {
    const item = this.d.outbox.items().find((i) => i.id === id && isUploadKind(i.kind));
    if (item === undefined) return 'not-found';
    if (item.state === 'done') return item.reason?.startsWith(COMPLETED_DESPITE_CANCEL) === true ? COMPLETED_DESPITE_CANCEL : 'done';
    if (item.state !== 'pending') return 'ended';
    // At once, before anything is awaited: from here on the worker sends no last bytes of this item.
    const onItsWay = this.d.lastParts?.stop(id);
    if (onItsWay === undefined) return this.cancelled(item);
    const deadline = this.d.clock.now() + CANCEL_WAIT_MS;
    const took = await this.within(onItsWay, CANCEL_WAIT_MS);
    if (took === false) return this.cancelled(item);
    if (took === undefined) {
      this.d.logger?.info({ id, name: (item.payload as UploadPayload).name }, 'cancel asked while the upload\'s last part is on its way; storage\'s answer decides');
      // A last part storage refused leaves the upload cancelled after all; one it took leaves it done, noted so by the worker.
      void onItsWay.then((t) => (t ? undefined : this.cancelled(item))).catch(() => undefined).finally(() => this.d.lastParts?.forget(id));
      return 'last-part-on-its-way';
    }
    await this.ended(id, Math.max(0, deadline - this.d.clock.now()));
    this.d.lastParts?.forget(id);
    this.d.logger?.info({ id, name: (item.payload as UploadPayload).name }, 'cancel came too late: the upload\'s last part was on its way and storage took it; the asset is complete');
    this.d.bus.emit('statusChanged', {});
    return COMPLETED_DESPITE_CANCEL;
  }

  /** Ends a pending item as cancelled and records its file (cancel()). */
  private async cancelled(item: OutboxItem): Promise<CancelResult> {
    const id = item.id;
    try {
      // Ended by its own worker meanwhile, as a cancel ends it (it stopped before its last part went): cancelled all the same.
      if (!(await this.d.outbox.cancel(id, 'through the local API')) && !this.endedCancelled(id)) return 'ended';
    } finally {
      this.d.lastParts?.forget(id);
    }
    const p = item.payload as UploadPayload;
    this.held.delete(p.path);
    const recorded = item.kind === UPLOAD_KIND ? this.d.index.add(p) : this.recordings.end(item.payload as RealtimePayload);
    await recorded.catch((err: unknown) => this.d.logger?.warn({ name: p.name, err: String(err) }, 'cannot record a cancelled upload in the index; the media watcher may offer it again after a restart'));
    this.d.logger?.info({ id, name: p.name }, 'upload cancelled');
    this.d.bus.emit('statusChanged', {});
    return 'cancelled';
  }

  private endedCancelled(id: string): boolean {
    const now = this.d.outbox.items().find((i) => i.id === id);
    return now?.state === 'dead' && now.reason?.startsWith(CANCELLED) === true;
  }

  /** `answer`'s value, or undefined once `ms` agent ms passed without one. */
  private within<T>(answer: Promise<T>, ms: number): Promise<T | undefined> {
    return new Promise((resolve) => {
      const timer = this.d.clock.setTimer(() => resolve(undefined), ms);
      answer.then(
        (v) => {
          timer.cancel();
          resolve(v);
        },
        () => {
          timer.cancel();
          resolve(undefined);
        },
      );
    });
  }

  /** Resolves once item `id` is no longer pending (the dispatcher recorded its attempt), or after `ms` agent ms. */
  private ended(id: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const owner = {};
      const done = (): void => {
        timer.cancel();
        this.d.bus.removeListeners(owner);
        resolve();
      };
      const look = (): void => {
        if (this.d.outbox.items().find((i) => i.id === id)?.state !== 'pending') done();
      };
      const timer = this.d.clock.setTimer(done, ms);
      this.d.bus.on('outboxSettled', owner, look);
      look();
    });
  }

  /** Cancels every upload not yet done; the ids cancelled. */
  async cancelAll(): Promise<string[]> {
    const out: string[] = [];
    for (const item of this.d.outbox.pending().filter((i) => isUploadKind(i.kind))) if ((await this.cancel(item.id)) === 'cancelled') out.push(item.id);
    return out;
  }

  /** Raises (high) or lowers an upload's place in the queue; false for an upload not waiting or running. */
  async setPriority(id: string, high: boolean): Promise<'ok' | 'not-found' | 'ended'> {
    const item = this.d.outbox.items().find((i) => i.id === id && isUploadKind(i.kind));
    if (item === undefined) return 'not-found';
    if (item.state !== 'pending' || !(await this.d.outbox.setUrgent(id, high))) return 'ended';
    this.d.bus.emit('statusChanged', {});
    return 'ok';
  }

  /** Bytes that just left, for the rate. */
  bytesSent(n: number): void {
    const now = this.d.clock.now();
    this.sent.push({ at: now, bytes: n });
    this.sent = this.sent.filter((s) => s.at > now - RATE_WINDOW_MS);
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
    if (this.filesLeft() === 0) return 0;
    const now = this.d.clock.now();
    const recent = this.sent.filter((s) => s.at > now - RATE_WINDOW_MS).reduce((n, s) => n + s.bytes, 0);
    return Math.round(recent / (RATE_WINDOW_MS / 1000));
  }

  private filesLeft(): number {
    return this.d.outbox.pending(UPLOAD_KIND).length + this.d.outbox.pending(REALTIME_KIND).length;
  }

  /** The figures `status` shows, for the status document and the STATUS= line alike. */
  private figures(): UploadsSection {
    const pending = this.d.outbox.pending(UPLOAD_KIND);
    const recording = this.d.outbox.pending(REALTIME_KIND);
    const left = pending.reduce((n, i) => n + leftOf(i), 0) + recording.reduce((n, i) => n + Math.max(0, realtimeBytesTotal(i) - realtimeBytesDone(i)), 0);
    const recordings = this.d.recordings?.();
    const skipped = this.d.watcher?.skipped?.();
    const mediaDirMissing = this.d.watcher?.missingDir?.();
    const blocked = this.d.blocked?.();
    return {
      files: pending.length + recording.length,
      bytesLeft: left,
      bytesPerSecond: this.bytesPerSecond(),
      ...(skipped !== undefined && { skipped }),
      ...(mediaDirMissing !== undefined && { mediaDirMissing }),
      ...(recordings !== undefined && recordings.length > 0 && { recording: recordings }),
      ...(blocked !== undefined && blocked.length > 0 && { blocked }),
    };
  }

  private async queue(p: UploadPayload): Promise<void> {
    if (this.d.index.has(p)) return;
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
    if (await this.recordings.inIndex(p, p.path)) return;
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

  /**
   * Watches incoming/ (created once, when missing) and looks at it: at once,
   * after a watch event, and every INCOMING_POLL_MS; without a watch the
   * slow poll alone takes requests.
   */
  private watchIncoming(): void {
    const dir = path.join(this.d.queueDir, INCOMING_DIR);
    const incoming = new DirWatcher({
      clock: this.d.clock,
      pollMs: INCOMING_POLL_MS,
      look: () => this.lookAtIncoming(incoming, dir),
      what: 'the upload requests folder',
      logger: this.d.logger,
    });
    this.incoming = incoming;
    void fs
      .mkdir(dir, { recursive: true, mode: 0o700 })
      .catch((err: unknown) => this.d.logger?.warn({ dir, err: String(err) }, 'cannot create the upload requests folder'))
      .then(() => {
        if (!this.running || this.incoming !== incoming) return;
        incoming.start();
        this.lookAtIncoming(incoming, dir);
      });
  }

  /** Watches incoming/ again (made anew, or its watch failed) and takes what is in it, one look at a time. */
  private lookAtIncoming(incoming: DirWatcher, dir: string): void {
    if (!this.running) return;
    incoming.setDirs([dir]);
    this.work = this.work.then(() => this.takeIncoming());
  }

  /**
   * Requests from `c2c-agent upload`: queued, then removed (a crash between
   * the two only queues a duplicate the check above drops). A request to
   * wait (a file that changed while it uploaded) stays until its files
   * held still and were queued.
   */
  private async takeIncoming(): Promise<void> {
    const dir = path.join(this.d.queueDir, INCOMING_DIR);
    let names: string[];
    try {
      names = (await fs.readdir(dir)).filter((n) => n.endsWith('.json')).sort();
    } catch {
      return;
    }
    let waiting = false;
    for (const name of names) {
      const file = path.join(dir, name);
      if (this.settling.has(file)) continue;
      const req = await readUploadRequest(file);
      if (req.kind === 'ok' && req.settle) {
        this.settling.set(file, req.files.map((p) => ({ p })));
        waiting = true;
        continue;
      }
      if (req.kind === 'ok') for (const p of req.files) await this.queue(p);
      else this.d.logger?.warn({ file, reason: req.reason }, 'ignoring an unreadable upload request');
      await fs.unlink(file).catch(() => undefined);
    }
    // The first look at a new one now: the file must then hold still for the settle time.
    if (waiting) await this.lookAtSettling();
  }

  /** Queues each waiting file that kept its (ino, size, mtime, ctime) since the last look; forgets one that is gone. */
  private async lookAtSettling(): Promise<void> {
    for (const [request, files] of this.settling) {
      for (const f of [...files]) {
        let st;
        try {
          st = await fs.stat(f.p.path);
        } catch (err) {
          this.d.logger?.info({ name: f.p.name, code: (err as NodeJS.ErrnoException).code }, 'a changed file is gone before it held still; not uploaded again');
          files.splice(files.indexOf(f), 1);
          continue;
        }
        if (!st.isFile()) {
          this.d.logger?.info({ name: f.p.name }, 'a changed file is no longer a regular file; not uploaded again');
          files.splice(files.indexOf(f), 1);
          continue;
        }
        const sig = `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
        if (f.sig !== sig) {
          f.sig = sig;
          continue;
        }
        files.splice(files.indexOf(f), 1);
        // stat() above followed links: the file queued is the one the roots' checks opened, without following a link out.
        const v = this.d.roots === undefined ? undefined : await resolveUploadPath(f.p.path, this.d.roots);
        if (v?.ok === false) {
          this.d.logger?.warn({ name: f.p.name, reason: v.reason }, 'a changed file no longer passes the checks on what is uploaded; not uploaded again');
          continue;
        }
        const id = v?.file ?? { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, dev: st.dev };
        await this.queue({ ...f.p, size: id.size, mtimeMs: id.mtimeMs, ino: id.ino, dev: id.dev });
      }
      if (files.length === 0) {
        this.settling.delete(request);
        await fs.unlink(request).catch(() => undefined);
      }
    }
    this.armSettle();
  }

  private armSettle(): void {
    if (!this.running || this.settling.size === 0 || this.settleTimer !== undefined) return;
    this.settleTimer = this.d.clock.setTimer(() => {
      this.settleTimer = undefined;
      this.work = this.work.then(() => this.lookAtSettling());
    }, Math.max(SETTLE_LOOK_MIN_MS, this.d.settleMs));
  }
}

function leftOf(item: OutboxItem): number {
  return (item.payload as UploadPayload).size - bytesDone(item);
}
