// The runtime dir's files read through lib/bounded-read.ts (issue 18, cause
// 5): a FIFO or a device where status.json, last-heartbeat.json or run.lock
// should be is never waited on. The daemon reads them before it handles
// signals, so a blocking read there once made `run` deaf to SIGTERM.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ATTEMPT_FILE, attemptToStartFrom, readLastAttempt } from '../../agent/daemon/runtime/attempt-record.js';
import { procStatOf } from '../../agent/daemon/runtime/proc.js';
import { acquireRunLock, LOCK_FILE, runningDaemon } from '../../agent/daemon/runtime/run-lock.js';
import { readStatus, STATUS_FILE } from '../../agent/daemon/runtime/status-file.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'c2c-runtime-special-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const fifo = (name: string): string => {
  const f = path.join(dir, name);
  execFileSync('mkfifo', [f]);
  return f;
};

describe('status.json', () => {
  it('a FIFO: unreadable at once, with the one line that names it and the setting', () => {
    fifo(STATUS_FILE);
    const read = readStatus(dir, '--runtime-dir');
    expect(read.kind).toBe('unreadable');
    if (read.kind !== 'unreadable') return;
    expect(read.cause?.exitCode).toBe(78);
    expect(read.cause?.message).toBe(`status file '${dir}/status.json' (from --runtime-dir) is a FIFO (named pipe), not a regular file; point the setting at a regular file`);
  });

  it('a link to /dev/zero: unreadable, nothing read', () => {
    symlinkSync('/dev/zero', path.join(dir, STATUS_FILE));
    const read = readStatus(dir);
    expect(read.kind === 'unreadable' && read.cause?.message).toMatch(/is a character device/);
  });

  it('larger than any status the daemon writes: unreadable', () => {
    writeFileSync(path.join(dir, STATUS_FILE), Buffer.alloc(2 * 1024 * 1024, 0x20));
    const read = readStatus(dir);
    expect(read.kind === 'unreadable' && read.cause?.message).toMatch(/is larger than the 1048576 bytes a status file may hold/);
  });

  it('missing: missing; not JSON: unreadable without a cause (the daemon state is unknown, exit 69)', () => {
    expect(readStatus(dir)).toEqual({ kind: 'missing' });
    writeFileSync(path.join(dir, STATUS_FILE), 'not json');
    expect(readStatus(dir)).toEqual({ kind: 'unreadable', error: 'not JSON' });
  });
});

describe('last-heartbeat.json', () => {
  it('a FIFO: unreadable at once, which counts as an attempt just now (the first heartbeat waits a full spacing)', () => {
    fifo(ATTEMPT_FILE);
    const read = readLastAttempt(dir, 1);
    expect(read).toEqual({ kind: 'unreadable', error: 'EFTYPE' });
    expect(attemptToStartFrom(read, 5_000)).toEqual({ startedAt: 5_000, endedAt: 5_000 });
  });
});

describe('run.lock', () => {
  it('a FIFO in its place reads as no owner: stale, removed, and the lock taken', () => {
    fifo(LOCK_FILE);
    expect(runningDaemon(dir)).toBeUndefined();
    const lock = acquireRunLock(dir);
    expect(lock.kind).toBe('acquired');
    expect(JSON.parse(readFileSync(path.join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid });
    if (lock.kind === 'acquired') lock.release();
  });
});

describe('/proc/<pid>/stat (size 0 by stat)', () => {
  it('is read whole: state and start time of this process', () => {
    const stat = procStatOf(process.pid);
    expect(stat?.state).toMatch(/^[RS]$/);
    expect(stat?.start).toMatch(/^\d+$/);
  });
});
