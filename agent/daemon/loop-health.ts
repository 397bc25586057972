// The watchdog's question, as a pure function: is something armed, and is it
// not long overdue? Offline-but-retrying is healthy; a wedged loop (nothing
// armed, or a request or timer far past its time) is not, so systemd kills us.
import { ATTEMPT_GUARD_MS } from '../lib/timing.js';

/** Slack past a due timer before the loop counts as wedged. */
export const HEALTH_GRACE_MS = 60_000;

export interface LoopView {
  now: number;
  /** A device check in flight since. */
  checkingSince: number | undefined;
  scheduler: { running: boolean; nextAt: number | undefined; probeAt: number | undefined; inFlightSince: number | undefined } | undefined;
  /** When the armed device check is due. */
  checkAt: number | undefined;
}

export function loopHealthy(v: LoopView): boolean {
  const overdue = (since: number): boolean => v.now - since > ATTEMPT_GUARD_MS + HEALTH_GRACE_MS;
  if (v.checkingSince !== undefined && overdue(v.checkingSince)) return false;
  const s = v.scheduler;
  if (s?.running) {
    if (s.inFlightSince !== undefined) return !overdue(s.inFlightSince);
    return s.nextAt !== undefined && v.now <= Math.min(s.nextAt, s.probeAt ?? Infinity) + HEALTH_GRACE_MS;
  }
  if (v.checkingSince !== undefined) return true;
  return v.checkAt !== undefined && v.now <= v.checkAt + HEALTH_GRACE_MS;
}
