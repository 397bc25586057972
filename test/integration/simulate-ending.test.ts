// How the simulator ends: on a terminal its verdict stays the last thing on
// the screen, even after a Ctrl-C; a hang-up (the terminal closed) mid-story
// leaves no process of the run behind; the fleet run passes a hang-up on and
// still ends with a verdict line.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Screen } from '../support/screen.js';
import { until } from '../support/until.js';
import { ensureBuilt, ROOT } from './agent-process.js';

beforeAll(ensureBuilt, 120_000);

const SIMULATE = join(ROOT, 'scripts/simulate.mjs');
const STORY = ['--minutes', '10', '--time-scale', '60', '--seed', '3'];

/** Output collected as it comes; `waitFor` resolves once a pattern shows. */
function watch(child: ChildProcess): { text: () => string; waitFor: (re: RegExp) => Promise<void>; closed: Promise<number | null> } {
  let text = '';
  const waiters: { re: RegExp; resolve: () => void }[] = [];
  const onData = (d: Buffer): void => {
    text += d.toString();
    for (const w of [...waiters]) if (w.re.test(text)) (waiters.splice(waiters.indexOf(w), 1), w.resolve());
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  // Its end: when its output closes, or shortly after it exits (a child left behind would hold the pipes open).
  const closed = new Promise<number | null>((resolve) => {
    const code = (c: number | null, signal: NodeJS.Signals | null): number | null => c ?? (signal ? -1 : null);
    child.once('close', (c, signal) => resolve(code(c, signal)));
    child.once('exit', (c, signal) => setTimeout(() => resolve(code(c, signal)), 2_000));
  });
  return {
    text: () => text,
    waitFor: (re) =>
      new Promise((resolve, reject) => {
        if (re.test(text)) return resolve();
        waiters.push({ re, resolve });
        void closed.then(() => reject(new Error(`ended before ${re}:\n${text}`)));
      }),
    closed,
  };
}

/** Whether a process runs (a zombie left for a parent that does not reap is not running). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The pids of running processes whose environment holds `marker` (every process of one run inherits it). */
function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').includes(marker) && running(Number(entry))) pids.push(Number(entry));
    } catch {
      // Gone meanwhile, or not ours.
    }
  }
  return pids;
}

/** The processes of the run still there once none is left or 5 s passed (SIGKILLed ones take a moment); those found are then ended, so a failure leaves nothing either. */
async function noneLeft(marker: string): Promise<number[]> {
  const gone = await until('no process of the run', () => processesWith(marker).length === 0, { hangMs: 5_000, everyMs: 100 }).then(() => true, () => false);
  if (gone) return [];
  const left = processesWith(marker);
  for (const pid of left) process.kill(pid, 'SIGKILL');
  return left;
}

describe('how the simulator ends', () => {
  // The runs stopped on purpose keep their work dirs for a look (scripts/sim/session.mjs): theirs go in a temp dir of this file's, removed at its end.
  let simTmp: string;
  beforeAll(() => {
    simTmp = mkdtempSync(join(tmpdir(), 'c2c-sim-test-'));
  });
  afterAll(() => rmSync(simTmp, { recursive: true, force: true }));

  it('on a terminal, a run stopped by Ctrl-C ends the screen on its FAILED verdict', async () => {
    // A real pseudo-terminal (util-linux script), 100 x 40; the Ctrl-C typed into it.
    const cmd = `stty cols 100 rows 40; exec ${JSON.stringify(process.execPath)} ${JSON.stringify(SIMULATE)} ${STORY.join(' ')}`;
    const marker = `SIM_RUN_MARKER=${randomBytes(8).toString('hex')}`;
    const [key, value] = marker.split('=') as [string, string];
    const child = spawn('script', ['-qfec', cmd, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, TMPDIR: simTmp, TERM: 'xterm', [key]: value } });
    const out = watch(child);
    await out.waitFor(/state starting -> online/);
    child.stdin!.write('\u0003');
    const code = await out.closed;
    child.stdin!.end();
    const raw = out.text();
    // It was drawn as on a terminal: the live block redrawn in place.
    expect(raw).toContain('\u001b[');
    const screen = new Screen(100, 40).write(raw).lines();
    const failure = `exit ${code}; the screen ends:\n${screen.slice(-12).join('\n')}`;
    expect({ last: screen.at(-1), failure }).toEqual({ last: expect.stringMatching(/^FAILED: \d+ of \d+ invariants broken \(✗ above\)$/), failure });
    expect(screen.join('\n')).toMatch(/✗ story played to the end: stopped by SIGINT at \d\d:\d\d/);
    // The work dir kept for a look is said above the report, not over it.
    const kept = screen.findIndex((l) => l.includes('] kept '));
    expect(kept).toBeGreaterThan(-1);
    expect(kept).toBeLessThan(screen.findIndex((l) => l.startsWith('── report:')));
    expect(code).toBe(1);
    expect(await noneLeft(marker)).toEqual([]);
  }, 90_000);

  it.each([
    ['SIGHUP', 'a hang-up (the terminal closed)'],
    ['SIGTERM', 'a SIGTERM'],
  ] as const)('%s mid-story: %s leaves no process of the run behind', async (signal, _what) => {
    const marker = `SIM_RUN_MARKER=${randomBytes(8).toString('hex')}`;
    const [key, value] = marker.split('=') as [string, string];
    const child = spawn(process.execPath, [SIMULATE, ...STORY], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TMPDIR: simTmp, [key]: value } });
    const out = watch(child);
    await out.waitFor(/cam1 state starting -> online/);
    // The fake cloud, the agent and the simulator are running now.
    expect(processesWith(marker).length).toBeGreaterThanOrEqual(3);
    child.kill(signal);
    await out.closed;
    expect(await noneLeft(marker)).toEqual([]);
    expect(out.text()).toContain(`stopped by ${signal}`);
    expect(out.text().trimEnd().split('\n').at(-1)).toMatch(/^(FAILED: \d+ of \d+ invariants broken|simulate: )/);
  }, 90_000);

  it('a run that cannot start (the fake cloud dies at once) ends the terminal on a FAILED line too, no process left', async () => {
    const root = mkdtempSync(join(tmpdir(), 'c2c-sim-broken-'));
    try {
      for (const part of ['scripts/simulate.mjs', 'scripts/sim', 'scripts/lib', 'agent/lib/byte-size.js']) cpSync(join(ROOT, part), join(root, part), { recursive: true });
      mkdirSync(join(root, 'dist'));
      writeFileSync(join(root, 'dist/fake-cloud.mjs'), 'process.exit(3);\n');
      writeFileSync(join(root, 'dist/c2c-agent.mjs'), 'process.exit(1);\n');
      const marker = `SIM_RUN_MARKER=${randomBytes(8).toString('hex')}`;
      const [key, value] = marker.split('=') as [string, string];
      const cmd = `stty cols 100 rows 40; exec ${JSON.stringify(process.execPath)} ${JSON.stringify(join(root, 'scripts/simulate.mjs'))} ${STORY.join(' ')}`;
      const child = spawn('script', ['-qfec', cmd, '/dev/null'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TMPDIR: simTmp, TERM: 'xterm', [key]: value } });
      const out = watch(child);
      expect(await out.closed).toBe(1);
      const screen = new Screen(100, 40).write(out.text()).lines();
      expect(screen.at(-1)).toBe('FAILED: the fake cloud exited with 3 before it was ready');
      expect(screen).toContain('simulate: the fake cloud exited with 3 before it was ready');
      expect(await noneLeft(marker)).toEqual([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 30_000);

  describe('--fleet', () => {
    let root: string;
    beforeAll(() => {
      // The simulator beside a stand-in dist/fleet.mjs that waits until a signal ends it.
      root = mkdtempSync(join(tmpdir(), 'c2c-sim-fleet-hup-'));
      for (const part of ['scripts/simulate.mjs', 'scripts/sim', 'scripts/lib', 'agent/lib/byte-size.js']) cpSync(join(ROOT, part), join(root, part), { recursive: true });
      mkdirSync(join(root, 'dist'));
      writeFileSync(join(root, 'dist/fleet.mjs'), "console.log('fleet running'); setInterval(() => {}, 1000);\n");
    });
    afterAll(() => rmSync(root, { recursive: true, force: true }));

    it('passes a hang-up on to the fleet and ends with a FAILED line and 129', async () => {
      const marker = `SIM_RUN_MARKER=${randomBytes(8).toString('hex')}`;
      const [key, value] = marker.split('=') as [string, string];
      const child = spawn(process.execPath, [join(root, 'scripts/simulate.mjs'), '--fleet', '10', '--hours', '1'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TMPDIR: simTmp, [key]: value } });
      const out = watch(child);
      await out.waitFor(/fleet running/);
      child.kill('SIGHUP');
      expect(await out.closed).toBe(129);
      expect(out.text().trimEnd().split('\n').at(-1)).toBe('FAILED: the fleet run was stopped by SIGHUP');
      expect(await noneLeft(marker)).toEqual([]);
    });
  });
});
