// An asset's presigned URLs, kept beside the queue while its upload runs:
// written once when the asset is created (durably, 0600: they carry
// signatures), read when an upload resumes, removed when it ends. Keeping
// them out of the progress records lets every finished chunk be recorded
// with a few bytes instead of the whole list again.
import * as fs from '../lib/fs-async.js';
import path from 'node:path';
import { MAX_RESPONSE_BYTES } from '../api/transport.js';
import { sweepOwnTemps, writeFileAtomic } from '../lib/atomic-write.js';
import { readBoundedText } from '../lib/bounded-read.js';
import { ensureDir } from '../lib/ensure-dir.js';
import { registerSecret } from '../lib/secrets.js';

export const UPLOAD_URLS_DIR = 'uploads';

/** The list came in one answer of at most MAX_RESPONSE_BYTES, and the file is its JSON again: twice that is room to spare. */
const MAX_FILE_BYTES = 2 * MAX_RESPONSE_BYTES;

export class UploadUrls {
  private swept = false;

  constructor(private readonly queueDir: string) {}

  /** This store owns its files: the daemon, their only writer, sweeps the temps a kill left behind on first use. */
  private sweepTemps(): string[] {
    if (this.swept) return [];
    this.swept = true;
    return sweepOwnTemps(path.join(this.queueDir, UPLOAD_URLS_DIR));
  }

  private file(assetId: string): string {
    // The id comes from the service: only its safe characters make the name.
    return path.join(this.queueDir, UPLOAD_URLS_DIR, `${assetId.replace(/[^A-Za-z0-9_-]/g, '_')}.json`);
  }

  async save(assetId: string, urls: string[]): Promise<void> {
    this.sweepTemps();
    await ensureDir(path.join(this.queueDir, UPLOAD_URLS_DIR));
    await writeFileAtomic(this.file(assetId), `${JSON.stringify(urls)}\n`, { mode: 0o600, durable: true });
  }

  /** The URLs, or undefined when the file is gone or unreadable (the upload then starts over with a new asset). */
  async load(assetId: string): Promise<string[] | undefined> {
    this.sweepTemps();
    try {
      const urls: unknown = JSON.parse(await readBoundedText(this.file(assetId), { what: 'upload URL list', maxBytes: MAX_FILE_BYTES }));
      if (!Array.isArray(urls) || urls.length === 0 || !urls.every((u) => typeof u === 'string')) return undefined;
      for (const u of urls) registerSecret(u as string);
      return urls as string[];
    } catch {
      return undefined;
    }
  }

  async remove(assetId: string): Promise<void> {
    await fs.unlink(this.file(assetId)).catch(() => undefined);
  }

  /** Removes the files of assets no pending upload refers to (left by a crash between creation and its record). */
  async sweep(keep: Set<string>): Promise<number> {
    const dir = path.join(this.queueDir, UPLOAD_URLS_DIR);
    let names: string[];
    try {
      names = await fs.readdir(dir);
    } catch {
      return 0;
    }
    const keepNames = new Set([...keep].map((id) => path.basename(this.file(id))));
    let removed = 0;
    for (const name of names) {
      if (keepNames.has(name)) continue;
      await fs.unlink(path.join(dir, name)).catch(() => undefined);
      removed++;
    }
    return removed;
  }
}
