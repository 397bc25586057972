// The optional upload window, for cameras on metered or shared links: a cron
// expression (wall clock, node-cron) opens it for a number of minutes, timed
// on the monotonic clock. A cron is only as good as the wall clock, and a Pi
// has no RTC: until the clock is known good (the service's Date header
// agrees with it, or systemd-timesyncd says it synchronized) the window is
// ignored and uploads run, rather than waiting for a time that may be wrong.
import { existsSync } from 'node:fs';
import type { Clock, Timer } from '../lib/clock.js';
import { configError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';

/** systemd-timesyncd creates this once the clock has been synchronized. */
export const TIMESYNC_FLAG = '/run/systemd/timesync/synchronized';
/** A wall clock within this of the service's Date header is good enough for a window measured in minutes. */
export const CLOCK_AGREES_MS = 60_000;

/** A bad expression stops the daemon with exit 78 before it starts, like any bad setting. */
export async function checkUploadWindow(w: { cron: string; source: string }): Promise<void> {
  const cron = await import('node-cron');
  if (!cron.validate(w.cron)) throw configError(`upload window '${w.cron}' from ${w.source} is not a cron expression (minute hour day month weekday)`, w.source);
}

export interface UploadWindowOptions {
  cron: string;
  minutes: number;
  /** Where the setting came from, for the error about a bad expression. */
  source: string;
  clock: Clock;
  /** The service's Date minus our wall clock, when an answer carried one. */
  clockOffsetMs: () => number | undefined;
  /** The window opened: look at the queue now. */
  onOpen: () => void;
  timesyncFlag?: string;
  logger?: Logger;
}

interface Task {
  stop(): void | Promise<void>;
  match(date: Date): boolean;
}

export class UploadWindow {
  private task: Task | undefined;
  private openUntil = -Infinity;
  private closeTimer: Timer | undefined;

  constructor(private readonly o: UploadWindowOptions) {}

  /** Loads node-cron (only when a window is configured); the expression was checked by checkUploadWindow. */
  async start(): Promise<void> {
    const cron = await import('node-cron');
    const task = cron.schedule(this.o.cron, () => this.open(this.o.minutes * 60_000), { name: 'upload-window' });
    this.task = task;
    // Started inside a window (a reboot at night): open for what is left of it.
    const now = this.o.clock.wallNow();
    for (let m = 0; m < this.o.minutes; m++) {
      const at = now - m * 60_000;
      if (task.match(new Date(at - (at % 60_000)))) {
        this.open(this.o.minutes * 60_000 - (now - (at - (at % 60_000))));
        break;
      }
    }
  }

  stop(): void {
    void this.task?.stop();
    this.closeTimer?.cancel();
  }

  /** Uploads may run now. */
  isOpen(): boolean {
    if (!this.clockGood()) return true;
    return this.o.clock.now() < this.openUntil;
  }

  private clockGood(): boolean {
    const offset = this.o.clockOffsetMs();
    if (offset !== undefined) return Math.abs(offset) < CLOCK_AGREES_MS;
    return existsSync(this.o.timesyncFlag ?? TIMESYNC_FLAG);
  }

  private open(ms: number): void {
    if (ms <= 0) return;
    this.openUntil = Math.max(this.openUntil, this.o.clock.now() + ms * this.o.clock.scale);
    this.o.logger?.info({ minutes: Math.round(ms / 60_000) }, 'upload window open');
    this.o.onOpen();
  }
}
