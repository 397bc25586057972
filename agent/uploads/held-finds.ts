// The media watcher's finds held back while the preference autoUpload is off
// (prefs/): kept in memory by path, at most HELD_MAX (a card holds days of
// clips; each is a few hundred bytes here), queued oldest first once it is on
// again. A restart finds them again: the watcher reports every clip anew.
import type { Logger } from '../lib/logger.js';
import type { UploadPayload } from './upload-item.js';

/** Media-dir finds held back while autoUpload is off, at most this many. */
const HELD_MAX = 10_000;

export class HeldFinds {
  private readonly held = new Map<string, UploadPayload>();
  private fullSaid = false;

  constructor(private readonly logger?: Logger) {}

  hold(p: UploadPayload): void {
    if (this.held.size >= HELD_MAX && !this.held.has(p.path)) {
      if (!this.fullSaid) this.logger?.warn({ held: this.held.size }, 'autoUpload is off and many clips wait; the newest are not remembered until it is on again (a restart finds them)');
      this.fullSaid = true;
      return;
    }
    this.held.set(p.path, p);
  }

  /** autoUpload is on again: what was held, oldest first, and nothing held any more. */
  release(): UploadPayload[] {
    const files = [...this.held.values()].sort((a, b) => a.mtimeMs - b.mtimeMs);
    this.held.clear();
    this.fullSaid = false;
    return files;
  }

  /** The file was queued (by hand) or cancelled: no longer held. */
  forget(path: string): void {
    this.held.delete(path);
  }

  get count(): number {
    return this.held.size;
  }
}
