// The bundle stores the dependencies only some commands use compressed and
// expands them on first use (scripts/build-cold.mjs): each must still work
// from the bundle, run from a directory with no node_modules.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BUNDLE_BUDGET_BYTES } from '../../scripts/build-config.mjs';
import { startFakeCloud, type FakeCloud } from '../fake-cloud/index.js';
import { buildBundle, type Bundle } from './bundle.js';

let bundle: Bundle;
let cloud: FakeCloud;
let dir: string;
beforeAll(async () => {
  [bundle, cloud] = await Promise.all([buildBundle(), startFakeCloud({ devices: 0, autoApproveSeconds: 1 })]);
  dir = mkdtempSync(path.join(tmpdir(), 'c2c-cold-'));
}, 60_000);
afterAll(async () => {
  bundle.cleanup();
  await cloud.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('cold dependencies in the bundle', () => {
  test('the bundle fits its budget, the code only one command runs stored compressed (scripts/build-cold-code.mjs)', () => {
    expect(statSync(bundle.file).size).toBeLessThanOrEqual(BUNDLE_BUDGET_BYTES);
    // No module of the agent is in both the bundle and a pack: a command that
    // fails in a pack's code keeps its exit code (one AgentError class).
    const r = bundle.run(['cancel', '--all', '--runtime-dir', path.join(dir, 'no-daemon')]);
    expect([r.status, r.stderr]).toEqual([69, expect.stringContaining('no daemon runs')]);
  });

  test('a cold dependency is only in its compressed pack, never in the bundle as text too', () => {
    // The shared pack's table once required mrmime and node-cron by name and put both, 44 KB, beside their packs.
    const text = readFileSync(bundle.file, 'utf8');
    expect({ mrmime: text.includes('application/automationml-aml+xml'), nodeCron: text.includes('TimeMatcher') }).toEqual({ mrmime: false, nodeCron: false });
  });

  test('systeminformation: `channels --json` has the unit facts (system, usb, audio read, none missing)', () => {
    const r = bundle.run(['channels', '--json', '--host-root', '/', '--state-dir', path.join(dir, 'state-ch')]);
    expect(r.stderr).toBe('');
    const hw = (JSON.parse(r.stdout) as { hardware: { missing?: string[]; usb?: unknown; audio?: unknown } }).hardware;
    expect(hw.missing ?? []).toEqual([]);
    expect(Array.isArray(hw.usb)).toBe(true);
    expect(Array.isArray(hw.audio)).toBe(true);
  });

  test('node-cron: a bad upload window is refused by its parser with exit 78', () => {
    const r = bundle.run(['run', '--api-url', cloud.url, '--state-dir', path.join(dir, 'state-cron'), '--runtime-dir', path.join(dir, 'run-cron'), '--upload-window-cron', '61 * * * *', '--upload-window-minutes', '30']);
    expect(r.status).toBe(78);
    expect(r.stderr).toContain("upload window '61 * * * *' from --upload-window-cron is not a cron expression");
    // Every command that loads settings refuses it the same way (check used to accept it).
    const c = bundle.run(['check', '--api-url', cloud.url, '--state-dir', path.join(dir, 'state-cron'), '--runtime-dir', path.join(dir, 'run-cron'), '--upload-window-cron', '61 * * * *', '--upload-window-minutes', '30']);
    expect(c.status).toBe(78);
    expect(c.stderr).toContain('is not a cron expression');
  });

  test('uqr: `pair` on a terminal draws the QR code', async () => {
    const secret = path.join(dir, 'client-secret');
    writeFileSync(secret, `${cloud.clientSecret}\n`, { mode: 0o600 });
    writeFileSync(path.join(dir, 'none.json'), '{}');
    const args = ['pair', '--timeout', '30', '--api-url', cloud.url, '--client-secret-file', secret, '--state-dir', path.join(dir, 'state-pair'), '--runtime-dir', path.join(dir, 'run-pair')];
    const command = [process.execPath, bundle.file, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
    // script(1) gives the command a terminal, as a person at a console has.
    // Asynchronously: the fake cloud answers from this process.
    // A pty from script(1) starts at 0x0; a console is bigger than the screen's QR layout needs.
    const child = spawn('script', ['-qec', `stty rows 50 cols 120; ${command}`, '/dev/null'], {
      cwd: bundle.dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TERM: 'xterm', COLUMNS: '120', LINES: '50', C2C_CONFIG: path.join(dir, 'none.json') },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
    const status = await new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    expect({ status, tail: out.slice(-400) }).toMatchObject({ status: 0 });
    expect(out).toMatch(/[▀▄]/);
  });
});
