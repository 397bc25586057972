// Uploads asked for by hand (the local API: POST, DELETE and PATCH
// /v1/uploads): files queued whatever autoUpload says, one file one upload;
// a cancel that ends the item, stops its attempt and records the file in the
// index, unless its last part's bytes are on their way (last-part.ts); a
// priority raised or lowered. Queueing runs in the uploads unit's one line of
// work (work-line.ts), in line with the media watcher's finds.
import { AgentError } from '../lib/errors.js';
import { CANCEL_WAIT_MS } from '../lib/timing.js';
import { CANCELLED, type OutboxItem } from '../outbox/types.js';
import type { EndedRecordings } from './ended-recordings.js';
import type { HeldFinds } from './held-finds.js';
import type { RealtimePayload } from './realtime-item.js';
import { COMPLETED_DESPITE_CANCEL, UPLOAD_KIND, isUploadKind, type UploadPayload } from './upload-item.js';
import type { UploadsUnitDeps } from './uploads-unit.js';
import type { WorkLine } from './work-line.js';

export interface ByHandDeps extends Pick<UploadsUnitDeps, 'outbox' | 'index' | 'lastParts' | 'clock' | 'bus' | 'logger'> {
  recordings: EndedRecordings;
  held: HeldFinds;
  line: WorkLine;
  /** Whether the index of uploaded files was read at start (asked in line, after the read). */
  indexRead: () => boolean;
}

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

export class ByHand {
  constructor(private readonly d: ByHandDeps) {}

  /**
   * Files asked for through the local API (already checked by
   * upload-paths.ts), queued whatever autoUpload says. One file is one
   * upload: a file queued, sent, or cancelled before (same path, size and
   * modification time) gives back its id with duplicate true; `urgent`
   * raises a queued duplicate too. Runs in line with the watcher's queueing,
   * so the two never both queue one file.
   */
  queueByHand(files: UploadPayload[], urgent: boolean): Promise<QueuedByHand[]> {
    return this.d.line.run(async () => {
      if (!(await this.d.outbox.ready())) throw new AgentError('unavailable', 'the upload queue could not be opened (see the daemon\'s log); nothing was queued');
      if (files.length > 0 && !this.d.indexRead()) throw new AgentError('unavailable', 'the index of uploaded files could not be read (see the daemon\'s log): uploads are off until the daemon restarts; nothing was queued');
      const out: QueuedByHand[] = [];
      const batch: Array<{ p: UploadPayload; id: string | null }> = [];
      for (const p of files) {
        const again = batch.find((b) => sameFile(b.p, p));
        if (again !== undefined) {
          out.push({ path: p.path, id: again.id, duplicate: true });
          continue;
        }
        const existing = this.existing(p) ?? (await this.d.recordings.itemFor(p));
        if (existing !== undefined) {
          if (urgent && existing.state === 'pending' && existing.urgent !== true) await this.d.outbox.setUrgent(existing.id, true);
          out.push({ path: p.path, id: existing.id, duplicate: true });
        } else if (this.d.index.has(p) || (await this.d.recordings.askedForInIndex(p))) out.push({ path: p.path, id: null, duplicate: true });
        else {
          const item = await this.d.outbox.put(UPLOAD_KIND, p, urgent ? { urgent } : {});
          this.d.held.forget(p.path);
          this.d.logger?.info({ name: p.name, bytes: p.size, urgent }, 'upload queued through the local API');
          out.push({ path: p.path, id: item.id, duplicate: false });
        }
        batch.push({ p, id: out.at(-1)!.id });
      }
      this.d.bus.emit('statusChanged', {});
      return out;
    });
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
    this.d.held.forget(p.path);
    const recorded = item.kind === UPLOAD_KIND ? this.d.index.add(p) : this.d.recordings.end(item.payload as RealtimePayload);
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
}
