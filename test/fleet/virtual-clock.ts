// One virtual clock for a whole fleet and the fake cloud: time moves only
// when the driver says so, from one due timer to the next. Timers sit in a
// binary heap (a thousand units keep a few thousand armed, and most are
// cancelled: guards, timeouts), and cancelling is O(1), skipped when popped.
// Each unit process sees it through a DeviceClock: its own boot origin (agent
// time is CLOCK_MONOTONIC, 0 at boot), its own wall clock (which NTP may
// step), and its timers die with the process.
import type { Clock, Timer } from '../../agent/lib/clock.js';
import { seeded } from '../support/seeded.js';
export { seeded };

interface Entry {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

export class VirtualClock {
  private t = 0;
  private seq = 0;
  private readonly heap: Entry[] = [];

  /** Virtual ms since the run began. */
  now(): number {
    return this.t;
  }

  /**
   * Runs fn after `delayMs`, rounded up to a whole ms as setTimeout does. So
   * every time is an integer and a unit's agent time (virtual minus its boot)
   * is exact: a timer never fires a hair before the time it was armed for
   * (the scheduler would re-arm for the remaining hair, forever).
   */
  schedule(fn: () => void, delayMs: number): { cancel(): void } {
    const e: Entry = { at: this.t + Math.max(0, Math.ceil(delayMs)), seq: this.seq++, fn, cancelled: false };
    this.push(e);
    return { cancel: () => void (e.cancelled = true) };
  }

  /**
   * Fires due timers in (time, arming order) until `endMs`, calling `settle`
   * after each so everything a timer started (promise chains, file writes)
   * is over before the clock moves again: the run is the same for a seed.
   */
  async runUntil(endMs: number, settle: () => Promise<void>): Promise<number> {
    let fired = 0;
    for (;;) {
      const e = this.popDue(endMs);
      if (!e) break;
      this.t = e.at;
      e.fn();
      fired++;
      await settle();
    }
    this.t = endMs;
    return fired;
  }

  private popDue(endMs: number): Entry | undefined {
    while (this.heap.length > 0) {
      const top = this.heap[0] as Entry;
      if (top.cancelled) {
        this.pop();
        continue;
      }
      if (top.at > endMs) return undefined;
      return this.pop();
    }
    return undefined;
  }

  private less(a: Entry, b: Entry): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  private push(e: Entry): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(h[i] as Entry, h[p] as Entry)) break;
      [h[i], h[p]] = [h[p] as Entry, h[i] as Entry];
      i = p;
    }
  }

  private pop(): Entry {
    const h = this.heap;
    const top = h[0] as Entry;
    const last = h.pop() as Entry;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l] as Entry, h[m] as Entry)) m = l;
        if (r < h.length && this.less(h[r] as Entry, h[m] as Entry)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m] as Entry, h[i] as Entry];
        i = m;
      }
    }
    return top;
  }
}

/** What a unit's clocks share across its processes: boot time and wall-clock error. */
export interface Machine {
  /** Virtual time of the last boot: agent time is 0 there. */
  bootAt: number;
  /** The unit's wall clock minus true wall time, ms (a stale RTC, an NTP step). */
  wallErrorMs: number;
}

/** One agent process's Clock: scale 1, monotonic from its machine's boot; kill() ends its timers for good. */
export class DeviceClock implements Clock {
  readonly scale = 1;
  private dead = false;
  private readonly timers = new Set<{ cancel(): void }>();

  constructor(
    private readonly vc: VirtualClock,
    private readonly machine: Machine,
    private readonly wallStart: number,
  ) {}

  get alive(): boolean {
    return !this.dead;
  }

  now(): number {
    return this.vc.now() - this.machine.bootAt;
  }

  wallNow(): number {
    return this.wallStart + this.vc.now() + this.machine.wallErrorMs;
  }

  setTimer(fn: () => void, ms: number): Timer {
    if (this.dead) return { cancel: () => {} };
    const handle = this.vc.schedule(() => {
      this.timers.delete(handle);
      fn();
    }, ms);
    this.timers.add(handle);
    return {
      cancel: () => {
        handle.cancel();
        this.timers.delete(handle);
      },
    };
  }

  /** The process is gone: nothing it armed fires any more. */
  kill(): void {
    this.dead = true;
    for (const t of this.timers) t.cancel();
    this.timers.clear();
  }
}

/** File-system requests in flight (a FileHandle's close is a CloseReq). */
const FILE_IO = /^(FSReq|CloseReq|FileHandle)/;

/** Everything a fired timer started is over: promise chains, and file writes (the token file). */
export async function settle(): Promise<void> {
  do await new Promise<void>((resolve) => setImmediate(resolve));
  while (process.getActiveResourcesInfo().some((r) => FILE_IO.test(r)));
}


/** A seed derived from a base seed and labels, so each unit and process draws its own stream. */
export function derive(seed: number, ...labels: number[]): number {
  let h = seed >>> 0 || 1;
  for (const l of labels) {
    h = Math.imul(h ^ (l + 0x9e3779b9), 0x85ebca6b) >>> 0;
    h ^= h >>> 13;
  }
  return h;
}
