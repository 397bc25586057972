// The one fake clock of the tests: time moves only when the test (or the
// fleet's driver) says so, from one due timer to the next, and everything a
// fired timer started is over before it moves again ("settle"). Three faces:
//
// - VirtualClock: the time line itself, shared by everything on it (the
//   fleet's thousand units and the fake cloud, or one daemon in-process and
//   the fake cloud). Timers sit in a binary heap (a fleet keeps thousands
//   armed, most of them cancelled guards and timeouts); cancelling is O(1),
//   skipped when popped.
// - DeviceClock: one agent process's Clock on it, with its machine's boot
//   origin and wall clock; its timers die with the process (kill -9).
// - FakeClock (fake-clock.ts): the unit tests' Clock, a VirtualClock of its
//   own with a wall clock beside it.
//
// `settle` is what "over" means; see its comment.
import { setImmediate as nextTurn } from 'node:timers';
import type { Clock, Timer } from '../../agent/lib/clock.js';
import { seeded } from './seeded.js';
export { seeded };

interface Entry {
  at: number;
  seq: number;
  fn: () => void;
  /** Cancelled, or taken off to fire. */
  done: boolean;
}

export interface VirtualClockOptions {
  /** The time at the start, virtual ms (default 0). */
  start?: number;
  /**
   * Round each delay up to a whole ms, as setTimeout does (default true):
   * every time is then an integer, and a timer never fires a hair before the
   * time it was armed for (a scheduler would re-arm for the remaining hair,
   * forever). FakeClock keeps delays as given.
   */
  wholeMs?: boolean;
}

export class VirtualClock {
  private t: number;
  private seq = 0;
  private live = 0;
  private readonly heap: Entry[] = [];
  private readonly wholeMs: boolean;
  /** Timers fired so far. */
  fired = 0;

  constructor(o: VirtualClockOptions = {}) {
    this.t = o.start ?? 0;
    this.wholeMs = o.wholeMs ?? true;
  }

  /** Virtual ms (bound: `clock.now` may be handed on as a function). */
  readonly now = (): number => this.t;

  /** Runs fn after `delayMs` of virtual time (a negative delay is 0; NaN and Infinity never fire). */
  setTimer(fn: () => void, delayMs: number): Timer {
    const d = Number.isNaN(delayMs) ? Infinity : Math.max(0, delayMs);
    const e: Entry = { at: this.t + (this.wholeMs ? Math.ceil(d) : d), seq: this.seq++, fn, done: false };
    this.push(e);
    this.live++;
    return {
      cancel: () => {
        if (e.done) return;
        e.done = true;
        this.live--;
      },
    };
  }

  /** The fleet's name for setTimer. */
  schedule(fn: () => void, delayMs: number): Timer {
    return this.setTimer(fn, delayMs);
  }

  /** Timers armed and neither fired nor cancelled. */
  get pendingCount(): number {
    return this.live;
  }

  /** When the next timer fires, or undefined when none is armed. */
  nextAt(): number | undefined {
    this.dropDone();
    return this.heap[0]?.at;
  }

  /**
   * Fires due timers in (time, arming order) until `endMs`, calling `settle`
   * first and after each so everything a timer started is over before the
   * clock moves again, then moves to `endMs` and settles once more. Returns
   * the number of timers fired.
   */
  async runUntil(endMs: number, settleFn: () => Promise<void> = settle): Promise<number> {
    let fired = 0;
    await settleFn();
    for (;;) {
      const e = this.popDue(endMs);
      if (!e) break;
      if (e.at > this.t) this.t = e.at;
      e.fn();
      fired++;
      this.fired++;
      await settleFn();
    }
    if (endMs > this.t) this.t = endMs;
    await settleFn();
    return fired;
  }

  /** runUntil(now + ms). */
  advance(ms: number, settleFn: () => Promise<void> = settle): Promise<number> {
    return this.runUntil(this.t + ms, settleFn);
  }

  /**
   * Moves time one due timer at a time (settling after each) until `done()`
   * holds, and resolves with the time it first held; rejects, naming `what`,
   * when `limitMs` of virtual time passes first. The condition is looked at
   * before time moves and after every timer.
   */
  async advanceUntil(what: string, done: () => boolean, limitMs: number, settleFn: () => Promise<void> = settle): Promise<number> {
    const end = this.t + limitMs;
    await settleFn();
    for (;;) {
      if (done()) return this.t;
      const e = this.popDue(end);
      if (!e) break;
      if (e.at > this.t) this.t = e.at;
      e.fn();
      this.fired++;
      await settleFn();
    }
    this.t = Math.max(this.t, end);
    await settleFn();
    if (done()) return this.t;
    throw new Error(`${what}: not within ${limitMs} virtual ms`);
  }

  private dropDone(): void {
    while (this.heap.length > 0 && (this.heap[0] as Entry).done) this.pop();
  }

  private popDue(endMs: number): Entry | undefined {
    this.dropDone();
    const top = this.heap[0];
    if (top === undefined || !(top.at <= endMs)) return undefined;
    this.pop();
    top.done = true;
    this.live--;
    return top;
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
  private readonly timers = new Set<Timer>();

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
    const handle = this.vc.setTimer(() => {
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

/**
 * Work under way that node lists (process.getActiveResourcesInfo()):
 * file-system requests (callback and promise APIs, a FileHandle's close),
 * handle closes, and a setImmediate not yet run. An idle open FileHandle, a
 * watch or a socket is not listed, only a request in flight. (crypto and zlib
 * jobs are not listed at all; the agent uses only their synchronous forms.)
 */
const IN_FLIGHT = /^(FSReq|FileHandle|CloseReq|Immediate$)/;

/**
 * Everything a fired timer started is over: its promise chains, the file I/O
 * they wait on, and what that I/O's callbacks start in turn. One round is one
 * turn of the event loop: a setImmediate, so every microtask and nextTick
 * queued before it has run, and the poll phase has delivered what the thread
 * pool and the kernel finished (fs.watch events among them). It ends after
 * the first round that leaves nothing in flight (IN_FLIGHT): no request of
 * the thread pool, and no setImmediate a callback of this round queued behind
 * ours. An idle timer (most are) costs one round.
 *
 * What it cannot see, and why that is fine here: a promise waiting on a
 * virtual timer (the clock moving is what ends it), and sockets (the daemon
 * in-process talks to the fake cloud over a wire, not a socket; a test that
 * uses the local API's socket awaits its own answers).
 *
 * node:timers' setImmediate, not the global one: under jest the global is a
 * wrapper that costs twice as much per turn, and a rig takes thousands.
 */
export async function settle(): Promise<void> {
  // Bounded: something else in the worker that keeps a request or an immediate in flight for good
  // (a suite before this one in the same jest worker) must not hold the clock still forever.
  for (let round = 0; round < SETTLE_MAX_ROUNDS; round++) {
    await new Promise<void>((resolve) => nextTurn(resolve));
    if (!process.getActiveResourcesInfo().some((r) => IN_FLIGHT.test(r))) return;
  }
}

/** Rounds of settle() at most: far more than any timer's file I/O takes (a few to a few dozen). */
const SETTLE_MAX_ROUNDS = 5_000;

/** A few turns of the event loop: the unit tests' settle (FakeClock), for promise chains with no real I/O. */
export async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => nextTurn(r));
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
