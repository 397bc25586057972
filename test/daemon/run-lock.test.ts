import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { acquireRunLock, LOCK_FILE } from '../../agent/daemon/run-lock.js';
import { procStartOf } from '../../agent/daemon/live-status.js';
import { crashHandler, ignoreSignals } from '../../agent/daemon/process-guards.js';
import { createLogger } from '../../agent/lib/logger.js';

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
