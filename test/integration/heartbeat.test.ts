// The built bundle restarted as systemd restarts it, against the fake cloud at
// --time-scale 60: a kill -9 right after a heartbeat with an immediate restart
// on the same runtime dir, then a SIGTERM restart. A process because what is
// judged crosses processes: the attempt record one process writes in the
// runtime dir (on the boot-origin monotonic clock) and the next one reads,
// and SIGTERM's exit code. Outcomes only, which a loaded machine cannot
// break: back online after each restart, and never a heartbeat too soon (a
// stall only makes gaps longer). The spacing itself, to the ms, is judged in
// agent time by the daemon in-process (test/e2e/heartbeat.test.ts).
import { describe, expect, it } from '@jest/globals';
import { useCloudAndAgentDirs } from './setup.js';
import { daemonState, startAgent, waitFor, type AgentProcess } from './agent-process.js';

const SCALE = 60;
/** Below 1.0.0: the generic profile. */
const FIRMWARE = '0.9.3';

const fx = useCloudAndAgentDirs(SCALE);

describe('c2c-agent run, restarted as a process', () => {
  it('comes back online after a kill -9 and a SIGTERM restart, never a heartbeat too soon, exit 0', async () => {
    const { cloud, dirs } = fx;
    const device = cloud.devices[0]!;
    const ref = () => cloud.referee(device.id);
    const start = (): AgentProcess => startAgent({ apiUrl: cloud.url, token: device.accessToken, dirs, timeScale: SCALE, env: { C2C_FIRMWARE_VERSION: FIRMWARE } });
    let agent = start();
    const why = (): string => `\nreferee: ${JSON.stringify(ref())}\nagent output:\n${agent.output()}`;

    try {
      await waitFor('a heartbeat', () => ref().successfulHeartbeats >= 1, 20_000);
      // kill -9 the moment the fake records the next attempt; start again at once on the same runtime dir.
      const seen = ref().heartbeats;
      await waitFor('the next heartbeat attempt', () => ref().heartbeats > seen, 20_000, 2);
      agent.child.kill('SIGKILL');
      await agent.exited;
      agent = start();
      await waitFor('a heartbeat from the restarted agent', () => ref().heartbeats > seen + 1 && daemonState(dirs, agent.pid) === 'online', 30_000, 50);

      // systemctl restart: SIGTERM (exit 0), then a new process.
      agent.child.kill('SIGTERM');
      expect((await agent.exited).code).toBe(0);
      const seen2 = ref().heartbeats;
      agent = start();
      await waitFor('a heartbeat after the SIGTERM restart', () => ref().heartbeats > seen2 && daemonState(dirs, agent.pid) === 'online', 30_000, 50);
    } catch (err) {
      throw new Error(`${(err as Error).message}${why()}`);
    }

    const r = ref();
    expect({ tooSoon: r.tooSoon, missingVersion: r.missingVersion }).toEqual({ tooSoon: 0, missingVersion: 0 });
    expect(agent.child.exitCode).toBeNull();
    // Every request from every process named the configured firmware.
    expect(cloud.journal.filter((e) => e.clientVersion !== FIRMWARE).map((e) => `${e.method} ${e.path} ${e.clientVersion}`)).toEqual([]);
  }, 90_000);
});
