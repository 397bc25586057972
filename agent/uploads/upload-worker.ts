// One media upload, run from the outbox: create the asset, then PUT the file
// in even chunks to its presigned URLs (chunk = ceil(size / n), the last one
// to EOF), streamed from disk, two at a time. Each finished chunk is a
// progress record in the outbox, so a restart, a lost network or a power cut
// resumes at the first chunk not recorded, never from zero. An asset not
// finished within 24 h has expired and is created again.
//
// One upload sends one version of the file (version-check.ts): the file is
// opened, and checked (a regular file, one name, inside its root), before
// the asset is created, at every attempt; every byte of every chunk is read
// from that descriptor, never by the path again; its metadata is checked
// after every chunk and a sample of its bytes before the last bytes go. The
// service completes an asset when its last part arrives, so the last part's
// final buffer is held back until the checks pass: a file changed at any
// moment before that leaves the asset unfinished (the service drops it after
// 24 h; devices cannot delete assets), the item dead-lettered with what
// changed, and the file handed back to the uploads unit to go again, as a
// new asset, once it holds still. A cancel that comes once those last bytes are on their way
// cannot take them back (last-part.ts): the upload ends done, noted
// completed despite the cancel.
import { Readable } from 'node:stream';
import { randomInt } from 'node:crypto';
import type { AssetEndpoints } from '../api/assets.js';
import { SLICE_BUFFER_BYTES } from '../api/storage-body.js';
import type { StorageClient } from '../api/storage.js';
import type { Clock } from '../lib/clock.js';
import { AgentError } from '../lib/errors.js';
import { fsCode, fsError } from '../lib/fs-errors.js';
import type { Logger } from '../lib/logger.js';
import { quote, quotePath } from '../lib/text.js';
import type { Worker } from '../outbox/dispatcher.js';
import { classify, type Outcome } from '../outbox/outcome.js';
import { CANCELLED, type OutboxItem } from '../outbox/types.js';
import type { LastParts } from './last-part.js';
import type { UploadRoots } from './upload-paths.js';
import type { UploadUrls } from './upload-urls.js';
import { writeUploadRequest } from './upload-request.js';
import { finishUpload } from './finish-upload.js';
import { COMPLETED_DESPITE_CANCEL, PAUSED_REFUSED, UPLOAD_KIND, decodeParts, encodeParts, partBytes, type FileIdentity, type UploadPayload, type UploadProgress } from './upload-item.js';
import { NotRegular, NotTaken, PinnedFile, VersionChanged, nodeUploadFiles, readAt, xorInto, zeroDigest, type UploadFiles } from './version-check.js';

/** The service expires an upload that is not finished within a day of its creation. */
export const UPLOAD_LIFETIME_MS = 24 * 3600 * 1000;

/** Open errors that say this process is short of something for a moment, not that the file is bad. */
export const TEMPORARY_OPEN_ERRORS: ReadonlySet<string> = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY']);

export interface UploadWorkerDeps {
  assets: Pick<AssetEndpoints, 'create'>;
  storage: Pick<StorageClient, 'put'>;
  outbox: { progress(id: string, data: unknown): Promise<void>; flush(): Promise<void> };
  urls: Pick<UploadUrls, 'save' | 'load' | 'remove'>;
  clock: Clock;
  /** The service's clock now (local wall time corrected by the last Date header). */
  serverNow: () => number;
  /** The service's id of a profile channel, when the unit has one. */
  channelId: (key: string) => Promise<string | undefined>;
  index: { has(f: FileIdentity): boolean; add(f: FileIdentity): Promise<void> };
  deleteAfterUpload: boolean;
  /** The queue dir: a file that changed is handed back to the uploads unit there (incoming/, to go once it holds still). */
  queueDir?: string;
  chunksInFlight?: number;
  /** The upload window: uploads wait while it is closed (absent: always open). */
  windowOpen?: () => boolean;
  /** Bytes as they leave, for the status line's rate. */
  onBytes?: (n: number) => void;
  /** Replaces node:fs for opening and checking the file (tests). */
  files?: UploadFiles;
  /** The media dir and the upload roots: a file under one must lie inside it when it is opened (upload-paths.ts). Absent: not checked (unit tests). */
  roots?: UploadRoots;
  /** Where a cancel meets the moment the last bytes go (shared with the uploads unit). */
  lastParts?: LastParts;
  logger?: Logger;
}

/** A cancel came before the last bytes went: they did not, and the upload ends cancelled. */
export class CancelledFirst extends Error {
  constructor() {
    super('a cancel came before the last part went');
  }
}

/** The outcome of an attempt a cancel cut before its last bytes went: ended as the cancel ends it (never retried, no failure counted). */
export const cancelledFirst = (): Outcome => ({ result: 'dead', reason: `${CANCELLED}: through the local API, before its last part went` });

/** A done upload a cancel came too late for: its note says so (upload-item.ts, last-part.ts). */
export const completedDespiteCancel = (): Outcome => ({ result: 'done', note: `${COMPLETED_DESPITE_CANCEL}: a cancel came while its last part was on its way; storage took it and the service completed the asset` });

// The device number is left out for the reason the index leaves it out (a remounted card).
const sameFile = (a: FileIdentity, b: { ino: number; size: number; mtimeMs: number }): boolean => a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;

const dead = (reason: string): Outcome => ({ result: 'dead', reason });

/** A progress record this agent can go on from: its content check and the version it was sent from. */
const resumable = (prog: UploadProgress): prog is UploadProgress & { ctimeMs: number; check: { seed: number; sent: string } } =>
  typeof prog.ctimeMs === 'number' && Number.isSafeInteger(prog.check?.seed) && /^[0-9a-f]{16}$/.test(prog.check?.sent ?? '');

export class UploadWorker implements Worker {
  readonly kind = UPLOAD_KIND;

  constructor(private readonly d: UploadWorkerDeps) {}

  ready(): boolean {
    return this.d.windowOpen?.() ?? true;
  }

  async run(item: OutboxItem, signal: AbortSignal): Promise<Outcome> {
    const p = item.payload as UploadPayload;
    // Asked first: a finished upload whose done record a crash lost may have had its file deleted already.
    if (this.d.index.has(p)) return { result: 'done', note: 'already uploaded' };
    // Opened and checked (a regular file, one name, inside its root) before any asset exists for it, and
    // anew at every attempt: a retry, or a resume after a restart, reads only from a descriptor that passed.
    let file: PinnedFile;
    try {
      file = await PinnedFile.open(p.path, this.d.files ?? nodeUploadFiles, this.d.roots);
    } catch (err) {
      return this.unreadable(p, err);
    }
    let out: Outcome;
    let late = false;
    try {
      out = await this.upload(item, p, file, signal);
    } finally {
      late = this.d.lastParts?.release(item.id) ?? false;
      await file.close().catch(() => undefined);
    }
    return late && out.result === 'done' ? completedDespiteCancel() : out;
  }

  private unreadable(p: UploadPayload, err: unknown): Outcome {
    if (err instanceof NotRegular) return dead(`${quotePath(p.path)} ${err.message}: not uploaded`);
    if (err instanceof NotTaken) return dead(`${quotePath(p.path)} is not uploaded: ${err.why}`);
    const code = fsCode(err) ?? 'error';
    if (code === 'ENOENT' || code === 'ENOTDIR') return dead(`the file is gone (${code}): ${p.path}`);
    if (TEMPORARY_OPEN_ERRORS.has(code)) return { result: 'retry', error: fsError(err, 'open the file to upload', p.path) };
    return dead(fsError(err, 'read the file to upload', p.path).message);
  }

  private async upload(item: OutboxItem, p: UploadPayload, file: PinnedFile, signal: AbortSignal): Promise<Outcome> {
    // A file rewritten after it was queued is not the file that was queued.
    if (!sameFile(p, file.baseline)) return this.changed(p, undefined, 'its size, modification time or inode is not what was queued', false);
    let prog = item.progress as UploadProgress | null | undefined;
    let urls = prog ? await this.d.urls.load(prog.assetId) : undefined;
    try {
      if (prog && urls && urls.length === prog.parts && this.d.serverNow() - prog.createdAt <= UPLOAD_LIFETIME_MS && resumable(prog)) {
        // The parts already at storage hold the version the asset was made from: go on only with that one.
        if (prog.ctimeMs !== file.baseline.ctimeMs) throw new VersionChanged('it was written to since its first parts were sent (inode change time)');
      } else {
        // A progress record of an older agent has no content check: its asset is left, like an expired one.
        ({ prog, urls } = await this.create(item.id, p, file, signal));
      }
      await this.sendChunks(item.id, p, prog, urls, file, signal);
    } catch (err) {
      if (err instanceof CancelledFirst) return cancelledFirst();
      if (err instanceof VersionChanged) return this.changed(p, prog ?? undefined, err.why, true);
      if (err instanceof AgentError && err.kind === 'paused') {
        // Never retried, by this run or a later one: the index keeps refused files as well as sent ones.
        await this.d.index.add(p);
        return { result: 'dead', reason: `${PAUSED_REFUSED}: ${err.message}` };
      }
      if (err instanceof AgentError && err.kind === 'forbidden' && prog) {
        // Storage refused the presigned URL (expired or revoked): the next attempt creates the asset again.
        await this.d.outbox.progress(item.id, null);
        await this.d.urls.remove(prog.assetId);
      }
      return classify(err);
    }
    const assetId = prog.assetId;
    return finishUpload(this.d, { record: p, tidy: () => this.d.urls.remove(assetId), path: p.path, went: file.baseline, viaLink: file.reachedViaLink, name: p.name, bytes: p.size, assetId, what: 'upload' });
  }

  /**
   * The file is not the version this item stands for: stop, say what
   * changed, and hand the file back to the uploads unit, which queues it
   * again once it holds still (a new item, a new asset). The asset started
   * for it, if any, is left unfinished: the service drops it after 24 h.
   */
  private async changed(p: UploadPayload, prog: UploadProgress | undefined, why: string, during: boolean): Promise<Outcome> {
    if (prog) await this.d.urls.remove(prog.assetId);
    const when = during ? 'changed while it uploaded' : 'changed after it was queued';
    const left = prog ? `; asset ${prog.assetId} is left unfinished (the service drops it after 24 h)` : '';
    this.d.logger?.warn({ name: p.name, asset: prog?.assetId, change: why }, `upload stopped: ${quote(p.name)} ${when} (${why}); it goes again, as a new asset, once it holds still`);
    if (this.d.queueDir !== undefined) {
      try {
        await writeUploadRequest(this.d.queueDir, [p], { settle: true });
      } catch (err) {
        this.d.logger?.warn({ name: p.name, err: fsError(err, 'hand the changed file back for a new upload').message }, 'cannot queue the changed file again; a file in the media dir still goes once it holds still');
      }
    }
    return dead(`the file ${when} (${why}): ${p.path}${left}; it is uploaded again, as a new asset, once it holds still`);
  }

  private async create(id: string, p: UploadPayload, file: PinnedFile, signal: AbortSignal): Promise<{ prog: UploadProgress; urls: string[] }> {
    const channel = p.channelKey === undefined ? undefined : await this.d.channelId(p.channelKey);
    // Seconds since the file was made, on this unit's clock like the file's own mtime.
    const offset = Math.max(0, Math.round((this.d.clock.wallNow() - p.mtimeMs) / 1000));
    const asset = (
      await this.d.assets.create(
        { name: p.name, filetype: p.filetype, filesize: p.size, offset, ...(channel !== undefined && { channel }), ...(p.extension !== undefined && { extension: p.extension }) },
        signal,
      )
    ).value;
    // The URLs first: a record naming an asset whose URLs are lost would only lead to a new asset anyway.
    await this.d.urls.save(asset.id, asset.uploadUrls);
    const prog: UploadProgress = {
      assetId: asset.id,
      parts: asset.uploadUrls.length,
      createdAt: this.d.serverNow(),
      done: [],
      ctimeMs: file.baseline.ctimeMs,
      // The seed places each part's sample: a writer cannot know which bytes are looked at.
      check: { seed: randomInt(2 ** 31), sent: zeroDigest().toString('hex') },
    };
    // Flushed at once: a crash before this record reaches flash leaves an asset the next attempt cannot resume.
    const written = this.d.outbox.progress(id, prog);
    await this.d.outbox.flush();
    await written;
    return { prog, urls: asset.uploadUrls };
  }

  /**
   * The chunks not yet recorded, a few at a time, then the last one alone.
   * Each finished chunk is recorded in the outbox and flushed before its
   * lane takes the next one (the other lane keeps sending meanwhile): a
   * crash re-sends at most the chunks in flight. Each chunk's sample is
   * hashed before it is sent and the file's metadata checked after; the
   * last chunk completes the asset, so its final buffer waits for both
   * checks over the whole file (version-check.ts).
   */
  private async sendChunks(id: string, p: UploadPayload, prog: UploadProgress, urls: string[], file: PinnedFile, signal: AbortSignal): Promise<void> {
    const n = urls.length;
    const chunk = partBytes(p.size, n);
    const done = decodeParts(prog.done, n);
    const todo = [...Array(n).keys()].filter((i) => !done.has(i));
    const seed = prog.check?.seed ?? 0;
    const sent = Buffer.from(prog.check?.sent ?? zeroDigest().toString('hex'), 'hex');
    const range = (i: number): [number, number] => {
      const start = Math.min(p.size, i * chunk);
      return [start, Math.min(p.size, start + chunk)];
    };
    const record = async (i: number, digest: Buffer, length: number): Promise<void> => {
      this.d.onBytes?.(length);
      xorInto(sent, digest);
      done.add(i);
      const snapshot: UploadProgress = { ...prog, done: encodeParts(done), check: { seed, sent: sent.toString('hex') } };
      // On flash before this lane takes its next chunk, rather than at the end of the commit
      // window: one fsync per chunk of megabytes is nothing, and a crash re-sends at most
      // the chunks in flight.
      // The outbox appends the record the moment progress() is called, so records stay in the
      // order the chunks finished; each lane waits for its own (no list of them kept for a
      // file of thousands of chunks).
      await Promise.all([this.d.outbox.progress(id, snapshot), this.d.outbox.flush()]);
    };
    // Every part is at storage already (a crash came after the last one): the asset is complete.
    const last = todo.pop();
    if (last === undefined) return;
    let failed: unknown;
    const next = async (): Promise<void> => {
      for (let i = todo.shift(); i !== undefined && failed === undefined; i = todo.shift()) {
        const [start, end] = range(i);
        const length = end - start;
        try {
          // Sampled before the PUT reads the part: bytes changed after this moment differ at the end.
          const digest = await file.sample(i, start, end, seed);
          // A slice of the checked descriptor, never the path (a folder on the way may have been swapped
          // since), and no read stream: the storage client reads it through a reused buffer.
          const body = length === 0 ? Buffer.alloc(0) : { fd: file.fd, start };
          await this.d.storage.put({ url: urls[i] as string, body, length, contentType: p.filetype, signal });
          const why = await file.changed();
          if (why !== undefined) throw new VersionChanged(why);
          await record(i, digest, length);
        } catch (err) {
          failed ??= err;
          return;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.d.chunksInFlight ?? 2, Math.max(1, todo.length)) }, next));
    if (failed !== undefined) throw failed;

    const [start, end] = range(last);
    const length = end - start;
    const digest = await file.sample(last, start, end, seed);
    const expected = Buffer.from(sent);
    xorInto(expected, digest);
    let stopped: string | undefined;
    const verify = async (): Promise<string | undefined> => {
      stopped = (await file.changed()) ?? ((await file.samplesMatch(n, chunk, seed, expected)) ? undefined : 'a sample of its bytes differs from what was sent');
      return stopped;
    };
    // Storage's answer to the last part, for a cancel that comes once its last bytes are on their way.
    let answered: (took: boolean) => void = () => undefined;
    const answer = new Promise<boolean>((resolve) => (answered = resolve));
    let refused = false;
    /** Throws unless the last bytes may go now: stopped (the abort's reason), or cancelled first. */
    const seal = (): void => {
      signal.throwIfAborted();
      refused = this.d.lastParts?.seal(id, answer) === false;
      if (refused) throw new CancelledFirst();
    };
    try {
      if (length === 0) {
        if ((await verify()) !== undefined) throw new VersionChanged(stopped as string);
        seal();
        await this.d.storage.put({ url: urls[last] as string, body: Buffer.alloc(0), length, contentType: p.filetype, signal });
      } else {
        const body = heldBack(file, start, length, verify, (why) => (stopped = why), seal);
        await this.d.storage.put({ url: urls[last] as string, body, length, contentType: p.filetype, signal });
      }
      answered(true);
    } catch (err) {
      answered(false);
      // However storage reported the body's end (a read error, a reset), the file's change, or the cancel, is the reason.
      if (stopped !== undefined) throw new VersionChanged(stopped);
      if (refused) throw new CancelledFirst();
      throw err;
    }
    await record(last, digest, length);
  }
}

/**
 * The last chunk, read from the open file through fresh buffers (the request
 * may still hold the one before). Its final buffer is pushed only once
 * `verify` found the whole file as it was sent, and `seal` found no cancel
 * asked for (from then on none can take it back; it throws otherwise); otherwise the stream
 * fails, the PUT never delivers its declared length, and storage keeps no
 * part.
 */
function heldBack(file: PinnedFile, start: number, length: number, verify: () => Promise<string | undefined>, onStop: (why: string) => void, seal: () => void): Readable {
  let at = 0;
  return new Readable({
    read(): void {
      const want = Math.min(SLICE_BUFFER_BYTES, length - at);
      const buf = Buffer.allocUnsafe(want);
      readAt(file.file, buf, want, start + at)
        .then(async (got) => {
          if (got < want) throw new VersionChanged(`it shrank to ${start + at + got} bytes`);
          at += got;
          if (at < length) return void this.push(buf);
          const why = await verify();
          if (why !== undefined) throw new VersionChanged(why);
          seal();
          this.push(buf);
          this.push(null);
        })
        .catch((err: unknown) => {
          if (err instanceof VersionChanged) onStop(err.why);
          this.destroy(err instanceof Error ? err : new Error(String(err)));
        });
    },
  });
}
