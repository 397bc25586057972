// A small fleet in virtual time, in-process: the shipped controller and token
// source for each unit against the fake cloud, with heavy faults and two
// power cuts. The referee must see no violation, the same seed must give the
// same run, and the herd figure after each power cut must be computed.
import { describe, expect, it } from '@jest/globals';
import { runFleet } from './fleet.js';
import { buildReport, formatReport, HERD_SPAN_S, HERD_WINDOW_S, type FleetReport } from './report.js';

const options = { units: 20, hours: 6, seed: 7, faults: 'heavy' as const };

function withoutWallTime(r: FleetReport): Omit<FleetReport, 'wallSeconds'> {
  const { wallSeconds: _ignored, ...rest } = r;
  return rest;
}

describe('fleet in virtual time', () => {
  it('20 units x 6 h with heavy faults and power cuts: no violation, deterministic, the herd figure computed', async () => {
    const first = await runFleet(options);
    const report = buildReport(first);
    expect(report.violations).toEqual({ tooSoon: 0, tooLate: 0, missingVersion: 0, total: 0 });
    expect(report.needsPairingAtEnd).toBe(0);
    // The run did what it says: heartbeats and refreshes through the shipped code, faults met, units rebooted.
    expect(report.heartbeats).toBeGreaterThan(20 * 6 * 10);
    expect(report.successfulHeartbeats).toBeLessThan(report.heartbeats);
    expect(report.refreshes).toBeGreaterThan(0);
    expect(report.plan.powerCuts).toBe(2);
    expect(report.plan.restarts).toBeGreaterThan(0);
    expect(first.stats.answers.get('POST /v2/devices/heartbeat 429')).toBeGreaterThan(0);
    expect(first.stats.answers.get('POST /v2/devices/heartbeat 503')).toBeGreaterThan(0);
    expect(first.stats.answers.get('POST /v2/devices/heartbeat 0')).toBeGreaterThan(0);
    // Every unit came back after each power cut and heartbeated again.
    const lastCut = first.plan.powerCuts.at(-1)!.at;
    for (const r of first.referee) expect(r.heartbeatTimes.some((t) => t > lastCut)).toBe(true);

    expect(report.herd).toHaveLength(2);
    for (const h of report.herd) {
      expect(Number.isFinite(h.peakOverMean)).toBe(true);
      expect(h.peakOverMean).toBeGreaterThan(0);
      expect(h.peakAtS).toBeGreaterThanOrEqual(h.cutAtS);
      expect(h.peakAtS).toBeLessThanOrEqual(h.cutAtS + HERD_SPAN_S);
    }
    expect(report.herdDefinition).toContain(`${HERD_WINDOW_S} s`);

    const second = buildReport(await runFleet(options));
    expect(withoutWallTime(second)).toEqual(withoutWallTime(report));
  });

  it('the herd figure is the peak smoothed arrival rate after the cut over the mean rate', async () => {
    const run = await runFleet({ units: 5, hours: 1, seed: 3, faults: 'light' });
    const report = buildReport(run);
    const all = run.referee.flatMap((r) => r.heartbeatTimes);
    const mean = all.length / (run.durationMs / 1000);
    const cut = report.herd[0]!;
    // Recount the peak window by hand from the raw arrival times.
    const inWindow = all.filter((t) => t >= (cut.peakAtS - HERD_WINDOW_S + 1) * 1000 && t < (cut.peakAtS + 1) * 1000).length;
    expect(cut.peakPerS).toBeCloseTo(inWindow / HERD_WINDOW_S, 2);
    expect(cut.peakOverMean).toBeCloseTo(inWindow / HERD_WINDOW_S / mean, 1);
  });

  it('ends its report with one verdict line, OK only when every invariant held', async () => {
    const report = buildReport(await runFleet({ units: 5, hours: 1, seed: 3, faults: 'light' }));
    expect(report.ok).toBe(true);
    expect(formatReport(report).split('\n').at(-1)).toBe('OK: every invariant held (no spacing violation at the referee, every unit still paired)');
    const broken = { ...report, violations: { tooSoon: 2, tooLate: 0, missingVersion: 1, total: 3 }, needsPairingAtEnd: 1 };
    expect(formatReport(broken).split('\n').at(-1)).toBe('FAILED: 3 spacing violations at the referee; 1 unit needing pairing at the end');
  });
});
