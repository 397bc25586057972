// The referee judges an agent's heartbeat discipline from the service's side.
//
// tooSoon: two consecutive heartbeat *attempts* that reached the fake (whatever
//   their answer) under 60 s apart. Tolerance: max(50 ms, 2 real ms) of agent
//   time on real time, because at --time-scale N one real millisecond of timer
//   jitter is N agent ms; none on a virtual clock (the daemon in-process,
//   the fleet). The tolerance is the only slack given.
// tooLate: a closed gap of more than 300 s between two consecutive *successful*
//   (204) heartbeats during which the fake served that device normally the
//   whole time: no refused connections, no fault hit on a request of that
//   device (or on a request no device could be named for), no revoke.
//   An open gap (no later success yet) never counts.
// missingVersion: requests attributed to the device without x-client-version.

export const MIN_SPACING_MS = 60_000;
export const MAX_SPACING_MS = 300_000;

export interface HeartbeatAttempt {
  t: number;
  /** 0 while unanswered or when the connection was reset. */
  status: number;
}

export interface RefereeReport {
  heartbeats: number;
  successfulHeartbeats: number;
  tooSoon: number;
  tooLate: number;
  missingVersion: number;
  lastHeartbeatAt?: number;
  /** Agent-time ms of every heartbeat attempt, in arrival order. */
  heartbeatTimes: number[];
}

interface Interval {
  from: number;
  to: number;
}

interface DeviceLog {
  attempts: HeartbeatAttempt[];
  missingVersion: number;
  disturbances: Interval[];
}

export class Referee {
  private readonly logs = new Map<string, DeviceLog>();
  private readonly global: Interval[] = [];
  private refusedSince: number | undefined;

  /** `toleranceMs`: the clock's (state.ts), the slack for timer jitter. */
  constructor(readonly toleranceMs: number, private readonly now: () => number) {}

  private log(deviceId: string): DeviceLog {
    let l = this.logs.get(deviceId);
    if (!l) {
      l = { attempts: [], missingVersion: 0, disturbances: [] };
      this.logs.set(deviceId, l);
    }
    return l;
  }

  /** Returns the live attempt; the caller fills in its status when it answers. */
  heartbeat(deviceId: string, t: number): HeartbeatAttempt {
    const a = { t, status: 0 };
    this.log(deviceId).attempts.push(a);
    return a;
  }

  request(deviceId: string, hasVersion: boolean): void {
    if (!hasVersion) this.log(deviceId).missingVersion++;
  }

  /** The fake did not serve this device normally during [from, to] (deviceId undefined: nobody). */
  disturbed(deviceId: string | undefined, from: number, to = from): void {
    (deviceId === undefined ? this.global : this.log(deviceId).disturbances).push({ from, to });
  }

  refused(): void {
    this.refusedSince ??= this.now();
  }

  accepted(): void {
    if (this.refusedSince === undefined) return;
    this.global.push({ from: this.refusedSince, to: this.now() });
    this.refusedSince = undefined;
  }

  report(deviceId: string): RefereeReport {
    const l = this.logs.get(deviceId) ?? { attempts: [], missingVersion: 0, disturbances: [] };
    const times = l.attempts.map((a) => a.t);
    let tooSoon = 0;
    for (let i = 1; i < times.length; i++) {
      if (times[i]! - times[i - 1]! < MIN_SPACING_MS - this.toleranceMs) tooSoon++;
    }
    const ok = l.attempts.filter((a) => a.status === 204).map((a) => a.t);
    let tooLate = 0;
    for (let i = 1; i < ok.length; i++) {
      const from = ok[i - 1]!;
      const to = ok[i]!;
      if (to - from > MAX_SPACING_MS && !this.disturbedWithin(l, from, to)) tooLate++;
    }
    const report: RefereeReport = {
      heartbeats: times.length,
      successfulHeartbeats: ok.length,
      tooSoon,
      tooLate,
      missingVersion: l.missingVersion,
      heartbeatTimes: times,
    };
    if (times.length > 0) report.lastHeartbeatAt = times[times.length - 1]!;
    return report;
  }

  private disturbedWithin(l: DeviceLog, from: number, to: number): boolean {
    const overlaps = (i: Interval) => i.from <= to && i.to >= from;
    if (this.refusedSince !== undefined && this.refusedSince <= to) return true;
    return l.disturbances.some(overlaps) || this.global.some(overlaps);
  }
}
