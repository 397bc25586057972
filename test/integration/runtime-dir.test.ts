// What `c2c-agent run` makes of a runtime dir left in a bad state: a lock it
// cannot take (exit 78, not a crash), an attempt record it cannot read (wait
// a full spacing, warn once), temp files a kill -9 left (swept at start).
// The built bundle against the fake cloud at --time-scale 60.
import { describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useCloudAndAgentDirs } from './setup.js';
import { daemonState, startAgent, status, waitFor } from './agent-process.js';

const SCALE = 60;
const fx = useCloudAndAgentDirs(SCALE);

describe('c2c-agent run and a dirty runtime dir', () => {
  it('a run lock that cannot be taken is exit 78 naming the dir and how to change it', async () => {
    const { cloud, dirs } = fx;
    mkdirSync(join(dirs.runtimeDir, 'run.lock'), { recursive: true });
    try {
      const agent = startAgent({ apiUrl: cloud.url, token: cloud.devices[0]!.accessToken, dirs, timeScale: SCALE });
      expect(await agent.exited).toEqual({ code: 78, signal: null });
      expect(agent.output()).toContain(dirs.runtimeDir);
      expect(agent.output()).toMatch(/--runtime-dir or C2C_RUNTIME_DIR/);
    } finally {
      // The other cases share the dir.
      rmSync(join(dirs.runtimeDir, 'run.lock'), { recursive: true, force: true });
    }
  }, 20_000);

  it('an unreadable last-heartbeat.json: one warning, a full spacing before the first heartbeat; stale temp files are swept', async () => {
    const { cloud, dirs } = fx;
    mkdirSync(dirs.runtimeDir, { recursive: true });
    writeFileSync(join(dirs.runtimeDir, 'last-heartbeat.json'), 'garbage');
    const stale = join(dirs.runtimeDir, '.status.json.0123456789ab.tmp');
    const other = join(dirs.runtimeDir, 'notes.tmp');
    writeFileSync(stale, '{"half": ');
    writeFileSync(other, 'not the agent’s');
    const device = cloud.devices[0]!;
    const before = cloud.referee(device.id).successfulHeartbeats;
    const started = Date.now();
    const agent = startAgent({ apiUrl: cloud.url, token: device.accessToken, dirs, timeScale: SCALE });
    try {
      await waitFor('the first heartbeat', () => cloud.referee(device.id).successfulHeartbeats > before, 15_000);
      // 60 agent s at --time-scale 60: at least one real second. Without the record it would go at once.
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
      expect(agent.output().match(/cannot read last-heartbeat\.json/g)).toHaveLength(1);
      expect(existsSync(stale)).toBe(false);
      expect(existsSync(other)).toBe(true);
    } catch (err) {
      throw new Error(`${(err as Error).message}\nagent output:\n${agent.output()}`);
    }
  }, 30_000);

  it('a SIGHUP the moment run.lock appears (pair nudging a daemon still starting) is taken, never fatal', async () => {
    const { cloud, dirs } = fx;
    const device = cloud.devices[0]!;
    const lock = join(dirs.runtimeDir, 'run.lock');
    const agent = startAgent({ apiUrl: cloud.url, token: device.accessToken, dirs, timeScale: SCALE });
    // As `pair` does: signal the pid as soon as the lock names it.
    const names = (): boolean => {
      try {
        return (JSON.parse(readFileSync(lock, 'utf8')) as { pid?: unknown }).pid === agent.pid;
      } catch {
        return false;
      }
    };
    await waitFor('run.lock naming the agent', names, 10_000, 0);
    agent.child.kill('SIGHUP');
    try {
      await waitFor('online after the early SIGHUP', () => daemonState(dirs, agent.pid) === 'online', 15_000, 50);
    } catch (err) {
      throw new Error(`${(err as Error).message}\nagent output:\n${agent.output()}`);
    }
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toEqual({ code: 0, signal: null });
  }, 30_000);
});
