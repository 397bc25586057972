// The simulator's own crash leaves no process behind: children.mjs kills
// every child it started (each in its own process group, out of reach of
// the terminal's signals) when an uncaught error or a rejected promise ends it.
import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { until } from '../support/until.js';

const CHILDREN = pathToFileURL(join(resolve('.'), 'scripts/sim/children.mjs')).href;

/** Whether a process runs (a zombie left for a parent that does not reap is not running). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** A script that starts a detached child as the simulator does, prints its pid, then fails as `how` says. */
function crashWith(how: string): Promise<{ code: number | null; pid: number; stdout: string; stderr: string }> {
  const script = `
    import { reapOnExit, spawnTracked } from ${JSON.stringify(CHILDREN)};
    reapOnExit({ onCrash: (err) => process.stdout.write('FAILED: ' + err.message + '\\n') });
    const child = spawnTracked(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore', detached: true });
    process.stdout.write(child.pid + '\\n');
    setTimeout(() => { ${how} }, 200);
  `;
  return new Promise((done) => {
    execFile(process.execPath, ['--input-type=module', '-e', script], (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      done({ code, pid: Number(stdout.split('\n')[0]), stdout, stderr });
    });
  });
}

/** Whether `pid` is gone within 5 real s (a bound against a hang: a process left behind never goes). */
async function goneSoon(pid: number): Promise<boolean> {
  return until(`pid ${pid} gone`, () => !running(pid), { everyMs: 100, hangMs: 5_000 }).then(() => true, () => false);
}

describe('children.mjs', () => {
  it.each([
    ['an uncaught error', "throw new Error('boom')", 70, 'FAILED: boom'],
    ['a rejected promise', "Promise.reject(new Error('boom'))", 70, 'FAILED: boom'],
    ['process.exit', 'process.exit(3)', 3, undefined],
  ])('%s kills every tracked child', async (_name, how, code, lastLine) => {
    const r = await crashWith(how);
    expect(r.pid).toBeGreaterThan(0);
    expect(await goneSoon(r.pid)).toBe(true);
    expect(r.code).toBe(code);
    expect(r.stdout.trimEnd().split('\n').slice(1).at(-1)).toBe(lastLine);
  });
});
