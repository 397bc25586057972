// How `c2c-agent upload` hands files to a running daemon: the daemon alone
// writes the outbox, so the command writes a request file (durably, 0600)
// into the queue's incoming/ folder and the daemon queues its files.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ensureDir } from '../lib/ensure-dir.js';
import { writeFileAtomic } from '../lib/atomic-write.js';
import type { UploadPayload } from './upload-item.js';

export const INCOMING_DIR = 'incoming';

export async function writeUploadRequest(queueDir: string, files: UploadPayload[]): Promise<string> {
  const dir = path.join(queueDir, INCOMING_DIR);
  await ensureDir(dir);
  const file = path.join(dir, `${Date.now()}-${randomBytes(4).toString('hex')}.json`);
  await writeFileAtomic(file, `${JSON.stringify({ files })}\n`, { mode: 0o600, durable: true });
  return file;
}

export type RequestRead = { kind: 'ok'; files: UploadPayload[] } | { kind: 'bad'; reason: string };

export async function readUploadRequest(file: string): Promise<RequestRead> {
  let data: unknown;
  try {
    data = JSON.parse(await fs.readFile(file, 'utf8'));
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
  return ok.length === files.length ? { kind: 'ok', files: ok } : { kind: 'bad', reason: 'a file entry is malformed' };
}
