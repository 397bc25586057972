// The unit tests' Clock: time moves only when the test says so, so a test can
// play thousands of agent-hours without sleeping. It is the one fake clock
// (virtual-clock.ts's VirtualClock, delays kept as given, not rounded) with a
// wall clock beside it; between timers it lets promise chains run a few turns
// of the event loop (flushMicrotasks), not the file-system-aware settle the
// daemon in-process needs.
import type { Clock, Timer } from '../../agent/lib/clock.js';
import { flushMicrotasks, VirtualClock } from './virtual-clock.js';

export { flushMicrotasks };

export class FakeClock implements Clock {
  readonly scale = 1;
  private readonly vc: VirtualClock;
  private readonly start: number;
  private wallAtStart: number;

  constructor(start = 1_000_000, wallStart = Date.UTC(2026, 0, 1)) {
    this.vc = new VirtualClock({ start, wholeMs: false });
    this.start = start;
    this.wallAtStart = wallStart;
  }

  now(): number {
    return this.vc.now();
  }

  wallNow(): number {
    return this.wallAtStart + (this.vc.now() - this.start);
  }

  /** Steps only the wall clock, as NTP does on a Pi with no RTC. */
  jumpWall(ms: number): void {
    this.wallAtStart += ms;
  }

  setTimer(fn: () => void, ms: number): Timer {
    return this.vc.setTimer(fn, ms);
  }

  get pendingCount(): number {
    return this.vc.pendingCount;
  }

  /** The time of the next timer, or undefined when none is armed. */
  nextAt(): number | undefined {
    return this.vc.nextAt();
  }

  /**
   * Advance by `ms`, firing due timers in order and letting promise chains
   * they start settle before the next one fires.
   */
  async advance(ms: number): Promise<void> {
    await this.vc.advance(ms, flushMicrotasks);
  }
}
