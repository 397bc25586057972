// The fleet run: one fake cloud, N units, one virtual clock, the day's fault
// plan played on it. Returns the raw facts; report.ts turns them into figures.
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadProfiles, selectProfile } from '../../agent/config/profiles.js';
import { boundsOf } from '../../agent/daemon/heartbeat/policy.js';
import { createLogger } from '../../agent/lib/logger.js';
import { agentVersion } from '../../agent/cli/version.js';
import { startFakeCloud } from '../fake-cloud/index.js';
import { SimDevice, type FleetContext } from './device.js';
import { planFaults, type FaultLevel, type FaultPlan } from './faults.js';
import { VirtualClock, derive, seeded, settle } from '../support/virtual-clock.js';
import type { WireStats } from './wire.js';

export interface FleetOptions {
  units: number;
  hours: number;
  seed: number;
  faults: FaultLevel;
}

export interface FleetRun {
  options: FleetOptions;
  durationMs: number;
  plan: FaultPlan;
  devices: SimDevice[];
  /** Per unit, as the fake's referee judged it. */
  referee: Array<{ heartbeats: number; successfulHeartbeats: number; tooSoon: number; tooLate: number; missingVersion: number; heartbeatTimes: number[] }>;
  stats: WireStats;
  timersFired: number;
  wallMs: number;
}

/** The firmware every unit reports; the shipped generic profile covers it. */
const FIRMWARE = '1.0.0';
const WALL_START = Date.UTC(2026, 0, 1);
const TOKEN_LIFETIME_S = 8 * 3600;

function scratchRoot(): string {
  // tmpfs where there is one: a token file is written (fsync'd) on every refresh.
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  return mkdtempSync(path.join(base, 'c2c-fleet-'));
}

export async function runFleet(options: FleetOptions): Promise<FleetRun> {
  const started = performance.now();
  const durationMs = Math.round(options.hours * 3_600_000);
  const vc = new VirtualClock();
  const cloud = await startFakeCloud({
    devices: options.units,
    listen: false,
    clock: vc,
    wallStart: WALL_START,
    random: seeded(derive(options.seed, 0xc10d)),
    tokenLifetimeSeconds: TOKEN_LIFETIME_S,
    journalLimit: 1000,
  });
  const profile = selectProfile(loadProfiles(''), FIRMWARE);
  const stats: WireStats = { answers: new Map() };
  const ctx: FleetContext = {
    vc,
    cloud,
    wallStart: WALL_START,
    bounds: boundsOf(profile.heartbeat),
    logger: createLogger('silent'),
    seed: options.seed,
    agentVersion: agentVersion(),
    firmwareVersion: FIRMWARE,
    stats,
    tokenLifetimeSeconds: TOKEN_LIFETIME_S,
  };
  const plan = planFaults({ seed: options.seed, units: options.units, durationMs, level: options.faults });
  const root = scratchRoot();
  try {
    const devices = cloud.devices.map((d, i) => new SimDevice(i, d, ctx, path.join(root, String(i)), plan.uptimes[i] as number));
    for (const d of devices) d.provision();
    play(vc, cloud, devices, plan);
    const timersFired = await vc.runUntil(durationMs, settle);
    for (const d of devices) d.kill();
    const referee = devices.map((d) => cloud.referee(d.seededDevice.id));
    await cloud.close();
    return { options, durationMs, plan, devices, referee, stats, timersFired, wallMs: performance.now() - started };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** Puts every planned event on the virtual clock. */
function play(vc: VirtualClock, cloud: Awaited<ReturnType<typeof startFakeCloud>>, devices: SimDevice[], plan: FaultPlan): void {
  const at = (t: number, fn: () => void): void => void vc.schedule(fn, t - vc.now());
  for (const f of plan.cloudFaults) cloud.control.addFault(f);
  devices.forEach((d, i) => at(plan.firstStarts[i] as number, () => d.start()));
  for (const o of plan.outages) {
    at(o.from, () => cloud.control.refuseConnections());
    at(o.to, () => void cloud.control.acceptConnections());
  }
  // A unit is powered unless a power cut has it off; a restart never starts an unpowered unit.
  const powered = devices.map(() => true);
  for (const cut of plan.powerCuts) {
    at(cut.at, () =>
      devices.forEach((d, i) => {
        d.powerOff();
        powered[i] = false;
      }),
    );
    cut.boots.forEach((b, i) => {
      const d = devices[i] as SimDevice;
      at(b.bootAt, () => {
        powered[i] = true;
        d.boot(b.wallErrorMs);
      });
      at(b.startAt, () => {
        cloud.control.deviceAway(d.seededDevice.id, cut.at, b.startAt);
        if (powered[i]) d.start();
      });
      at(b.ntpAt, () => d.stepWall(0));
    });
  }
  for (const e of plan.unitEvents) {
    const d = devices[e.unit] as SimDevice;
    if (e.kind === 'clock-step') at(e.at, () => d.stepWall(e.value));
    else if (e.kind === 'network') {
      at(e.at, () => {
        d.loseNetwork(e.value);
        cloud.control.deviceAway(d.seededDevice.id, e.at, e.at + e.value);
      });
    } else {
      at(e.at, () => {
        if (!d.running) return;
        d.kill();
        at(e.at + e.value, () => {
          if (powered[e.unit] && !d.running) d.start();
        });
      });
    }
  }
}
