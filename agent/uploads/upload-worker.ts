// One media upload, run from the outbox: create the asset, then PUT the file
// in even chunks to its presigned URLs (chunk = ceil(size / n), the last one
// to EOF), streamed from disk, two at a time. Each finished chunk is a
// progress record in the outbox, so a restart, a lost network or a power cut
// resumes at the first chunk not recorded, never from zero. An asset not
// finished within 24 h has expired and is created again.
import { promises as fs } from 'node:fs';
import type { AssetEndpoints } from '../api/assets.js';
import type { StorageClient } from '../api/storage.js';
import type { Clock } from '../lib/clock.js';
import { AgentError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { Worker } from '../outbox/dispatcher.js';
import { classify, type Outcome } from '../outbox/outcome.js';
import type { OutboxItem } from '../outbox/types.js';
import type { UploadUrls } from './upload-urls.js';
import { PAUSED_REFUSED, UPLOAD_KIND, decodeParts, encodeParts, partBytes, type FileIdentity, type UploadPayload, type UploadProgress } from './upload-item.js';

/** The service expires an upload that is not finished within a day of its creation. */
export const UPLOAD_LIFETIME_MS = 24 * 3600 * 1000;

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
  chunksInFlight?: number;
  /** The upload window: uploads wait while it is closed (absent: always open). */
  windowOpen?: () => boolean;
  /** Bytes as they leave, for the status line's rate. */
  onBytes?: (n: number) => void;
  logger?: Logger;
}

// The device number is left out for the reason the index leaves it out (a remounted card).
const sameFile = (a: FileIdentity, b: { ino: number; size: number; mtimeMs: number }): boolean => a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;

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
    let st;
    try {
      st = await fs.stat(p.path);
    } catch (err) {
      return { result: 'dead', reason: `the file is gone (${(err as NodeJS.ErrnoException).code ?? 'error'}): ${p.path}` };
    }
    // A file rewritten after it was queued is not the file that was queued: the watcher queues the new one.
    if (!sameFile(p, st)) return { result: 'dead', reason: `the file changed under the agent (size or modification time): ${p.path}` };
    let prog = item.progress as UploadProgress | null | undefined;
    let urls = prog ? await this.d.urls.load(prog.assetId) : undefined;
    try {
      if (!prog || !urls || urls.length !== prog.parts || this.d.serverNow() - prog.createdAt > UPLOAD_LIFETIME_MS) {
        ({ prog, urls } = await this.create(item.id, p, signal));
      }
      await this.sendChunks(item.id, p, prog, urls, signal);
    } catch (err) {
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
    await this.d.index.add(p);
    await this.d.urls.remove(prog.assetId);
    if (this.d.deleteAfterUpload) await fs.unlink(p.path).catch(() => undefined);
    this.d.logger?.info({ name: p.name, bytes: p.size, asset: prog.assetId }, 'upload finished');
    return { result: 'done' };
  }

  private async create(id: string, p: UploadPayload, signal: AbortSignal): Promise<{ prog: UploadProgress; urls: string[] }> {
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
    const prog: UploadProgress = { assetId: asset.id, parts: asset.uploadUrls.length, createdAt: this.d.serverNow(), done: [] };
    // Flushed at once: a crash before this record reaches flash leaves an asset the next attempt cannot resume.
    const written = this.d.outbox.progress(id, prog);
    await this.d.outbox.flush();
    await written;
    return { prog, urls: asset.uploadUrls };
  }

  /**
   * The chunks not yet recorded, a few at a time. Each finished chunk is
   * recorded in the outbox and flushed before its lane takes the next one
   * (the other lane keeps sending meanwhile): a crash re-sends at most the
   * chunks in flight.
   */
  private async sendChunks(id: string, p: UploadPayload, prog: UploadProgress, urls: string[], signal: AbortSignal): Promise<void> {
    const n = urls.length;
    const chunk = partBytes(p.size, n);
    const done = decodeParts(prog.done, n);
    const todo = [...Array(n).keys()].filter((i) => !done.has(i));
    let failed: unknown;
    const next = async (): Promise<void> => {
      for (let i = todo.shift(); i !== undefined && failed === undefined; i = todo.shift()) {
        const start = Math.min(p.size, i * chunk);
        const end = Math.min(p.size, start + chunk);
        const length = end - start;
        // A file slice, not a read stream: the storage client reads it through a reused buffer.
        const body = length === 0 ? Buffer.alloc(0) : { file: p.path, start };
        try {
          await this.d.storage.put({ url: urls[i] as string, body, length, contentType: p.filetype, signal });
        } catch (err) {
          failed ??= err;
          return;
        }
        this.d.onBytes?.(length);
        done.add(i);
        const snapshot: UploadProgress = { ...prog, done: encodeParts(done) };
        // On flash before this lane takes its next chunk, rather than at the end of the commit
        // window: one fsync per chunk of megabytes is nothing, and a crash re-sends at most
        // the chunks in flight.
        // The outbox appends the record the moment progress() is called, so records stay in the
        // order the chunks finished; each lane waits for its own (no list of them kept for a
        // file of thousands of chunks).
        await Promise.all([this.d.outbox.progress(id, snapshot), this.d.outbox.flush()]);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.d.chunksInFlight ?? 2, Math.max(1, todo.length)) }, next));
    if (failed !== undefined) throw failed;
  }
}
