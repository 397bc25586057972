// The clock case end to end (issue 22), the real bundle over HTTPS against
// the fake with its throwaway CA (trusted through caFile): the service's
// certificate is valid from a date after this unit's clock, and the service's
// Date says it is 3 days ahead, as a Pi booted before NTP sees it. `check`
// and `status` name the clock; the daemon logs it once, keeps trying, and
// comes online by itself once a certificate valid now is served.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { startFakeCloud, type FakeCloud } from '../fake-cloud/index.js';
import { BUNDLE, cleanEnv, ensureBuilt, killAll, makeDirs, removeDirs, startAgent, status, waitFor, type AgentDirs } from './agent-process.js';

const SCALE = 60;
const DAY = 24 * 3600_000;
const SENTENCE = "this unit's clock is 3 days behind the service; certificates cannot be checked until the time is set (NTP)";

let cloud: FakeCloud;
let dirs: AgentDirs;

beforeAll(async () => {
  await ensureBuilt();
  cloud = await startFakeCloud({ tls: true, timeScale: SCALE, devices: 1 });
  dirs = makeDirs();
}, 120_000);
afterAll(async () => {
  await killAll();
  await cloud?.close();
  if (dirs) removeDirs(dirs);
});

function cli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BUNDLE, ...args], { env: cleanEnv({ C2C_CONFIG: join(dirs.root, 'config.json'), ...env }), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('a unit whose clock is behind the service', () => {
  it('check and status name the clock; the daemon comes online by itself once a certificate valid now is served', async () => {
    cloud.control.setDateOffset(3 * DAY);
    cloud.control.serveCertificate({ kind: 'not-yet-valid', notBefore: Date.now() + 3 * DAY - 3600_000 });
    const device = cloud.devices[0]!;
    const env = { C2C_API_URL: cloud.url, C2C_TOKEN: device.accessToken, C2C_CA_FILE: cloud.caFile, C2C_STATE_DIR: dirs.stateDir, C2C_RUNTIME_DIR: dirs.runtimeDir, C2C_TIME_SCALE: String(SCALE) };

    // check: one line, exit 75 (temporary: NTP will set it), kind clock, the offset.
    const human = await cli(['check'], env);
    expect(human.code).toBe(75);
    expect(human.stderr.trim()).toBe(`c2c-agent: GET /v2/devices/me: ${SENTENCE}`);
    const json = await cli(['check', '--json'], env);
    expect(json.code).toBe(75);
    const report = JSON.parse(json.stdout) as { ok: boolean; error: { kind: string; message: string }; clockOffsetMs: number };
    expect(report.ok).toBe(false);
    expect(report.error.kind).toBe('clock');
    expect(report.error.message).toContain(SENTENCE);
    expect(report.clockOffsetMs).toBeGreaterThan(3 * DAY - 5000);
    expect(json.stdout + json.stderr).not.toContain(device.accessToken);

    // The daemon: offline, saying why, in status.json and in `status`.
    const agent = startAgent({ apiUrl: cloud.url, token: device.accessToken, dirs, timeScale: SCALE, env: { C2C_CA_FILE: cloud.caFile } });
    let log = '';
    agent.child.stdout?.on('data', (d: Buffer) => (log += d.toString()));
    const why = (): string => `\nagent output:\n${agent.output()}`;
    const offline = await waitFor('status naming the clock', async () => {
      const s = await status(dirs, cloud.url, SCALE).catch(() => undefined);
      return s?.json.state === 'offline' && s.json.clockProblem === SENTENCE ? s : undefined;
    }, 20_000, 200).catch((err: Error) => {
      throw new Error(err.message + why());
    });
    expect(offline.exitCode).toBe(0);
    expect(offline.json.reason).toBe(SENTENCE);
    expect(offline.json.clockOffsetMs as number).toBeGreaterThan(3 * DAY - 5000);
    const text = await cli(['status'], { C2C_RUNTIME_DIR: dirs.runtimeDir, C2C_STATE_DIR: dirs.stateDir });
    // Said once: the state line's reason is the clock; no second clock line repeats it.
    expect(text.stdout).toContain(`state:       offline (${SENTENCE})`);
    expect(text.stdout.split(SENTENCE).length - 1).toBe(1);

    // It keeps trying (several start-up checks fail the same way) and says it once.
    const triesBefore = cloud.journal.filter((e) => e.path === '/health').length;
    await waitFor('more checks while the clock is wrong', () => cloud.journal.filter((e) => e.path === '/health').length >= triesBefore + 1, 20_000, 100);

    // NTP answers (the fake's Date is right again) and a certificate valid now is served.
    cloud.control.setDateOffset(0);
    cloud.control.serveCertificate({ kind: 'good' });
    await waitFor('a heartbeat accepted', () => cloud.referee(device.id).successfulHeartbeats >= 1, 30_000, 100).catch((err: Error) => {
      throw new Error(err.message + why());
    });
    const online = await waitFor('status online', async () => {
      const s = await status(dirs, cloud.url, SCALE).catch(() => undefined);
      return s?.json.state === 'online' ? s : undefined;
    }, 10_000, 200);
    expect(online.json.clockProblem).toBeUndefined();

    agent.child.kill('SIGTERM');
    const end = await agent.exited;
    expect(end.code).toBe(0);
    const logs = log.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string });
    // Once per episode: one warning, however many checks failed.
    expect(logs.filter((l) => l.level === 40 && l.msg.includes(SENTENCE))).toHaveLength(1);
    expect(logs.some((l) => l.msg.includes('certificates check out again'))).toBe(true);
    expect(log).not.toContain(device.accessToken);
  }, 120_000);
});
