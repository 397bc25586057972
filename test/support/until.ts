// Waiting for a condition, never for a fixed time (docs/testing.md, "Agent
// time, not real time"). `until` looks at real I/O (a socket, a file, a child
// process, the fake cloud's journal) until the condition holds; given a
// FakeClock it turns agent time a step between looks. Its real-time limit is a
// bound against a hang, generous on a loaded machine: no test judges how long
// the wait took.
import type { FakeClock } from './fake-clock.js';

export interface UntilOptions {
  /** Turns this clock by `stepMs` agent ms between looks (default: agent time stands still). */
  clock?: FakeClock;
  /** Agent ms a turn (default 1). */
  stepMs?: number;
  /** Agent ms the clock may turn before the condition is called never met (default: no limit but the hang bound). */
  agentMs?: number;
  /** Real ms before the wait is called hung (default 10 000). */
  hangMs?: number;
  /** Real ms between looks (default 5; 0 lets only pending I/O callbacks run). */
  everyMs?: number;
}

/** Resolves with `probe`'s first value that is neither undefined nor false. */
export async function until<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, o: UntilOptions = {}): Promise<T> {
  const hangMs = o.hangMs ?? 10_000;
  const everyMs = o.everyMs ?? 5;
  const stepMs = o.stepMs ?? 1;
  const deadline = Date.now() + hangMs;
  let turned = 0;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`hung: no ${what} after ${hangMs} real ms${o.clock ? ` (${turned} agent ms turned)` : ''}`);
    if (o.clock !== undefined && o.agentMs !== undefined && turned >= o.agentMs) throw new Error(`never: no ${what} within ${o.agentMs} agent ms`);
    await new Promise((r) => (everyMs > 0 ? setTimeout(r, everyMs) : setImmediate(r))); // a poll's pace: the condition ends the wait
    if (o.clock !== undefined) {
      await o.clock.advance(stepMs);
      turned += stepMs;
    }
  }
}

/**
 * `step()`'s result, or a failure saying it hung once it has run `hangMs`
 * real ms: a bound against a hang (a child that never exits, a wait with no
 * end) inside a soak or crash suite, never a speed test. Generous: a loaded
 * machine is slow, not hung. `detail` adds what the suite knows (its figures).
 */
export async function notHung<T>(what: string, hangMs: number, step: () => Promise<T>, detail?: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`hung: ${what} not over after ${hangMs / 1000} real s${detail ? `; ${detail()}` : ''}`)), hangMs);
  });
  try {
    return await Promise.race([step(), hung]);
  } finally {
    clearTimeout(timer);
  }
}
