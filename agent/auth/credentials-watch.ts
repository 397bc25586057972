// Notices a re-paired device while it waits in needs-pairing. Polled on the
// agent clock rather than fs.watch: pairing replaces the file by rename,
// which a watch on the old inode misses, and a stat every 10 s costs nothing.
import type { Clock, Timer } from '../lib/clock.js';

export const CREDENTIALS_POLL_MS = 10_000;

export class CredentialsWatch {
  private timer: Timer | undefined;
  private last: string | undefined;

  constructor(
    private readonly clock: Clock,
    /** mtime, size and inode of the credentials file; undefined while it is absent. */
    private readonly fingerprint: () => string | undefined,
    private readonly onChange: () => void,
  ) {}

  /** Starts watching from the file as it is now. */
  start(): void {
    if (this.timer) return;
    this.last = this.fingerprint();
    this.timer = this.clock.setTimer(() => this.tick(), CREDENTIALS_POLL_MS);
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
  }

  private tick(): void {
    this.timer = this.clock.setTimer(() => this.tick(), CREDENTIALS_POLL_MS);
    const now = this.fingerprint();
    const changed = now !== undefined && now !== this.last;
    this.last = now;
    if (changed) this.onChange();
  }
}
