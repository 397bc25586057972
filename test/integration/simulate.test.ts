// The README's first command: `npm run simulate` plays the whole story with
// real agent processes against the fake cloud (pairing, heartbeats, a
// channel plugged and unplugged, clips, an outage, a revoke and pairing
// again) and exits 0 only when every invariant held. Run here with one
// camera at a high time scale, so ten agent minutes take a few seconds.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt, ROOT } from './agent-process.js';

beforeAll(ensureBuilt, 120_000);

function simulate(args: string[], root = ROOT): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'scripts/simulate.mjs'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const guard = setTimeout(() => child.kill('SIGINT'), 75_000);
    child.on('close', (code) => {
      clearTimeout(guard);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('npm run simulate', () => {
  it('tells the whole story and ends with every invariant held', async () => {
    const { code, stdout, stderr } = await simulate(['--minutes', '10', '--time-scale', '120', '--seed', '3']);
    const failure = `exit ${code}\n${stdout}\n${stderr}`;
    // Pairing through the device-code flow, shown as the pair command's own lines.
    expect(stdout).toMatch(/^\[sim\] cam1 pair \| pairing code: \d{3} \d{3}$/m);
    expect(stdout).toMatch(/^\[sim\] cam1 pair \| paired: /m);
    // Advice that fits the simulator (its config's startAdvice), never systemd's.
    expect(stdout).toContain("cam1 pair | daemon: no daemon runs; the simulator starts this camera's agent itself once it is paired");
    expect(stdout).not.toContain('systemctl');
    expect(stdout).toMatch(/^\[sim 00:00\] cam1 agent pid \d+: `c2c-agent run`/m);
    // Off a terminal: plain lines only, one per heartbeat, and no escape code.
    expect(stdout).not.toContain('\u001b[');
    expect(stdout).toMatch(/^\[sim \d\d:\d\d\] cam1 heartbeat: 204 accepted, \d+m\d\ds after the previous one$/m);
    expect(stdout).toMatch(/^\[sim \d\d:\d\d\] status cam1 /m);
    // The story's turns, as the agent lived them.
    // Online from the start. At scale 120 a connect has 83 real ms, so on a loaded machine the
    // first call can time out and the camera be offline a turn first (seen in a CI run): the
    // story's first state after starting that is not offline is online.
    const states = [...stdout.matchAll(/cam1 state (\S+) -> (\S+?):/g)].map((m) => [m[1], m[2]]);
    expect(states[0]?.[0]).toBe('starting');
    expect(states.map(([, to]) => to).find((to) => to !== 'offline')).toBe('online');
    expect(stdout).toContain('hardware: proxy channel plugged in');
    expect(stdout).toContain('hardware: proxy channel unplugged');
    // Offline for the outage: taken there by its refused connections, or already by a light fault's 503
    // just before it (which heartbeat draws the 5 % depends on the machine's pace; seen in a CI run).
    expect(stdout).toMatch(/cam1 state online -> offline: (network ECONNREFUSED|server 503)/);
    expect(stdout).toMatch(/cam1 state \S+ -> needs-pairing/);
    expect(stdout).toMatch(/cam1 state needs-pairing -> online/);
    // The report: the histogram, the timeline, the referee in words, the invariants.
    expect(stdout).toContain('heartbeat spacing');
    expect(stdout).toContain('┼── 60 s: the minimum spacing');
    expect(stdout).toMatch(/^ {2}cam1 {4}[·█░▒?]+$/m);
    expect(stdout).toMatch(/cam1: \d+ heartbeats \(\d+ accepted.*\); 0 too soon, 0 too late, 0 without x-client-version/);
    expect(stdout).not.toMatch(/"tooSoon"|heartbeatTimes/);
    for (const invariant of ['referee: 0 violations', 'queue drained', 'clips stored byte-identical', 'channels as plugged', 'clean stop']) {
      expect(stdout).toContain(`✓ ${invariant}`);
    }
    expect(stdout).not.toContain('✗');
    expect(stdout).toContain('OK: every invariant held');
    expect(stderr).toBe('');
    expect({ code, failure }).toEqual({ code: 0, failure });
  }, 90_000);

  it('answers an unknown option with one usage line and exit 64', async () => {
    const { code, stdout, stderr } = await simulate(['--bogus']);
    expect(code).toBe(64);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^simulate: unknown option '--bogus'; usage: npm run simulate -- \[--devices N\].*\n$/);
  });

  it('names a bad value and where it came from', async () => {
    const { code, stderr } = await simulate(['--faults', 'extreme']);
    expect(code).toBe(64);
    expect(stderr).toMatch(/^simulate: --faults "extreme": must be light or heavy; usage: /);
  });

  it('--fleet ends with one OK line and exit 0 when every invariant held', async () => {
    const { code, stdout } = await simulate(['--fleet', '5', '--hours', '1', '--seed', '2']);
    expect(stdout.trimEnd().split('\n').at(-1)).toMatch(/^OK: every invariant held/);
    expect(stdout.match(/^(OK|FAILED):/gm)).toHaveLength(1);
    expect(code).toBe(0);
  });

  describe('--fleet', () => {
    // A copy of the simulator next to its own dist/, so the fleet there is a stand-in that shows what it was given.
    let root: string;
    beforeAll(() => {
      root = mkdtempSync(join(tmpdir(), 'c2c-sim-fleet-'));
      cpSync(join(ROOT, 'scripts/simulate.mjs'), join(root, 'scripts/simulate.mjs'));
      cpSync(join(ROOT, 'scripts/sim'), join(root, 'scripts/sim'), { recursive: true });
      cpSync(join(ROOT, 'scripts/lib'), join(root, 'scripts/lib'), { recursive: true });
      cpSync(join(ROOT, 'agent/lib/byte-size.js'), join(root, 'agent/lib/byte-size.js'));
    });
    afterAll(() => rmSync(root, { recursive: true, force: true }));

    it('says dist/fleet.mjs is missing in one line, exit 69', async () => {
      const { code, stderr } = await simulate(['--fleet', '10', '--hours', '1'], root);
      expect(code).toBe(69);
      expect(stderr).toMatch(/^simulate: \S+dist\/fleet\.mjs is missing; run `npm run build`[^\n]*\n$/);
    });

    it('hands every argument to dist/fleet.mjs and exits with its code', async () => {
      mkdirSync(join(root, 'dist'), { recursive: true });
      writeFileSync(join(root, 'dist/fleet.mjs'), 'console.log(JSON.stringify(process.argv.slice(2))); process.exit(3);\n');
      const { code, stdout } = await simulate(['--fleet', '10', '--hours', '1', '--seed', '4', '--json'], root);
      expect(JSON.parse(stdout)).toEqual(['--fleet', '10', '--hours', '1', '--seed', '4', '--json']);
      expect(code).toBe(3);
    });
  });
});
