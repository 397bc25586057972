// All agent scheduling goes through a Clock so that tests can play hours in
// milliseconds and the simulator can run at --time-scale N. Times are in
// *agent* milliseconds; `scale` converts them to real time where a real
// timer or socket timeout must be armed.

export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Monotonic agent time in ms (arbitrary origin). Never jumps with NTP. */
  now(): number;
  /** Wall-clock epoch ms: for reports only, never for scheduling. */
  wallNow(): number;
  /** Run fn after `ms` agent milliseconds. */
  setTimer(fn: () => void, ms: number): Timer;
  /** Agent ms per real ms (1 in production). */
  readonly scale: number;
}

const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * Production clock: CLOCK_MONOTONIC scaled by `scale` (--time-scale).
 * process.hrtime is the same monotonic clock as performance.now() but with a
 * system-wide origin (boot), so a time written to the runtime dir by one
 * process still means something to the process systemd restarts after it.
 */
export class SystemClock implements Clock {
  constructor(readonly scale = 1) {}

  now(): number {
    return (Number(process.hrtime.bigint()) / 1e6) * this.scale;
  }

  wallNow(): number {
    return Date.now();
  }

  setTimer(fn: () => void, ms: number): Timer {
    // setTimeout fires at once for delays past 2^31-1 ms (~24.8 days): chain shorter ones.
    let handle: NodeJS.Timeout;
    const arm = (realMs: number): void => {
      const step = Math.min(realMs, MAX_TIMEOUT_MS);
      handle = setTimeout(() => (realMs > step ? arm(realMs - step) : fn()), step);
    };
    arm(Math.max(0, ms / this.scale));
    return { cancel: () => clearTimeout(handle) };
  }
}

/** Resolves after `ms` agent ms, or rejects with the signal's reason when aborted. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      timer.cancel();
      reject(signal?.reason);
    };
    const timer = clock.setTimer(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
