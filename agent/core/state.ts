// The daemon's state as data, below every feature folder: the controller
// fills it, the status document and the event bus carry it, and the outbox,
// channel and upload units read it (they work only while online). Nothing
// secret belongs here.
import type { RateLimitInfo } from '../lib/errors.js';

export type DaemonState = 'starting' | 'online' | 'offline' | 'rate-limited' | 'paused' | 'needs-pairing' | 'stopping' | 'stopped';

export const DAEMON_STATES: readonly DaemonState[] = [
  'starting',
  'online',
  'offline',
  'rate-limited',
  'paused',
  'needs-pairing',
  'stopping',
  'stopped',
];

export interface Moment {
  /** Wall-clock ISO time (a report only: the wall clock may be wrong before NTP). */
  at: string;
  /** Agent-monotonic ms (boot origin, times the time scale). */
  monotonic: number;
}

export interface DaemonSnapshot {
  state: DaemonState;
  /** Why we are in this state, one line. */
  reason: string;
  since: Moment;
  pid: number;
  /** Process start time in clock ticks from /proc/<pid>/stat, so a reused pid is not mistaken for us. */
  procStart?: string;
  started: Moment;
  device?: { id: string; name?: string; status?: string };
  project?: { id?: string; name?: string };
  lastHeartbeat?: Moment & { result: string; status?: number; error?: string };
  nextHeartbeat?: Moment;
  /** In needs-pairing: when credentials are checked again. */
  nextCheck?: Moment;
  consecutiveFailures: number;
  rateLimit?: RateLimitInfo;
  clockOffsetMs?: number;
  /**
   * While certificates cannot be checked because this unit's clock is off:
   * "this unit's clock is 3 days behind the service; certificates cannot be
   * checked until the time is set (NTP)". Gone once a request goes through.
   */
  clockProblem?: string;
  firmwareVersion: string;
  profile?: string;
  agentVersion: string;
  timeScale: number;
  updated: Moment;
}
