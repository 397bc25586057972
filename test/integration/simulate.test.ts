// The README's first command: `npm run simulate` must work end to end (fake
// cloud + real agent + an outage + the referee's verdict). Run here at a
// high time scale so 15 agent minutes take a few real seconds.
import { describe, expect, it, beforeAll } from '@jest/globals';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ensureBuilt, ROOT } from './agent-process.js';

beforeAll(ensureBuilt, 120_000);

function simulate(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'scripts/simulate.mjs'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const guard = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (code) => {
      clearTimeout(guard);
      resolve({ code, out });
    });
  });
}

describe('npm run simulate', () => {
  it('pairs-checks, rides out the outage, and ends with a clean referee verdict', async () => {
    const { code, out } = await simulate(['--minutes', '15', '--time-scale', '300']);
    expect(out).toContain('c2c-agent check -> exit 0');
    expect(out).toContain('state starting -> online');
    expect(out).toMatch(/state online -> offline: network ECONNREFUSED/);
    expect(out).toMatch(/state offline -> online/);
    expect(out).toContain('agent exited with 0');
    const referee = JSON.parse(/referee: (\{.*\})/.exec(out)?.[1] ?? 'null') as Record<string, number> | null;
    expect(referee).toMatchObject({ tooSoon: 0, tooLate: 0, missingVersion: 0 });
    expect(referee?.successfulHeartbeats).toBeGreaterThanOrEqual(3);
    expect(out).toContain('OK: the camera stayed online');
    expect(code).toBe(0);
  }, 90_000);
});
