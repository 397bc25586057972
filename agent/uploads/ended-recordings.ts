// Which real-time item, or which entry of the upload index, stands for a file:
// a recording uploading in real time, or one cancelled or refused by the
// paused service (never offered again), told apart from a later take that the
// camera gave the same freed inode and name by what is on disk: its size and
// birth time (realtime-item.ts recordingOnDisk, uploaded-index.ts
// RecordingIdentity). The uploads unit asks; nothing here writes but `end`.
import path from 'node:path';
import { CANCELLED, type OutboxItem } from '../outbox/types.js';
import { finishedName, isRecordingName } from './media-watcher.js';
import { REALTIME_KIND, recordingOnDisk, sameRecording, type RealtimePayload } from './realtime-item.js';
import { PAUSED_REFUSED, type UploadPayload } from './upload-item.js';
import type { RecordingIdentity } from './uploaded-index.js';

export interface EndedRecordingsDeps {
  index: { hasRecording(r: RecordingIdentity): boolean; addRecording(r: RecordingIdentity): Promise<void> };
  /** The queue's items now (outbox.items()). */
  items: () => OutboxItem[];
}

type Recording = Pick<RealtimePayload, 'ino' | 'dev' | 'finalPath'>;

export class EndedRecordings {
  constructor(private readonly d: EndedRecordingsDeps) {}

  /**
   * A real-time item stands for this recording: one uploading it, or one
   * cancelled or refused by the paused service (never offered again while the
   * queue remembers it). One that ended otherwise (the file shrank, it outgrew
   * the parts) handed the file back to go whole, which must not be stopped here.
   * `birthMs`: the file's birth time where known; without it (0), an ended
   * recording stands for any file under its inode and name.
   */
  taken(p: Recording, only?: OutboxItem, birthMs = 0): boolean {
    return (only === undefined ? this.d.items() : [only]).some(
      (i) =>
        i.kind === REALTIME_KIND &&
        sameRecording(i.payload as RealtimePayload, p) &&
        (i.state === 'pending' || (endedForGood(i) && sameBirth(i, birthMs))),
    );
  }

  /** A cancelled or refused real-time item (not one uploading) stands for the recording born at `birthMs`. */
  endedInQueue(p: Recording, birthMs: number): boolean {
    return this.d.items().some((i) => i.kind === REALTIME_KIND && endedForGood(i) && sameRecording(i.payload as RealtimePayload, p) && sameBirth(i, birthMs));
  }

  /**
   * The real-time item standing for a file asked for by hand, by its finished
   * name or its working name (`.part`), the same inode: while it records or
   * finishes, or cancelled or refused (taken's rule). Without this, a
   * clip asked for just after its rename went twice: whole, and in real time.
   */
  async itemFor(p: UploadPayload): Promise<OutboxItem | undefined> {
    const find = (birthMs?: number): OutboxItem | undefined =>
      this.d.items().find((i) => {
        if (i.kind !== REALTIME_KIND) return false;
        const r = i.payload as RealtimePayload;
        // Asked for by its working name, it is compared under the recording's finished name.
        return this.taken({ ino: p.ino, dev: p.dev, finalPath: p.path === r.path ? r.finalPath : p.path }, i, birthMs);
      });
    // The file's birth time is looked up only when an item could stand for it.
    return find() === undefined ? undefined : find(await bornMs(p.path));
  }

  /** Kept in the index as ended for good, with what is on disk now (its size and birth time tell a later take under the same inode and name from it). */
  async end(p: RealtimePayload): Promise<void> {
    await this.d.index.addRecording({ ino: p.ino, finalPath: p.finalPath, ...(await recordingOnDisk(p)) });
  }

  /**
   * The index keeps this file from being sent: the recording ended for good under this inode and finished
   * name, and not another take that reused both (checked against the file's size and birth time).
   */
  async inIndex(r: { ino: number; finalPath: string }, at: string): Promise<boolean> {
    if (!this.d.index.hasRecording(r)) return false;
    return this.d.index.hasRecording({ ...r, ...(await recordingOnDisk({ path: at, finalPath: at })) });
  }

  /** A file asked for by hand is a recording the index keeps from being sent (by its finished name or its working name). */
  async askedForInIndex(p: UploadPayload): Promise<boolean> {
    if (await this.inIndex({ ino: p.ino, finalPath: p.path }, p.path)) return true;
    return isRecordingName(path.basename(p.path)) && (await this.inIndex({ ino: p.ino, finalPath: finishedName(p.path) }, p.path));
  }
}

/** The birth time of the file at `at` (0 where the file system keeps none, or it is gone). */
export async function bornMs(at: string): Promise<number> {
  return (await recordingOnDisk({ path: at, finalPath: at })).birthMs ?? 0;
}

/** An ended recording's item can stand for the file born at `birthMs`: unless both birth times are known and differ (another take under the freed inode and the same name). */
function sameBirth(i: OutboxItem, birthMs: number): boolean {
  const was = (i.payload as RealtimePayload).birthMs ?? 0;
  return !(was > 0 && birthMs > 0 && was !== birthMs);
}

/** Cancelled, or refused by the paused service: never retried, never queued again. */
function endedForGood(i: OutboxItem): boolean {
  return i.state === 'dead' && (i.reason?.startsWith(CANCELLED) === true || i.reason?.startsWith(PAUSED_REFUSED) === true);
}
