// The daemon's life as a person sees it through `c2c-agent status --json`,
// and how it ends: SIGTERM (clean, fast, "stopped") or kill -9 (a dead
// daemon's leftover status, exit 69).
import { TOKEN_IN_ENV_ADVICE } from '../../agent/lib/advice.js';
import { describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startAgent, status, useAgentCloud, waitFor, type AgentDirs, type AgentProcess, type StatusResult } from './agent-process.js';

const SCALE = 60;
// One heartbeat interval is at most 300 agent s = 5 real s; allow one more
// for retries and start-up.
const STEP_MS = 12_000;

const fx = useAgentCloud({ timeScale: SCALE, devices: 2 });

function launch(deviceIndex: number): { agent: AgentProcess; dirs: AgentDirs; st: () => Promise<StatusResult> } {
  const dirs = fx.dirs();
  const agent = startAgent({ apiUrl: fx.cloud.url, token: fx.cloud.devices[deviceIndex]!.accessToken, dirs, timeScale: SCALE });
  return { agent, dirs, st: () => status(dirs, fx.cloud.url, SCALE) };
}

async function reach(st: () => Promise<StatusResult>, state: string, agent: AgentProcess): Promise<StatusResult> {
  let last: StatusResult | undefined;
  try {
    return await waitFor(
      `state ${state}`,
      async () => {
        last = await st().catch(() => undefined);
        return last?.json.state === state ? last : undefined;
      },
      STEP_MS,
      100,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last status: ${JSON.stringify(last?.json)}\nagent output:\n${agent.output()}`);
  }
}

describe('SIGTERM', () => {
  it('exits 0 within 5 s, leaves a status that says stopped, and frees the run lock', async () => {
    const { agent, dirs, st } = launch(0);
    await reach(st, 'online', agent);
    // A second `run` on the same runtime dir (a manual run next to the service) refuses: 75, one line.
    const second = startAgent({ apiUrl: fx.cloud.url, token: fx.cloud.devices[0]!.accessToken, dirs, timeScale: SCALE });
    expect(await second.exited).toEqual({ code: 75, signal: null });
    expect(second.output().trimEnd().split('\n')).toEqual([expect.stringMatching(new RegExp(`another c2c-agent run is active \\(pid ${agent.pid}\\); `))]);
    expect(existsSync(join(dirs.runtimeDir, 'run.lock'))).toBe(true);
    const t0 = process.hrtime.bigint();
    agent.child.kill('SIGTERM');
    const { code, signal } = await agent.exited;
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    // A behavioural bound from systemd's point of view (TimeoutStopSec), not a benchmark.
    expect(seconds).toBeLessThan(5);
    // Not running any more, and the file says it stopped cleanly (not a crash).
    const after = await st();
    expect(after.json.running).toBe(false);
    expect((after.json.last as { state?: string } | undefined)?.state).toBe('stopped');
    expect(existsSync(join(dirs.runtimeDir, 'run.lock'))).toBe(false);
  }, 30_000);
});

describe('status --json follows the daemon through its states', () => {
  it('online, offline, online, rate-limited, paused, needs-pairing, then dead (69)', async () => {
    const device = fx.cloud.devices[1]!;
    const { agent, st } = launch(1);

    const online = await reach(st, 'online', agent);
    expect(online.exitCode).toBe(0);
    expect(online.json.ok).toBe(true);
    expect(online.json.pid).toBe(agent.pid);

    fx.cloud.control.refuseConnections();
    await reach(st, 'offline', agent);
    await fx.cloud.control.acceptConnections();
    await reach(st, 'online', agent);

    const fault = fx.cloud.control.addFault({ kind: 'rate-limit', path: '/v2/devices/*', deviceId: device.id, retryAfter: '90' });
    await reach(st, 'rate-limited', agent);
    fault.remove();
    await reach(st, 'online', agent);

    // The service's "paused" arrives with GET /v2/devices/me, which SIGHUP re-reads at once.
    fx.cloud.control.pause(device.id);
    agent.child.kill('SIGHUP');
    await reach(st, 'paused', agent);
    fx.cloud.control.unpause(device.id);
    agent.child.kill('SIGHUP');
    await reach(st, 'online', agent);

    fx.cloud.control.revokeTokens(device.id);
    agent.child.kill('SIGHUP');
    const unpaired = await reach(st, 'needs-pairing', agent);
    // Running but unpaired: status exits 77 so scripts and health checks can act on it.
    expect(unpaired.exitCode).toBe(77);
    expect(unpaired.json).toMatchObject({ ok: false, exitCode: 77, running: true, state: 'needs-pairing' });
    // The daemon runs on C2C_TOKEN, so pairing alone cannot help: the advice says so (lib/advice.ts).
    expect(unpaired.stderr).toContain(`needs pairing: ${TOKEN_IN_ENV_ADVICE}`);
    expect(agent.child.exitCode).toBeNull();

    agent.child.kill('SIGKILL');
    await agent.exited;
    const dead = await st();
    expect(dead.exitCode).toBe(69);
    expect(dead.json.ok).toBe(false);
    expect(dead.json.exitCode).toBe(69);
    expect(dead.json.running).toBe(false);
    expect((dead.json.last as { state?: string; pid?: number } | undefined)?.pid).toBe(agent.pid);
    expect(dead.stderr).not.toBe('');
  }, 90_000);
});
