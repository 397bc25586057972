// The optional upload window, for cameras on metered or shared links: a cron
// expression opens it for a number of minutes. node-cron only reads the
// expression and says whether a wall-clock minute matches it; the agent's
// own clock does the timing (a tick at each wall-clock minute, armed on the
// injected monotonic clock), so --time-scale, the fake clocks of the tests and
// an NTP step all behave, and nothing of node-cron's scheduler (its own
// timers, its "missed execution" lines on the console) runs in the daemon.
// A cron is only as good as the wall clock, and a Pi has no RTC: until the
// clock is known good (the service's Date header agrees with it, or
// systemd-timesyncd says it synchronized) the window is ignored and uploads
// run, rather than waiting for a time that may be wrong.
import { existsSync } from 'node:fs';
import type { Clock, Timer } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';

/** systemd-timesyncd creates this once the clock has been synchronized. */
export const TIMESYNC_FLAG = '/run/systemd/timesync/synchronized';
/** A wall clock within this of the service's Date header is good enough for a window measured in minutes. */
export const CLOCK_AGREES_MS = 60_000;

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

interface Matcher {
  match(date: Date): boolean;
  destroy(): void | Promise<void>;
}

const MINUTE_MS = 60_000;
/** How far ahead nextOpening() looks: a weekly window's next opening is within a week. */
const NEXT_LOOKAHEAD_MS = 8 * 24 * 60 * MINUTE_MS;
/** Minutes matched at a time while looking for the next opening. */
const SCAN_SLICE = 240;
// node-cron would print through its own console logger; a task that is never started has nothing to say.
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };

export class UploadWindow {
  private matcher: Matcher | undefined;
  private openUntil = -Infinity;
  private tick: Timer | undefined;
  /** The wall-clock minute that last opened the window: a clock stepped back does not open it twice. */
  private lastOpened: number | undefined;
  private running = false;
  /** nextOpening()'s last answer, looked for from minute `from`. */
  private nextCache: { from: number; next: number | undefined } | undefined;
  /** The minute a scan for the next opening runs from, while one runs. */
  private scanning: number | undefined;

  constructor(private readonly o: UploadWindowOptions) {}

  /** Loads node-cron (only when a window is configured); settings checked the expression (config/setting-values.ts). */
  async start(): Promise<void> {
    const cron = await import('node-cron');
    // createTask parses the expression and arms nothing until start(), which is never called.
    this.matcher = cron.createTask(this.o.cron, () => undefined, { name: 'upload-window', logger: silent });
    this.running = true;
    // Started inside a window (a reboot at night): open for what is left of it.
    const now = this.o.clock.wallNow();
    for (let m = 0; m < this.o.minutes; m++) {
      const minute = floorMinute(now - m * MINUTE_MS);
      if (this.matcher.match(new Date(minute))) {
        this.lastOpened = minute;
        this.open(this.o.minutes * MINUTE_MS - (now - minute));
        break;
      }
    }
    this.armTick();
  }

  stop(): void {
    this.running = false;
    this.tick?.cancel();
    this.tick = undefined;
    void this.matcher?.destroy();
    this.matcher = undefined;
  }

  /** Wakes at the next wall-clock minute (agent ms on the monotonic clock), asks the expression, arms again. */
  private armTick(): void {
    if (!this.running) return;
    const wall = this.o.clock.wallNow();
    const realMs = floorMinute(wall) + MINUTE_MS - wall;
    this.tick = this.o.clock.setTimer(() => {
      this.tick = undefined;
      const at = this.o.clock.wallNow();
      const minute = floorMinute(at);
      if (minute !== this.lastOpened && this.matcher?.match(new Date(minute))) {
        this.lastOpened = minute;
        this.open(this.o.minutes * MINUTE_MS - (at - minute));
      }
      this.armTick();
    }, realMs * this.o.clock.scale);
  }

  /** Uploads may run now. */
  isOpen(): boolean {
    if (!this.clockGood()) return true;
    return this.o.clock.now() < this.openUntil;
  }

  /** The window is in effect (the wall clock is known good) and closed now: uploads wait. */
  closedNow(): boolean {
    return this.matcher !== undefined && !this.isOpen();
  }

  /**
   * Wall ms of the next minute the expression opens the window, looked for
   * up to NEXT_LOOKAHEAD_MS ahead; undefined when none is that near, before
   * start(), or while it is being looked for. A week of minutes is ten
   * thousand matches (a quarter of a second on a PC, more on a camera): they
   * are asked SCAN_SLICE at a time, yielding to the loop in between, and the
   * answer is kept until that minute passes (no answer: for an hour).
   */
  nextOpening(): number | undefined {
    if (this.matcher === undefined) return undefined;
    const from = floorMinute(this.o.clock.wallNow()) + MINUTE_MS;
    const c = this.nextCache;
    if (c !== undefined && from >= c.from && (c.next === undefined ? from < c.from + 60 * MINUTE_MS : from <= c.next)) return c.next;
    this.scan(from);
    return undefined;
  }

  /** Looks for the next opening from wall minute `from`, a slice at a time; one scan at once. */
  private scan(from: number): void {
    if (this.scanning !== undefined) return;
    this.scanning = from;
    let m = from;
    const end = from + NEXT_LOOKAHEAD_MS;
    const slice = (): void => {
      const matcher = this.matcher;
      if (!this.running || matcher === undefined) {
        this.scanning = undefined;
        return;
      }
      for (let i = 0; i < SCAN_SLICE && m < end; i++, m += MINUTE_MS) {
        if (matcher.match(new Date(m))) return this.scanned(from, m);
      }
      if (m >= end) return this.scanned(from, undefined);
      setImmediate(slice);
    };
    setImmediate(slice);
  }

  private scanned(from: number, next: number | undefined): void {
    this.scanning = undefined;
    this.nextCache = { from, next };
  }

  private clockGood(): boolean {
    const offset = this.o.clockOffsetMs();
    if (offset !== undefined) return Math.abs(offset) < CLOCK_AGREES_MS;
    return existsSync(this.o.timesyncFlag ?? TIMESYNC_FLAG);
  }

  /** Opens for `ms` of wall-clock time (real ms), measured on the monotonic clock. */
  private open(ms: number): void {
    if (ms <= 0) return;
    this.openUntil = Math.max(this.openUntil, this.o.clock.now() + ms * this.o.clock.scale);
    this.o.logger?.info({ minutes: Math.round(ms / 60_000) }, 'upload window open');
    this.o.onOpen();
  }
}

const floorMinute = (wallMs: number): number => wallMs - (((wallMs % MINUTE_MS) + MINUTE_MS) % MINUTE_MS);
