// The upload rate: bytes sent to storage over the last RATE_WINDOW_MS of
// agent time (bytesSent on the bus), for the uploads and network sections.
import type { Clock } from '../lib/clock.js';

/** The rate shown is over this much agent time. */
export const RATE_WINDOW_MS = 30_000;

export class RateMeter {
  private sent: Array<{ at: number; bytes: number }> = [];

  constructor(private readonly clock: Clock) {}

  /** Bytes that just left. */
  add(n: number): void {
    const now = this.clock.now();
    this.sent.push({ at: now, bytes: n });
    this.sent = this.sent.filter((s) => s.at > now - RATE_WINDOW_MS);
  }

  /** Bytes a second over the window. */
  perSecond(): number {
    const now = this.clock.now();
    const recent = this.sent.filter((s) => s.at > now - RATE_WINDOW_MS).reduce((n, s) => n + s.bytes, 0);
    return Math.round(recent / (RATE_WINDOW_MS / 1000));
  }
}
