// A service that is up (GET /health answers) while one path resets the
// connection: the agent must back off like for any failure, not retry every
// 62 agent-s (heartbeat) or every few seconds (start-up check) forever. The
// built bundle against the fake cloud at --time-scale 600, the fault in the fake.
import { describe, expect, it } from '@jest/globals';
import { useCloudAndAgentDirs } from './setup.js';
import { startAgent, waitFor } from './agent-process.js';

const SCALE = 600;
const fx = useCloudAndAgentDirs(SCALE);
/** Real ms for agent minutes. */
const agentMinutes = (m: number): number => (m * 60_000) / SCALE;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('reset on one path while /health answers', () => {
  it('start-up check: backoff, no probes (was 76 GETs and 73 /health in 10 agent-min)', async () => {
    const { cloud, dirs } = fx;
    const fault = cloud.control.addFault({ kind: 'reset', path: '/v2/devices/me' });
    const from = cloud.journal.length;
    const agent = startAgent({ apiUrl: cloud.url, token: cloud.devices[0]!.accessToken, dirs, timeScale: SCALE });
    try {
      // Ten agent minutes from the first check (a loaded machine may take a real second to start node).
      await waitFor('the first device check', () => cloud.journal.slice(from).some((e) => e.path === '/v2/devices/me'), 15_000, 5);
      await sleep(agentMinutes(10));
      const seen = cloud.journal.slice(from);
      const n = (p: string): number => seen.filter((e) => e.path === p).length;
      expect(n('/v2/devices/me')).toBeGreaterThan(2);
      expect(n('/v2/devices/me')).toBeLessThanOrEqual(20);
      expect(n('/health')).toBe(0);
    } catch (err) {
      throw new Error(`${(err as Error).message}\nagent output:\n${agent.output()}`);
    } finally {
      fault.remove();
      agent.child.kill('SIGKILL');
      await agent.exited;
    }
  }, 30_000);

  it('heartbeat: attempts spaced by the backoff (was 19 in 20 agent-min, 62.4 s apart)', async () => {
    const { cloud, dirs } = fx;
    const device = cloud.devices[0]!;
    const agent = startAgent({ apiUrl: cloud.url, token: device.accessToken, dirs, timeScale: SCALE });
    try {
      const deadline = Date.now() + 10_000;
      while (cloud.referee(device.id).successfulHeartbeats === 0 && Date.now() < deadline) await sleep(20);
      const fault = cloud.control.addFault({ kind: 'reset', path: '/v2/devices/heartbeat' });
      const from = cloud.journal.length;
      await sleep(agentMinutes(20));
      fault.remove();
      const beats = cloud.journal.slice(from).filter((e) => e.path === '/v2/devices/heartbeat');
      expect(beats.length).toBeGreaterThan(3);
      expect(beats.length).toBeLessThanOrEqual(13);
      expect(cloud.referee(device.id).tooSoon).toBe(0);
    } catch (err) {
      throw new Error(`${(err as Error).message}\nagent output:\n${agent.output()}`);
    } finally {
      agent.child.kill('SIGKILL');
      await agent.exited;
    }
  }, 30_000);
});
