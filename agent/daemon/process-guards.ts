// How the daemon process meets the unexpected: signals during its final
// exit, and an exception nothing caught. Kept apart from run.ts so both can
// be tested without killing the test runner.
import type { Logger } from '../lib/logger.js';

export const DAEMON_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

/**
 * For the last moments of a clean stop. With no listener Node applies the
 * default action, and a SIGHUP's is to die with 129: systemd (and status)
 * would then see a crash where there was a clean exit. A no-op listener
 * keeps the signal handled and does nothing.
 */
export function ignoreSignals(proc: NodeJS.EventEmitter, signals: readonly string[] = DAEMON_SIGNALS): void {
  for (const s of signals) {
    proc.removeAllListeners(s);
    proc.on(s, () => {});
  }
}

/**
 * An uncaught exception is a bug, and the process state can no longer be
 * trusted: log it as one JSON line (journald keeps it with the unit, where a
 * multi-line stack on stderr would be split into many lines), run the
 * synchronous cleanup, exit 1 so systemd restarts us.
 */
export function crashHandler(logger: Logger, cleanup: () => void, exit: (code: number) => void): (err: unknown) => void {
  let crashed = false;
  return (err) => {
    if (crashed) return;
    crashed = true;
    const e = err instanceof Error ? err : new Error(String(err));
    logger.error({ err: e }, `uncaught exception (a bug); exiting: ${e.message}`);
    try {
      cleanup();
    } catch {
      // Exiting anyway: a failed cleanup must not turn into a second crash report.
    }
    logger.flush();
    exit(1);
  };
}
