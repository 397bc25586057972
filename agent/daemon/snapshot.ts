// The daemon's live state as data: what the controller exposes, what
// live-status.ts writes to the runtime dir, what `c2c-agent status` reads and
// what systemd's STATUS= line says. Nothing secret belongs here.
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
  firmwareVersion: string;
  profile?: string;
  agentVersion: string;
  timeScale: number;
  updated: Moment;
}

/** "2m13s", "45s", "1h02m": agent time. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** One line for `systemctl status`: "online; cam-07 in project Testbed; next heartbeat in 2m13s". */
export function statusLine(s: DaemonSnapshot, now: number): string {
  const parts: string[] = [s.state];
  if (s.state !== 'online' && s.reason) parts[0] = `${s.state} (${s.reason})`;
  if (s.device) {
    const who = s.device.name ?? s.device.id;
    parts.push(s.project?.name ? `${who} in project ${s.project.name}` : who);
  }
  if (s.nextHeartbeat) {
    const verb = s.state === 'online' || s.state === 'paused' ? 'next heartbeat' : 'retry';
    parts.push(`${verb} in ${formatDuration(s.nextHeartbeat.monotonic - now)}`);
  } else if (s.nextCheck) {
    parts.push(`next check in ${formatDuration(s.nextCheck.monotonic - now)}`);
  }
  return parts.join('; ');
}
