// Every file the agent writes goes through here. On flash (durable: true) a
// power cut must leave either the old or the new file, never a torn one:
// write a temp file, fsync it, rename over the target, fsync the directory.
// On tmpfs (durable: false) the fsyncs are pointless and skipped.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

export interface WriteOptions {
  mode?: number;
  durable?: boolean;
}

export async function writeFileAtomic(file: string, data: string | Uint8Array, options: WriteOptions = {}): Promise<void> {
  const { mode = 0o600, durable = true } = options;
  const dir = path.dirname(file);
  const tmp = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await fs.open(tmp, 'wx', mode);
  try {
    await handle.writeFile(data);
    if (durable) await handle.sync();
  } catch (err) {
    await handle.close();
    await fs.rm(tmp, { force: true });
    throw err;
  }
  await handle.close();
  try {
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
  if (durable) await syncDirectory(dir);
}

/**
 * fsync a directory, so a file created or renamed in it survives a power cut
 * (fsyncing the file alone does not persist its directory entry).
 */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
