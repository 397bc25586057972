// The day's faults, drawn from the seed before the run starts: the same seed
// gives the same plan. Two kinds: windows the fake cloud applies itself
// (5xx, 429 storms, stalls, resets: its own fault set) and events the driver
// plays on the virtual clock (service outages, power cuts, process restarts,
// a unit's own network lost, wall-clock steps).
import type { Fault } from '../fake-cloud/index.js';
import { seeded } from '../support/seeded.js';

export type FaultLevel = 'light' | 'heavy';

const S = 1000;
const MIN = 60 * S;
const HOUR = 60 * MIN;

/** All units lose power together and boot within this long after it returns. */
export const BOOT_SPREAD_MS = MIN;
/** The window after a power cut kept free of outages and storms, so the herd figure measures the reboot alone. */
export const QUIET_AROUND_CUT = { beforeMs: 5 * MIN, afterMs: 20 * MIN };

export interface PowerCut {
  at: number;
  /** Per unit: when it boots (power back, kernel up), and when systemd starts the agent. */
  boots: Array<{ bootAt: number; startAt: number; wallErrorMs: number; ntpAt: number }>;
}

export interface UnitEvent {
  at: number;
  unit: number;
  kind: 'restart' | 'network' | 'clock-step';
  /** restart: down for; network: lost for; clock-step: the new wall-clock error. */
  value: number;
}

export interface FaultPlan {
  level: FaultLevel;
  cloudFaults: Fault[];
  outages: Array<{ from: number; to: number }>;
  powerCuts: PowerCut[];
  unitEvents: UnitEvent[];
  /** Per unit: when its agent first starts (the fleet is already deployed: started over a few minutes). */
  firstStarts: number[];
  /** Per unit: how long its machine had been up at the start (days: no unit is just booted). */
  uptimes: number[];
}

export function planFaults(o: { seed: number; units: number; durationMs: number; level: FaultLevel }): FaultPlan {
  const r = seeded(o.seed ^ 0x5eed);
  const { units, durationMs: T, level } = o;
  const heavy = level === 'heavy';
  const between = (a: number, b: number): number => a + r() * (b - a);
  const pick = (): number => Math.floor(r() * units);

  const cutTimes = heavy ? [0.4 * T, 0.75 * T] : [0.4 * T];
  const quiet = cutTimes.map((c) => ({ from: c - QUIET_AROUND_CUT.beforeMs, to: c + QUIET_AROUND_CUT.afterMs }));
  const clear = (from: number, to: number): boolean => quiet.every((q) => to <= q.from || from >= q.to);
  /** A window of `length` somewhere in the run, clear of the power cuts' quiet windows (skipped if none fits). */
  const windows = (n: number, minLen: number, maxLen: number): Array<{ from: number; to: number }> => {
    const out: Array<{ from: number; to: number }> = [];
    for (let i = 0; i < n; i++) {
      for (let tries = 0; tries < 50; tries++) {
        const len = between(minLen, maxLen);
        const from = between(10 * MIN, Math.max(10 * MIN, T - len - 5 * MIN));
        if (from + len <= T && clear(from, from + len)) {
          out.push({ from, to: from + len });
          break;
        }
      }
    }
    return out;
  };

  const cloudFaults: Fault[] = [
    // Background noise all day, also around the power cuts.
    { kind: 'status', status: 503, path: '/v2/*', fraction: heavy ? 0.03 : 0.005 },
    { kind: 'reset', path: '/v2/devices/*', fraction: heavy ? 0.01 : 0.002 },
    // A stalled answer: held past the agent's 30 s request timeout. Not on the
    // OAuth paths: a refresh whose answer is lost has spent its single-use
    // refresh token, and the unit needs pairing (by design; see token-source.ts).
    { kind: 'delay', delayMs: 45 * S, path: '/v2/devices/*', fraction: heavy ? 0.01 : 0.002 },
  ];
  for (const w of windows(heavy ? 3 : 1, 10 * MIN, 20 * MIN)) {
    const retryAfter = heavy ? ['30', '120', undefined][Math.floor(r() * 3)] : '60';
    cloudFaults.push({ kind: 'rate-limit', path: '/v2/devices/heartbeat', fraction: heavy ? 0.9 : 0.5, fromMs: w.from, untilMs: w.to, ...(retryAfter !== undefined && { retryAfter }) });
  }
  if (heavy) for (const w of windows(1, 5 * MIN, 5 * MIN)) cloudFaults.push({ kind: 'status', status: 502, path: '/v2/*', fromMs: w.from, untilMs: w.to });

  const outages = windows(heavy ? 3 : 1, heavy ? 5 * MIN : 15 * MIN, heavy ? 30 * MIN : 15 * MIN);

  const powerCuts: PowerCut[] = cutTimes.map((at) => ({
    at,
    boots: Array.from({ length: units }, () => {
      const bootAt = at + r() * BOOT_SPREAD_MS;
      // No RTC on a Pi: the wall clock comes up stale (fake-hwclock) until NTP steps it.
      return { bootAt, startAt: bootAt + between(5 * S, 15 * S), wallErrorMs: -between(0, HOUR), ntpAt: bootAt + between(20 * S, 90 * S) };
    }),
  }));

  const unitEvents: UnitEvent[] = [];
  const restarts = Math.round(units * (heavy ? 0.5 : 0.02));
  for (let i = 0; i < restarts; i++) unitEvents.push({ at: between(5 * MIN, T), unit: pick(), kind: 'restart', value: between(1 * S, 10 * S) });
  const steps = Math.round(units * (heavy ? 0.3 : 0.05));
  for (let i = 0; i < steps; i++) unitEvents.push({ at: between(5 * MIN, T), unit: pick(), kind: 'clock-step', value: (r() < 0.5 ? -1 : 1) * between(S, 2 * HOUR) });
  if (heavy) {
    const losses = Math.round(units * 0.1);
    for (let i = 0; i < losses; i++) unitEvents.push({ at: between(5 * MIN, T), unit: pick(), kind: 'network', value: between(MIN, 20 * MIN) });
  }
  unitEvents.sort((a, b) => a.at - b.at || a.unit - b.unit);

  return {
    level,
    cloudFaults,
    outages,
    powerCuts,
    unitEvents,
    firstStarts: Array.from({ length: units }, () => r() * 4 * MIN),
    uptimes: Array.from({ length: units }, () => between(HOUR, 30 * 24 * HOUR)),
  };
}
