// systemd's watchdog, fed only while the daemon's own health check passes.
import type { Timer } from '../../lib/clock.js';
import type { DaemonUnit } from '../../core/unit.js';
import type { SystemdNotifier } from './notify.js';

/** Arms a repeating real-time timer; the returned handle stops it. */
export type IntervalFn = (fn: () => void, ms: number) => Timer;

const realInterval: IntervalFn = (fn, ms) => {
  const handle = setInterval(fn, ms);
  // The watchdog alone must never keep a stopping daemon alive.
  handle.unref();
  return { cancel: () => clearInterval(handle) };
};

/**
 * Feeds systemd's watchdog from a semantic health check. The interval is
 * REAL time (systemd counts real time; --time-scale does not apply), and
 * WATCHDOG=1 goes out only while isHealthy() says the loop is alive and a
 * heartbeat is scheduled: a wedged daemon stops pinging and systemd kills
 * and restarts it, which is the point.
 */
export class Watchdog implements DaemonUnit {
  readonly name = 'watchdog';
  private timer: Timer | undefined;

  constructor(
    private readonly notifier: SystemdNotifier,
    private readonly isHealthy: () => boolean,
    private readonly setIntervalFn: IntervalFn = realInterval,
  ) {}

  get running(): boolean {
    return this.timer !== undefined;
  }

  start(): void {
    const ms = this.notifier.watchdogIntervalMs;
    if (this.timer !== undefined || !this.notifier.enabled || ms === undefined) return;
    this.timer = this.setIntervalFn(() => this.tick(), ms);
    // systemd's countdown started when it forked us, so ping now rather than
    // half a period later.
    this.tick();
  }

  async stop(): Promise<void> {
    this.timer?.cancel();
    this.timer = undefined;
  }

  private tick(): void {
    let healthy = false;
    try {
      healthy = this.isHealthy();
    } catch {
      // A health check that throws is itself a sign of a broken loop.
    }
    if (healthy) void this.notifier.watchdog();
  }
}
