import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { acquireRunLock, daemonRuns, LOCK_FILE, processAlive, removeStaleLockTemps, runningDaemon, type ProcProbe } from '../../agent/daemon/runtime/run-lock.js';
import { procStartOf, procStatOf } from '../../agent/daemon/runtime/proc.js';
import { AgentError } from '../../agent/lib/errors.js';
import { crashHandler, ignoreSignals } from '../../agent/daemon/process-guards.js';
import { createLogger } from '../../agent/lib/logger.js';
import { until } from '../support/until.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'c2c-lock-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const lockFile = (): string => path.join(dir, LOCK_FILE);
const deadPid = (): number => spawnSync(process.execPath, ['-e', '0']).pid as number;

describe('run lock', () => {
  it('one holder at a time: a second run sees the first one’s pid; release frees it', () => {
    const first = acquireRunLock(dir);
    expect(first.kind).toBe('acquired');
    expect(JSON.parse(readFileSync(lockFile(), 'utf8'))).toEqual({ pid: process.pid, procStart: procStartOf(process.pid) });
    expect(acquireRunLock(dir)).toEqual({ kind: 'held', owner: { pid: process.pid, procStart: procStartOf(process.pid) } });
    if (first.kind === 'acquired') first.release();
    expect(existsSync(lockFile())).toBe(false);
    expect(acquireRunLock(dir).kind).toBe('acquired');
    // No temporary file is left behind either way.
    expect(readdirSync(dir)).toEqual([LOCK_FILE]);
  });

  it('takes over a lock whose process is dead (kill -9, crash)', () => {
    const pid = deadPid();
    writeFileSync(lockFile(), JSON.stringify({ pid, procStart: '123' }));
    expect(acquireRunLock(dir).kind).toBe('acquired');
    expect(JSON.parse(readFileSync(lockFile(), 'utf8')).pid).toBe(process.pid);
  });

  it('takes over a lock whose pid now belongs to another process (start time differs)', () => {
    writeFileSync(lockFile(), JSON.stringify({ pid: process.pid, procStart: '1' }));
    expect(acquireRunLock(dir, { pid: 999_999_999, procStart: 'x' }).kind).toBe('acquired');
  });

  it('takes over an unreadable lock', () => {
    writeFileSync(lockFile(), 'garbage');
    expect(acquireRunLock(dir).kind).toBe('acquired');
  });

  it('release leaves a lock another process took over alone', () => {
    const mine = acquireRunLock(dir);
    writeFileSync(lockFile(), JSON.stringify({ pid: 1 }));
    if (mine.kind === 'acquired') mine.release();
    expect(existsSync(lockFile())).toBe(true);
  });
});

describe('run lock: an unwritable runtime dir is a setting to fix (exit 78), not a bug', () => {
  const expectConfig = (f: () => unknown): void => {
    let err: unknown;
    try {
      f();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AgentError);
    expect((err as AgentError).exitCode).toBe(78);
    expect((err as AgentError).message).toContain(dir);
    expect((err as AgentError).message).toMatch(/--runtime-dir or C2C_RUNTIME_DIR/);
  };

  // Tests run as root, where a 0555 dir is writable: a directory where a file must go fails for root too.
  it('the lock cannot be written', () => {
    mkdirSync(path.join(dir, `${LOCK_FILE}.4242.tmp`));
    expectConfig(() => acquireRunLock(dir, { pid: 4242 }));
  });

  it('a stale lock cannot be removed', () => {
    mkdirSync(lockFile());
    expectConfig(() => acquireRunLock(dir, { pid: 4242 }));
  });
});

describe('processAlive', () => {
  const probe = (signal: ReturnType<ProcProbe['signal']>, stat?: { state: string; start: string }): ProcProbe => ({ signal: () => signal, stat: () => stat });

  it('decides from kill(pid, 0) and /proc/<pid>/stat', () => {
    expect(processAlive(7, '100', probe('gone'))).toBe(false);
    expect(processAlive(7, '100', probe('ok', { state: 'S', start: '100' }))).toBe(true);
    expect(processAlive(7, '100', probe('ok', { state: 'S', start: '999' }))).toBe(false);
    expect(processAlive(7, undefined, probe('ok', { state: 'R', start: '999' }))).toBe(true);
    // Zombie or dead: the pid answers kill() and keeps its start time, yet nothing runs.
    expect(processAlive(7, '100', probe('ok', { state: 'Z', start: '100' }))).toBe(false);
    expect(processAlive(7, '100', probe('ok', { state: 'X', start: '100' }))).toBe(false);
    // Another user's process under ProtectProc=invisible: EPERM and no /proc entry. Ours would be readable.
    expect(processAlive(7, '100', probe('eperm'))).toBe(false);
    expect(processAlive(7, '100', probe('ok'))).toBe(false);
    // No start time recorded (no /proc when the lock was written): kill() is all there is.
    expect(processAlive(7, undefined, probe('eperm'))).toBe(true);
  });

  it('procStatOf parses after the last parenthesis (a command name may hold spaces and parens)', () => {
    const s = procStatOf(process.pid);
    expect(s?.state).toMatch(/^[RS]$/);
    expect(s?.start).toBe(procStartOf(process.pid));
  });

  it('a real zombie holding the lock is dead to the lock and to status', async () => {
    // The shell forks a child that exits a second later, then becomes `sleep`, which never reaps it. The
    // zombie lasts as long as that `sleep`: far past the test (killed at its end), however loaded the
    // machine. The child must outlive the exec: a shell reaps a child that ended before it (seen on a
    // loaded machine with `sleep 0`: the pid was gone, never a zombie).
    const parent = spawn('sh', ['-c', 'sleep 1 & echo $!; exec sleep 600'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const pid = await new Promise<number>((resolve) => parent.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim()))));
      await until('the child a zombie', () => procStatOf(pid)?.state === 'Z', { everyMs: 10 }).catch(() => undefined);
      const stat = procStatOf(pid);
      expect(stat?.state).toBe('Z');
      expect(() => process.kill(pid, 0)).not.toThrow();
      expect(processAlive(pid, stat?.start)).toBe(false);
      expect(daemonRuns({ state: 'online', pid, ...(stat && { procStart: stat.start }) })).toBe(false);
      writeFileSync(lockFile(), JSON.stringify({ pid, procStart: stat?.start }));
      expect(acquireRunLock(dir).kind).toBe('acquired');
    } finally {
      parent.kill('SIGKILL');
    }
  });
});

describe('daemonRuns: the one answer for the lock, status and queue', () => {
  const probe = (signal: ReturnType<ProcProbe['signal']>, stat?: { state: string; start: string }): ProcProbe => ({ signal: () => signal, stat: () => stat });
  const live = probe('ok', { state: 'S', start: '100' });

  it('a live pid with the recorded start time runs; a reused pid, a gone one or a document that says stopped does not', () => {
    expect(daemonRuns({ pid: 7, procStart: '100' }, live)).toBe(true);
    expect(daemonRuns({ pid: 7, procStart: '100', state: 'online' }, live)).toBe(true);
    expect(daemonRuns({ pid: 7, procStart: '100', state: 'needs-pairing' }, live)).toBe(true);
    expect(daemonRuns({ pid: 7, procStart: '99', state: 'online' }, live)).toBe(false);
    expect(daemonRuns({ pid: 7, procStart: '100', state: 'online' }, probe('gone'))).toBe(false);
    // Its last word: the pid may linger a moment while the process exits.
    expect(daemonRuns({ pid: 7, procStart: '100', state: 'stopped' }, live)).toBe(false);
  });

  it('this process, as the lock and the status document name it, runs; a dead pid does not', () => {
    const start = procStartOf(process.pid);
    const me = { pid: process.pid, ...(start !== undefined && { procStart: start }) };
    expect(daemonRuns(me)).toBe(true);
    expect(daemonRuns({ ...me, state: 'online' })).toBe(true);
    expect(daemonRuns({ pid: deadPid() })).toBe(false);
  });

  it('the lock asks the same question: a lock whose owner\'s start time differs is not a running daemon', () => {
    writeFileSync(lockFile(), JSON.stringify({ pid: 7, procStart: '100' }));
    expect(runningDaemon(dir, live)).toEqual({ pid: 7, procStart: '100' });
    writeFileSync(lockFile(), JSON.stringify({ pid: 7, procStart: '99' }));
    expect(runningDaemon(dir, live)).toBeUndefined();
  });
});

describe('process guards', () => {
  it('ignoreSignals: during the final exit a SIGHUP or SIGTERM stays handled (no default action) and runs no old handler', () => {
    const proc = new EventEmitter();
    let reloads = 0;
    proc.on('SIGHUP', () => reloads++);
    ignoreSignals(proc);
    for (const s of ['SIGHUP', 'SIGTERM', 'SIGINT']) expect(proc.listenerCount(s)).toBe(1);
    proc.emit('SIGHUP');
    expect(reloads).toBe(0);
  });

  it('crashHandler: one JSON log line with message and stack at error level, cleanup, exit 1, once', () => {
    const lines: string[] = [];
    const logger = createLogger('info', { write: (l: string) => void lines.push(l) });
    const exits: number[] = [];
    let cleanups = 0;
    const handler = crashHandler(logger, () => cleanups++, (c) => void exits.push(c));
    handler(new Error('boom'));
    handler(new Error('again'));
    expect(lines).toHaveLength(1);
    expect(lines[0]?.trimEnd().split('\n')).toHaveLength(1);
    const rec = JSON.parse(lines[0] as string) as { level: number; msg: string; err: { message: string; stack: string } };
    expect(rec.level).toBe(50);
    expect(rec.msg).toMatch(/uncaught exception.*boom/);
    expect(rec.err.message).toBe('boom');
    expect(rec.err.stack).toMatch(/Error: boom\n\s+at /);
    expect({ cleanups, exits }).toEqual({ cleanups: 1, exits: [1] });
  });

  it('crashHandler: a cleanup that throws still exits 1', () => {
    const exits: number[] = [];
    crashHandler(createLogger('silent'), () => {
      throw new Error('disk gone');
    }, (c) => void exits.push(c))('not even an Error');
    expect(exits).toEqual([1]);
  });
});

describe('stale lock temps', () => {
  it('a starter killed between writing and linking its lock leaves run.lock.<pid>.tmp: removed once that pid is gone, a live one kept', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'c2c-locktmp-'));
    try {
      for (const pid of [999_991, 999_992, process.pid]) writeFileSync(path.join(dir, `${LOCK_FILE}.${pid}.tmp`), '{}');
      writeFileSync(path.join(dir, 'status.json'), '{}');
      const probe: ProcProbe = { signal: (pid) => (pid === 999_992 ? 'ok' : 'gone'), stat: () => undefined };
      expect(removeStaleLockTemps(dir, probe)).toEqual([`${LOCK_FILE}.999991.tmp`]);
      expect(readdirSync(dir).sort()).toEqual([`${LOCK_FILE}.${process.pid}.tmp`, `${LOCK_FILE}.999992.tmp`, 'status.json'].sort());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
