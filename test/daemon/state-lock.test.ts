// The state dir's lock (agent/daemon/state-lock.ts): a unix socket bound in
// the abstract namespace, named after the state dir's device and inode.
// One holder at a time whatever path names the dir; the holder says who it
// is; a process that ends, however, frees it; nothing is written to the dir.
import { afterEach, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, symlinkSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireStateLock, stateLockName } from '../../agent/daemon/state-lock.js';
import { SystemClock } from '../../agent/lib/clock.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';

const dirs: string[] = [];
const releases: Array<() => void> = [];
afterEach(() => {
  for (const r of releases.splice(0)) r();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function stateDir(): string {
  const root = mkdtempSync(join(tmpdir(), 'c2c-state-lock-'));
  dirs.push(root);
  const dir = join(root, 'state');
  mkdirSync(dir);
  return dir;
}

const clock = new SystemClock();

describe('the state dir lock', () => {
  it('one holder at a time; a second is told the holder (pid, runtime dir); released, it can be taken again', async () => {
    const dir = stateDir();
    const first = await acquireStateLock(dir, { pid: 111, procStart: '42', runtimeDir: '/run/a' }, clock);
    expect(first.kind).toBe('acquired');
    if (first.kind !== 'acquired') return;
    releases.push(first.release);
    expect(await acquireStateLock(dir, { pid: 222, runtimeDir: '/run/b' }, clock)).toEqual({ kind: 'held', holder: { pid: 111, procStart: '42', runtimeDir: '/run/a' } });
    first.release();
    await until('the name freed', async () => {
      const again = await acquireStateLock(dir, { pid: 333 }, clock);
      if (again.kind === 'acquired') releases.push(again.release);
      return again.kind === 'acquired';
    });
    // Nothing of it is in the state dir.
    expect(readdirSync(dir)).toEqual([]);
  });

  it('is the directory, not its path: a link to it names the same lock; another directory has its own', async () => {
    const dir = stateDir();
    const link = join(dir, '..', 'link');
    symlinkSync(dir, link);
    expect(stateLockName(link)).toBe(stateLockName(dir));
    expect(stateLockName(stateDir())).not.toBe(stateLockName(dir));
    expect(stateLockName(dir)).toMatch(/^\0c2c-agent\/state\/\d+:\d+$/);
    const first = await acquireStateLock(dir, { pid: 1 }, clock);
    if (first.kind === 'acquired') releases.push(first.release);
    expect((await acquireStateLock(link, { pid: 2 }, clock)).kind).toBe('held');
  });

  it('a holder that says nothing: held, holder unknown, once the wait (agent time) is over', async () => {
    const dir = stateDir();
    const squatter = net.createServer(() => undefined);
    await new Promise<void>((r) => squatter.listen(stateLockName(dir), r));
    releases.push(() => void squatter.close());
    const fake = new FakeClock();
    const asked = acquireStateLock(dir, { pid: 2 }, fake);
    let settled = false;
    void asked.then(() => (settled = true));
    await until('the question asked', () => fake.pendingCount > 0);
    expect(settled).toBe(false);
    await fake.advance(2_000);
    expect(await asked).toEqual({ kind: 'held', holder: undefined });
  });

  it('a holder killed with SIGKILL leaves nothing behind: the next one takes it', async () => {
    const dir = stateDir();
    const name = stateLockName(dir);
    const child = spawn(process.execPath, ['-e', `require('net').createServer((c) => c.end('{"pid":' + process.pid + '}\\n')).listen(${JSON.stringify(name)}, () => console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((r) => child.stdout.once('data', () => r()));
    expect(await acquireStateLock(dir, { pid: 2 }, clock)).toEqual({ kind: 'held', holder: { pid: child.pid } });
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
    const after = await acquireStateLock(dir, { pid: 3 }, clock);
    if (after.kind === 'acquired') releases.push(after.release);
    expect(after.kind).toBe('acquired');
  });
});
