// daemon/runtime/proc.ts: the start time that tells our daemon from a reused
// pid comes from the main thread's task entry, /proc/<pid>/task/<pid>/stat,
// which qemu-user does not rewrite (it answers a process's own
// /proc/<pid>/stat itself, one tick off), and from /proc/<pid>/stat only
// where there is no task entry.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { procStartOf, procStatOf } from '../../agent/daemon/runtime/proc.js';

let root: string;
beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'c2c-proc-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A stat line as the kernel writes it: field 3 the state, field 22 the start time. */
function statLine(pid: number, comm: string, state: string, start: number): string {
  const after = [state, ...Array.from({ length: 18 }, (_, i) => String(i + 1)), String(start), '4096', '100'];
  return `${pid} (${comm}) ${after.join(' ')}\n`;
}

function stage(pid: number, files: { task?: string; stat?: string }): void {
  mkdirSync(path.join(root, String(pid), 'task', String(pid)), { recursive: true });
  if (files.task !== undefined) writeFileSync(path.join(root, String(pid), 'task', String(pid), 'stat'), files.task);
  if (files.stat !== undefined) writeFileSync(path.join(root, String(pid), 'stat'), files.stat);
}

describe('procStatOf', () => {
  it('reads the main thread\'s task entry, not /proc/<pid>/stat, when both are there (qemu-user: the latter is one tick off)', () => {
    stage(42, { task: statLine(42, 'node', 'S', 1001), stat: statLine(42, 'node', 'S', 1000) });
    expect(procStatOf(42, root)).toEqual({ state: 'S', start: '1001' });
  });

  it('falls back to /proc/<pid>/stat when there is no task entry', () => {
    stage(42, { stat: statLine(42, 'node', 'R', 1000) });
    expect(procStatOf(42, root)).toEqual({ state: 'R', start: '1000' });
  });

  it('neither readable: undefined (gone, or hidden by hidepid)', () => {
    expect(procStatOf(43, root)).toBeUndefined();
    stage(44, { task: 'garbage' });
    expect(procStatOf(44, root)).toBeUndefined();
  });

  it('a command name with spaces and parentheses does not shift the fields', () => {
    stage(45, { task: statLine(45, 'a) (b c) Z', 'Z', 77) });
    expect(procStatOf(45, root)).toEqual({ state: 'Z', start: '77' });
  });

  it('this process: the start time is the task entry\'s, and what the daemon records (procStartOf) is the same', () => {
    const task = readFileSync(`/proc/${process.pid}/task/${process.pid}/stat`, 'utf8');
    const start = task.slice(task.lastIndexOf(')') + 2).split(' ')[19];
    expect(procStatOf(process.pid)?.start).toBe(start);
    expect(procStartOf(process.pid)).toBe(start);
  });
});
