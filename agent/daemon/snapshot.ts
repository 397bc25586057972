// The daemon's live state built from the controller's facts (the types are
// core/state.ts's): what runtime/status-publisher.ts writes to the runtime
// dir, what `c2c-agent status` reads and what systemd's STATUS= line says.
import type { Clock } from '../lib/clock.js';
import { formatDuration } from '../lib/text.js';
import { PAIR_ADVICE, splitAdvice } from '../lib/advice.js';
import type { Device } from '../api/types.js';
import type { HeartbeatOutcome } from './heartbeat/scheduler.js';
import type { DaemonSnapshot, DaemonState, Moment } from '../core/state.js';
import { isoTime } from '../lib/iso-time.js';

/** What a person must do in needs-pairing, first on the STATUS= line: the advice the reason ends with (fitted to C2C_TOKEN, lib/advice.ts), else pairing. */
export function needsPairingLine(reason: string): string {
  return `needs pairing: ${splitAdvice(reason).advice ?? PAIR_ADVICE}`;
}

/** One line for `systemctl status`: "online; cam-07 in project Testbed; next heartbeat in 2m13s". */
export function statusLine(s: DaemonSnapshot, now: number): string {
  const parts: string[] = [s.state];
  // systemctl status shows one line: keep the reason to its gist.
  const reason = s.reason.length > 60 ? `${s.reason.slice(0, 59)}…` : s.reason;
  if (s.state === 'needs-pairing') parts[0] = needsPairingLine(s.reason);
  // The clock's sentence whole: it is the one thing the person can act on.
  else if (s.clockProblem !== undefined && s.state !== 'online') parts[0] = `${s.state}: ${s.clockProblem}`;
  else if (s.state !== 'online' && reason) parts[0] = `${s.state} (${reason})`;
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

/** The device and project as status shows them: names for people, ids to key on. */
export function deviceFacts(dev: Device): Pick<DaemonSnapshot, 'device' | 'project'> {
  const projectId = dev.project_id ?? dev.project?.id;
  return {
    device: { id: dev.id, ...(dev.name !== undefined && { name: dev.name }), ...(dev.status !== undefined && { status: dev.status }) },
    project: { ...(projectId !== undefined && { id: projectId }), ...(dev.project?.name !== undefined && { name: dev.project.name }) },
  };
}

export function heartbeatFacts(b: HeartbeatOutcome, at: Moment): Pick<DaemonSnapshot, 'lastHeartbeat' | 'rateLimit'> {
  const out: Pick<DaemonSnapshot, 'lastHeartbeat' | 'rateLimit'> = { lastHeartbeat: { ...at, result: b.result } };
  const status = b.meta?.status ?? b.error?.status;
  if (status !== undefined && out.lastHeartbeat) out.lastHeartbeat.status = status;
  if (b.error && out.lastHeartbeat) out.lastHeartbeat.error = b.error.message;
  const rateLimit = b.meta?.rateLimit ?? b.error?.details.rateLimit;
  if (rateLimit) out.rateLimit = rateLimit;
  return out;
}

export interface SnapshotParts {
  state: DaemonState;
  reason: string;
  since: Moment;
  started: Moment;
  consecutiveFailures: number;
  info: { firmwareVersion: string; profile?: string; agentVersion: string; timeScale: number; pid: number; procStart?: string };
  device: Device | undefined;
  lastBeat: HeartbeatOutcome | undefined;
  /** Agent-monotonic; the heartbeat wins when both are set (the check then is only a re-verify). */
  nextHeartbeatAt: number | undefined;
  nextCheckAt: number | undefined;
  /** Certificates cannot be checked: this unit's clock is off (the clock check's words and offset). */
  clock?: { problem: string; offsetMs?: number | undefined } | undefined;
  /** Agent-monotonic time to a Moment; now when omitted. */
  moment: (mono?: number) => Moment;
}

export function buildSnapshot(p: SnapshotParts): DaemonSnapshot {
  const { info } = p;
  const s: DaemonSnapshot = {
    state: p.state,
    reason: p.reason,
    since: p.since,
    pid: info.pid,
    started: p.started,
    consecutiveFailures: p.consecutiveFailures,
    firmwareVersion: info.firmwareVersion,
    agentVersion: info.agentVersion,
    timeScale: info.timeScale,
    updated: p.moment(),
  };
  if (info.procStart !== undefined) s.procStart = info.procStart;
  if (info.profile !== undefined) s.profile = info.profile;
  if (p.device) Object.assign(s, deviceFacts(p.device));
  if (p.lastBeat) Object.assign(s, heartbeatFacts(p.lastBeat, p.moment(p.lastBeat.startedAt)));
  const offset = p.clock?.offsetMs ?? p.lastBeat?.meta?.clockOffsetMs;
  if (offset !== undefined) s.clockOffsetMs = offset;
  if (p.clock !== undefined) s.clockProblem = p.clock.problem;
  if (p.nextHeartbeatAt !== undefined) s.nextHeartbeat = p.moment(p.nextHeartbeatAt);
  else if (p.nextCheckAt !== undefined) s.nextCheck = p.moment(p.nextCheckAt);
  return s;
}

/** An agent-monotonic time with the wall time it really happens: agent ms shrink by the time scale in real time. */
export function momentOf(clock: Clock, mono = clock.now()): Moment {
  const wall = clock.wallNow() + (mono - clock.now()) / clock.scale;
  return { at: isoTime(wall), monotonic: Math.round(mono) };
}
