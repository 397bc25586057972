// A manual clock for tests: time moves only when the test says so, so a test
// can play thousands of agent-hours without sleeping.
import type { Clock, Timer } from '../../agent/lib/clock.js';

interface Pending {
  at: number;
  seq: number;
  fn: () => void;
}

export class FakeClock implements Clock {
  readonly scale = 1;
  private mono: number;
  private wall: number;
  private seq = 0;
  private pending: Pending[] = [];

  constructor(start = 1_000_000, wallStart = Date.UTC(2026, 0, 1)) {
    this.mono = start;
    this.wall = wallStart;
  }

  now(): number {
    return this.mono;
  }

  wallNow(): number {
    return this.wall;
  }

  /** Steps only the wall clock, as NTP does on a Pi with no RTC. */
  jumpWall(ms: number): void {
    this.wall += ms;
  }

  setTimer(fn: () => void, ms: number): Timer {
    const entry: Pending = { at: this.mono + Math.max(0, ms), seq: this.seq++, fn };
    this.pending.push(entry);
    return { cancel: () => (this.pending = this.pending.filter((p) => p !== entry)) };
  }

  get pendingCount(): number {
    return this.pending.length;
  }

  /** The time of the next timer, or undefined when none is armed. */
  nextAt(): number | undefined {
    return this.pending.reduce<number | undefined>((min, p) => (min === undefined || p.at < min ? p.at : min), undefined);
  }

  /**
   * Advance by `ms`, firing due timers in order and letting promise chains
   * they start settle before the next one fires.
   */
  async advance(ms: number): Promise<void> {
    const target = this.mono + ms;
    for (;;) {
      await flushMicrotasks();
      const due = this.pending.filter((p) => p.at <= target).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.pending = this.pending.filter((p) => p !== due);
      this.wall += due.at - this.mono;
      this.mono = due.at;
      due.fn();
    }
    this.wall += target - this.mono;
    this.mono = target;
    await flushMicrotasks();
  }
}

export async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
}
