// The end of an upload whose last part storage took, for both workers
// (upload-worker.ts, realtime-worker.ts), so the rule is written once:
//
// 1. the index records what went (uploaded-index.ts), so the media watcher
//    never queues it again, across restarts; the worker's own records of the
//    upload (its presigned URLs) go only after that, so a crash between
//    leaves an item the next run finds in the index, never a second asset;
// 2. with deleteAfterUpload, the file is deleted only while its path still
//    leads to the version that went (version-check.ts `changedAt`: the same
//    device, inode, size and modification time, and inode change time where
//    known; no link put at the path since): a take written again, renamed
//    over it or swapped for a link since is not ours to delete. Otherwise it
//    is kept, and the log says what changed.
import { promises as fs } from 'node:fs';
import type { Logger } from '../lib/logger.js';
import type { Outcome } from '../outbox/outcome.js';
import type { FileIdentity } from './upload-item.js';
import { changedAt, nodeUploadFiles, type UploadFiles, type Version } from './version-check.js';

export interface FinishDeps {
  index: { add(f: FileIdentity): Promise<void> };
  deleteAfterUpload: boolean;
  /** Replaces node:fs for looking at the path (tests). */
  files?: UploadFiles;
  logger?: Logger;
}

export interface Finished {
  /** What the index keeps. */
  record: FileIdentity;
  /** The worker's own records of the upload, gone once the index has it (the upload's presigned URLs). */
  tidy?: () => Promise<void>;
  /** The path deleted after the upload, when so set. */
  path: string;
  /** The version that went. */
  went: Version;
  /** The path was a link the media watcher followed to the file: the link at it is not a change. */
  viaLink?: boolean;
  name: string;
  bytes: number;
  assetId: string;
  /** 'upload' or 'real-time upload', for the log. */
  what: string;
}

export async function finishUpload(d: FinishDeps, f: Finished): Promise<Outcome> {
  await d.index.add(f.record);
  await f.tidy?.();
  if (d.deleteAfterUpload) {
    const change = await changedAt(f.path, f.went, d.files ?? nodeUploadFiles, f.viaLink === true).catch(() => 'it could not be checked');
    if (change === undefined) await fs.unlink(f.path).catch(() => undefined);
    else d.logger?.info({ name: f.name, change }, `uploaded file kept: ${change} since its ${f.what}`);
  }
  d.logger?.info({ name: f.name, bytes: f.bytes, asset: f.assetId }, `${f.what} finished`);
  return { result: 'done' };
}
