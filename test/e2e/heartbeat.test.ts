// Half an hour and more of the daemon in-process (rig.ts), judged in exact agent
// ms: a kill -9 while a heartbeat is on the wire and an immediate restart on
// the same runtime dir, a five-minute outage, a SIGTERM restart right after a
// heartbeat. Every gap is a number the policy (agent/daemon/heartbeat/policy.ts)
// names, with no slack: the fake cloud's referee runs on the same clock.
import { afterEach, describe, expect, it } from '@jest/globals';
import { MIN_SPACING_MS, SPACING_MARGIN_MS } from '../../agent/lib/timing.js';
import { MINUTE, Rig } from './rig.js';

/** Below 1.0.0: the generic profile, 60..255 s between heartbeats. */
const FIRMWARE = '0.9.3';
const BOUNDS = { minMs: 60_000, maxMs: 255_000 };
/** The least gap between two attempts: from the end of one (here, its start: the wire takes no time) to the next. */
const SPACING = MIN_SPACING_MS + SPACING_MARGIN_MS;
const HEARTBEAT = '/v2/devices/heartbeat';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const gaps = (ts: number[]): number[] => ts.slice(1).map((t, i) => t - ts[i]!);

describe('the daemon in agent time: heartbeats through restarts and an outage', () => {
  it('keeps 62 s and 255 s exactly through a kill -9 mid-heartbeat, an outage and a SIGTERM restart', async () => {
    const r = (rig = await Rig.up({ credentials: 'env' }));
    const ref = () => r.cloud.referee(r.device.id);
    const env = { C2C_FIRMWARE_VERSION: FIRMWARE };
    r.start(env);

    await r.until('two heartbeats', () => ref().successfulHeartbeats >= 2, 10 * MINUTE);
    // Healthy: each gap drawn in the profile's bounds (held to the 62 s spacing), and drawn, not fixed.
    await r.until('five heartbeats', () => ref().successfulHeartbeats >= 5, 20 * MINUTE);
    const healthy = gaps(ref().heartbeatTimes);
    for (const g of healthy) {
      expect(g).toBeGreaterThanOrEqual(Math.max(BOUNDS.minMs, SPACING));
      expect(g).toBeLessThanOrEqual(BOUNDS.maxMs);
    }
    expect(new Set(healthy).size).toBe(healthy.length);

    // kill -9 the moment the next heartbeat reaches the fake: the answer is lost, the attempt
    // record (written before the request) has no end. Started again at once on the same runtime dir.
    const seen = ref().heartbeats;
    r.onRequest((q) => q.path === HEARTBEAT, () => {
      r.kill();
      r.start(env);
    });
    await r.until('a heartbeat from the restarted daemon', () => ref().heartbeats > seen + 1, 10 * MINUTE);
    const killedAt = ref().heartbeatTimes[seen]!;
    // A record without an end counts as ending at the restart, which was at once: exactly one spacing.
    expect(ref().heartbeatTimes[seen + 1]! - killedAt).toBe(SPACING);
    expect(r.cloud.journal.find((e) => e.t === killedAt && e.path === HEARTBEAT)?.status).toBe(204);

    // Five agent minutes of refused connections, a minute later.
    await r.advance(MINUTE);
    r.cloud.control.refuseConnections();
    const okBefore = ref().successfulHeartbeats;
    const downAt = r.now();
    await r.advance(5 * MINUTE);
    await r.cloud.control.acceptConnections();
    const backAt = r.now();
    // Tried during the outage (refused: the fake never saw them), backing off, never closer than the spacing.
    const beats = (): number[] => r.sent.filter((s) => s.path === HEARTBEAT).map((s) => s.t);
    const tried = beats().filter((t) => t >= downAt && t < backAt);
    expect(tried.length).toBeGreaterThanOrEqual(2);
    expect(Math.min(...gaps(beats()))).toBeGreaterThanOrEqual(SPACING);
    // Backing off: each wait longer than the one before.
    const waits = gaps(tried);
    expect(waits).toEqual([...waits].sort((a, b) => a - b));
    // Back: a heartbeat as soon as the backoff allows, within the five minutes a camera is given.
    const okAt = await r.until('a heartbeat accepted after the outage', () => ref().successfulHeartbeats > okBefore, 5 * MINUTE);
    expect(okAt - backAt).toBeLessThanOrEqual(5 * MINUTE);

    // systemctl restart right after a heartbeat: the record has its end, the next one is a spacing after it.
    const seen2 = ref().heartbeats;
    await r.until('a heartbeat to restart after', () => ref().heartbeats > seen2, 5 * MINUTE);
    const lastAt = ref().heartbeatTimes.at(-1)!;
    await r.stop();
    expect(r.notes.filter((n) => n.text === 'STOPPING=1')).toHaveLength(1);
    r.start(env);
    await r.until('the restarted daemon heartbeats', () => ref().heartbeats > seen2 + 1, 5 * MINUTE);
    expect(ref().heartbeatTimes[seen2 + 1]! - lastAt).toBe(SPACING);

    await r.advance(10 * MINUTE);
    const span = r.now();
    expect(span).toBeGreaterThanOrEqual(30 * MINUTE);
    const end = ref();
    // The referee on the same clock: no slack at all.
    expect(r.cloud.journal.length).toBeGreaterThan(end.heartbeats);
    expect({ tooSoon: end.tooSoon, tooLate: end.tooLate, missingVersion: end.missingVersion }).toEqual({ tooSoon: 0, tooLate: 0, missingVersion: 0 });
    expect(Math.min(...gaps(end.heartbeatTimes))).toBeGreaterThanOrEqual(SPACING);
    // Over half an hour with a 5 minute gap: one heartbeat per 255 s otherwise, at most one per 62 s.
    expect(end.successfulHeartbeats).toBeGreaterThanOrEqual(Math.floor((span - 5 * MINUTE) / BOUNDS.maxMs));
    expect(end.heartbeats).toBeLessThanOrEqual(Math.floor(span / SPACING) + 1);
    // Every request from every start (checks, heartbeats, probes) named the configured firmware.
    expect(r.cloud.journal.filter((e) => e.clientVersion !== FIRMWARE).map((e) => `${e.method} ${e.path} ${e.clientVersion}`)).toEqual([]);
    expect(r.state()).toBe('online');
  });

  it('a seed replays the same run, to the ms', async () => {
    const run = async (): Promise<number[]> => {
      const r = await Rig.up({ credentials: 'env', seed: 42 });
      try {
        r.start({ C2C_FIRMWARE_VERSION: FIRMWARE });
        await r.runTo(30 * MINUTE);
        return r.cloud.referee(r.device.id).heartbeatTimes;
      } finally {
        await r.close();
      }
    };
    const first = await run();
    expect(first.length).toBeGreaterThanOrEqual(7);
    expect(await run()).toEqual(first);
  });
});
