// How `c2c-agent upload` hands files to a running daemon: the daemon alone
// writes the outbox, so the command writes a request file (durably, 0600)
// into the queue's incoming/ folder and the daemon queues its files. The
// upload worker hands back a file that changed while it uploaded the same
// way, marked `settle`: the unit queues it once it holds still, and the
// request stays on flash until then, so a restart keeps the intent.
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ensureDir } from '../lib/ensure-dir.js';
import { writeFileAtomic } from '../lib/atomic-write.js';
import { readBoundedText } from '../lib/bounded-read.js';
import type { UploadPayload } from './upload-item.js';

export const INCOMING_DIR = 'incoming';

export interface RequestOptions {
  /** Queue the files only once each has held still (a file that changed while it uploaded). */
  settle?: boolean;
}

/** The most a request file may hold: the daemon reads no more (a FIFO or a huge file put there must not wedge it). */
export const MAX_REQUEST_BYTES = 1024 * 1024;

/** Writes the files as one request, or several when one would pass MAX_REQUEST_BYTES; resolves with their paths once all are on flash. */
export async function writeUploadRequest(queueDir: string, files: UploadPayload[], opts: RequestOptions = {}): Promise<string[]> {
  const dir = path.join(queueDir, INCOMING_DIR);
  await ensureDir(dir);
  const text = (list: UploadPayload[]): string => `${JSON.stringify({ files: list, ...(opts.settle === true && { settle: true }) })}\n`;
  const overhead = Buffer.byteLength(text([]));
  let batch: UploadPayload[] = [];
  let bytes = overhead;
  const batches: UploadPayload[][] = [batch];
  for (const f of files) {
    // Each entry and its comma.
    const size = Buffer.byteLength(JSON.stringify(f)) + 1;
    if (batch.length > 0 && bytes + size > MAX_REQUEST_BYTES) {
      batches.push((batch = []));
      bytes = overhead;
    }
    batch.push(f);
    bytes += size;
  }
  const written: string[] = [];
  for (const list of batches) {
    // The wall clock only names the file (requests are taken in name order); nothing is timed by it.
    const file = path.join(dir, `${Date.now()}-${randomBytes(4).toString('hex')}.json`);
    await writeFileAtomic(file, text(list), { mode: 0o600, durable: true });
    written.push(file);
  }
  return written;
}

export type RequestRead = { kind: 'ok'; files: UploadPayload[]; settle: boolean } | { kind: 'bad'; reason: string };

export async function readUploadRequest(file: string): Promise<RequestRead> {
  let data: unknown;
  try {
    data = JSON.parse(await readBoundedText(file, { what: 'upload request', maxBytes: MAX_REQUEST_BYTES }));
  } catch (err) {
    return { kind: 'bad', reason: err instanceof Error ? err.message : String(err) };
  }
  const files = (data as { files?: unknown } | null)?.files;
  if (!Array.isArray(files)) return { kind: 'bad', reason: "no 'files' list" };
  const ok = files.filter(
    (f): f is UploadPayload =>
      f !== null && typeof f === 'object' && typeof f.path === 'string' && typeof f.name === 'string' && typeof f.filetype === 'string' &&
      [f.size, f.mtimeMs, f.ino, f.dev].every((n) => typeof n === 'number' && Number.isFinite(n)),
  );
  const settle = (data as { settle?: unknown }).settle === true;
  return ok.length === files.length ? { kind: 'ok', files: ok, settle } : { kind: 'bad', reason: 'a file entry is malformed' };
}
