// The fleet's figures, and the thundering-herd figure defined once here.
//
// Herd figure (after a mass restart): heartbeat arrivals at the service (every
// heartbeat attempt that reached the fake cloud, whatever its answer), counted
// per second of virtual time. The rate at second s is the number of arrivals
// in the trailing window of HERD_WINDOW_S seconds ending with s, divided by
// HERD_WINDOW_S. The figure is the highest such rate in the HERD_SPAN_S
// seconds after the power cut, divided by the run's mean rate (all heartbeat
// arrivals / the run's length in seconds). A 10 s window: wide enough that
// Poisson noise alone (about 6 arrivals a second for 1,000 units) does not
// make the figure (1 s bins would put a quiet day's peak above 2), narrow
// enough that a herd bunched into a few seconds shows in full. The same
// statistic over a quiet stretch before the cut is reported beside it, as the
// noise floor; so are the 1 s and 60 s windows.
import type { FleetRun } from './fleet.js';

export const HERD_WINDOW_S = 10;
export const HERD_SPAN_S = 15 * 60;
const ALT_WINDOWS_S = [1, 60];

export interface HerdFigure {
  cutAtS: number;
  /** Peak smoothed rate after the cut over the run's mean rate (the figure). */
  peakOverMean: number;
  peakPerS: number;
  peakAtS: number;
  /** The same statistic over the HERD_SPAN_S before the quiet margin preceding the cut. */
  quietPeakOverMean: number | undefined;
  /** peakOverMean with other windows, for context. */
  byWindow: Record<string, number>;
}

export interface FleetReport {
  units: number;
  hours: number;
  seed: number;
  faults: string;
  agentHours: number;
  heartbeats: number;
  successfulHeartbeats: number;
  violations: { tooSoon: number; tooLate: number; missingVersion: number; total: number };
  refreshes: number;
  requests: number;
  onlinePercent: number;
  needsPairingAtEnd: number;
  meanHeartbeatsPerS: number;
  herd: HerdFigure[];
  herdDefinition: string;
  plan: { outages: number; cloudFaults: number; powerCuts: number; restarts: number; networkLosses: number; clockSteps: number };
  timersFired: number;
  wallSeconds: number;
  /** The verdict: true only when every invariant held (see fleetVerdict). */
  ok: boolean;
}

export const HERD_DEFINITION = `heartbeat arrivals at the service per second, averaged over a trailing ${HERD_WINDOW_S} s window; the peak in the ${HERD_SPAN_S / 60} minutes after the power cut divided by the run's mean arrival rate`;

function peakRate(bins: Int32Array, fromS: number, toS: number, windowS: number): { rate: number; at: number } {
  let best = { rate: 0, at: fromS };
  let sum = 0;
  for (let s = fromS - windowS + 1; s <= toS; s++) {
    sum += bins[s] ?? 0;
    if (s - windowS >= fromS - windowS + 1) sum -= bins[s - windowS] ?? 0;
    if (s >= fromS && sum / windowS > best.rate) best = { rate: sum / windowS, at: s };
  }
  return best;
}

export function herdFigures(run: FleetRun): { mean: number; herd: HerdFigure[] } {
  const seconds = Math.ceil(run.durationMs / 1000);
  const bins = new Int32Array(seconds + 1);
  let total = 0;
  for (const r of run.referee) {
    for (const t of r.heartbeatTimes) {
      bins[Math.min(seconds, Math.floor(t / 1000))]!++;
      total++;
    }
  }
  const mean = total / (run.durationMs / 1000);
  const herd = run.plan.powerCuts.map((cut) => {
    const from = Math.floor(cut.at / 1000);
    const to = Math.min(seconds, from + HERD_SPAN_S);
    const peak = peakRate(bins, from, to, HERD_WINDOW_S);
    const quietTo = from - 5 * 60;
    const quietFrom = quietTo - HERD_SPAN_S;
    const quiet = quietFrom >= HERD_WINDOW_S ? peakRate(bins, quietFrom, quietTo, HERD_WINDOW_S).rate / mean : undefined;
    const byWindow: Record<string, number> = {};
    for (const w of ALT_WINDOWS_S) byWindow[`${w}s`] = round(peakRate(bins, from, to, w).rate / mean);
    return { cutAtS: from, peakOverMean: round(peak.rate / mean), peakPerS: round(peak.rate), peakAtS: peak.at, quietPeakOverMean: quiet === undefined ? undefined : round(quiet), byWindow };
  });
  return { mean, herd };
}

const round = (x: number): number => Math.round(x * 100) / 100;

/**
 * The fleet's invariants, each broken one named: no violation at the referee,
 * and no unit lost its authorization (no fault in the plan revokes one). The
 * herd figure is reported, not judged.
 */
export function brokenInvariants(r: Pick<FleetReport, 'violations' | 'needsPairingAtEnd'>): string[] {
  const broken: string[] = [];
  if (r.violations.total > 0) broken.push(`${r.violations.total} spacing violation${r.violations.total === 1 ? '' : 's'} at the referee`);
  if (r.needsPairingAtEnd > 0) broken.push(`${r.needsPairingAtEnd} unit${r.needsPairingAtEnd === 1 ? '' : 's'} needing pairing at the end`);
  return broken;
}

/** The last line of the human report: one OK or FAILED, as the simulator's story ends. */
export function verdictLine(r: Pick<FleetReport, 'violations' | 'needsPairingAtEnd'>): string {
  const broken = brokenInvariants(r);
  return broken.length === 0
    ? 'OK: every invariant held (no spacing violation at the referee, every unit still paired)'
    : `FAILED: ${broken.join('; ')}`;
}

export function buildReport(run: FleetRun): FleetReport {
  const sum = (f: (r: FleetRun['referee'][number]) => number): number => run.referee.reduce((a, r) => a + f(r), 0);
  const tooSoon = sum((r) => r.tooSoon);
  const tooLate = sum((r) => r.tooLate);
  const missingVersion = sum((r) => r.missingVersion);
  let refreshes = 0;
  let requests = 0;
  for (const [key, n] of run.stats.answers) {
    requests += n;
    if (key === 'POST /v2/auth/token 200') refreshes += n;
  }
  let online = 0;
  let running = 0;
  for (const d of run.devices) {
    online += d.timeIn.get('online') ?? 0;
    running += d.runningMs;
  }
  const { mean, herd } = herdFigures(run);
  const violations = { tooSoon, tooLate, missingVersion, total: tooSoon + tooLate + missingVersion };
  const needsPairingAtEnd = run.devices.filter((d) => d.currentState === 'needs-pairing').length;
  const events = (k: string): number => run.plan.unitEvents.filter((e) => e.kind === k).length;
  return {
    units: run.options.units,
    hours: run.options.hours,
    seed: run.options.seed,
    faults: run.options.faults,
    agentHours: round(running / 3_600_000),
    heartbeats: sum((r) => r.heartbeats),
    successfulHeartbeats: sum((r) => r.successfulHeartbeats),
    violations,
    refreshes,
    requests,
    onlinePercent: running > 0 ? round((100 * online) / running) : 0,
    needsPairingAtEnd,
    meanHeartbeatsPerS: round(mean),
    herd,
    herdDefinition: HERD_DEFINITION,
    plan: {
      outages: run.plan.outages.length,
      cloudFaults: run.plan.cloudFaults.length,
      powerCuts: run.plan.powerCuts.length,
      restarts: events('restart'),
      networkLosses: events('network'),
      clockSteps: events('clock-step'),
    },
    timersFired: run.timersFired,
    wallSeconds: round(run.wallMs / 1000),
    ok: brokenInvariants({ violations, needsPairingAtEnd }).length === 0,
  };
}

export function formatReport(r: FleetReport): string {
  const n = (x: number): string => x.toLocaleString('en-US');
  const lines = [
    `fleet: ${n(r.units)} units x ${r.hours} h (seed ${r.seed}, faults ${r.faults}), ${n(Math.round(r.agentHours))} agent-hours`,
    `faults: ${r.plan.outages} service outage(s), ${r.plan.cloudFaults} cloud fault rule(s), ${r.plan.powerCuts} power cut(s), ${n(r.plan.restarts)} process restarts, ${n(r.plan.networkLosses)} unit network losses, ${n(r.plan.clockSteps)} clock steps`,
    `heartbeats at the service: ${n(r.heartbeats)} (${n(r.successfulHeartbeats)} accepted), mean ${r.meanHeartbeatsPerS}/s; requests ${n(r.requests)}; token refreshes ${n(r.refreshes)}`,
    `spacing violations (referee): ${r.violations.total} (too soon ${r.violations.tooSoon}, too late ${r.violations.tooLate}, missing x-client-version ${r.violations.missingVersion})`,
    `online: ${r.onlinePercent}% of agent time; needing pairing at the end: ${r.needsPairingAtEnd}`,
  ];
  for (const h of r.herd) {
    const quiet = h.quietPeakOverMean === undefined ? '' : `; the same over a quiet stretch before it: ${h.quietPeakOverMean}`;
    lines.push(
      `herd after the power cut at ${fmtTime(h.cutAtS)}: ${h.peakOverMean} (peak ${h.peakPerS}/s at ${fmtTime(h.peakAtS)}${quiet}; 1 s window ${h.byWindow['1s']}, 60 s window ${h.byWindow['60s']})`,
    );
  }
  lines.push(`herd figure: ${r.herdDefinition}`);
  lines.push(`wall time: ${r.wallSeconds} s (${n(r.timersFired)} timers fired)`);
  lines.push('', verdictLine(r));
  return lines.join('\n');
}

function fmtTime(s: number): string {
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:${String(sec).padStart(2, '0')}`;
}
