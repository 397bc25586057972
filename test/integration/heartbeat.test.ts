// 30+ agent-minutes of the real bundle against the fake cloud at --time-scale
// 60: a kill -9 right after a heartbeat with an immediate restart on the same
// runtime dir, a five-minute outage, then a SIGTERM restart right after a
// heartbeat. The fake's referee judges spacing.
import { describe, expect, it } from '@jest/globals';
import { useCloudAndAgentDirs } from './setup.js';
import { startAgent, waitFor, type AgentProcess } from './agent-process.js';

const SCALE = 60;
/** Below 1.0.0: the generic profile, the default 60..270 s bounds. */
const FIRMWARE = '0.9.3';
const MIN = 60_000; // one agent minute in agent ms
const realMs = (agentMs: number): number => agentMs / SCALE;

const fx = useCloudAndAgentDirs(SCALE);

describe('c2c-agent run, as a process, for 30+ agent-minutes', () => {
  it('keeps the 60 s / 300 s promises through a kill -9 restart and an outage', async () => {
    const { cloud, dirs } = fx;
    const device = cloud.devices[0]!;
    const ref = () => cloud.referee(device.id);
    const start = (): AgentProcess => startAgent({ apiUrl: cloud.url, token: device.accessToken, dirs, timeScale: SCALE, env: { C2C_FIRMWARE_VERSION: FIRMWARE } });
    let agent = start();
    const why = (): string => `\nreferee: ${JSON.stringify(ref())}\nagent output:\n${agent.output()}`;

    try {
      await waitFor('two heartbeats', () => ref().successfulHeartbeats >= 2, realMs(2 * 5 * MIN) + 5_000);

      // The restart case: kill -9 the moment the fake records a heartbeat
      // attempt, start again at once on the same runtime dir. The new process
      // must wait out the 60 s from the attempt the old one made.
      const seen = ref().heartbeats;
      await waitFor('the next heartbeat attempt', () => ref().heartbeats > seen, realMs(5 * MIN) + 5_000, 2);
      agent.child.kill('SIGKILL');
      await agent.exited;
      agent = start();
      await waitFor('a heartbeat from the restarted agent', () => ref().heartbeats > seen + 1, realMs(5 * MIN) + 10_000);
      const times = ref().heartbeatTimes;
      // Waited out, but not forgotten: the 300 s promise holds across the restart.
      expect(times[seen + 1]! - times[seen]!).toBeGreaterThanOrEqual(MIN - 2 * SCALE);
      expect(times[seen + 1]! - times[seen]!).toBeLessThanOrEqual(5 * MIN);

      // An outage of five agent minutes in the middle of the run.
      await waitFor('agent minute 12', () => cloud.now() >= 12 * MIN, realMs(20 * MIN));
      cloud.control.refuseConnections();
      await new Promise((r) => setTimeout(r, realMs(5 * MIN)));
      const okBefore = ref().successfulHeartbeats;
      await cloud.control.acceptConnections();
      const backAt = cloud.now();
      // Back online: a heartbeat as soon as backoff and the 60 s rule allow,
      // and certainly within the 300 s the service gives a camera.
      await waitFor('a successful heartbeat after the outage', () => ref().successfulHeartbeats > okBefore, realMs(5 * MIN) + 5_000);
      expect(cloud.now() - backAt).toBeLessThanOrEqual(5 * MIN);

      // And systemctl restart (SIGTERM, then a new process) right after a heartbeat.
      const seen2 = ref().heartbeats;
      await waitFor('a heartbeat attempt to restart after', () => ref().heartbeats > seen2, realMs(5 * MIN) + 5_000, 2);
      agent.child.kill('SIGTERM');
      expect((await agent.exited).code).toBe(0);
      agent = start();

      await waitFor('agent minute 32', () => cloud.now() >= 32 * MIN, realMs(25 * MIN));
      expect(ref().heartbeats).toBeGreaterThan(seen2 + 1);
    } catch (err) {
      throw new Error(`${(err as Error).message}${why()}`);
    }

    const r = ref();
    expect({ tooSoon: r.tooSoon, tooLate: r.tooLate, missingVersion: r.missingVersion }).toEqual({ tooSoon: 0, tooLate: 0, missingVersion: 0 });
    // 32 agent minutes with a 5 minute gap: at least one heartbeat per five minutes otherwise.
    expect(r.successfulHeartbeats).toBeGreaterThanOrEqual(6);
    // and never more often than once a minute (the referee's count, independently).
    expect(r.heartbeats).toBeLessThanOrEqual(33);
    expect(agent.child.exitCode).toBeNull();
    // Every request from every process (the device check, heartbeats, health
    // probes, across the restarts) named the configured firmware.
    expect(cloud.journal.length).toBeGreaterThan(r.heartbeats);
    expect(cloud.journal.filter((e) => e.clientVersion !== FIRMWARE).map((e) => `${e.method} ${e.path} ${e.clientVersion}`)).toEqual([]);
  }, 90_000);
});
