// last-heartbeat.json in the runtime dir: the previous attempt, so a
// restarted daemon still keeps the 60 s rule. On tmpfs, like the status.
import path from 'node:path';
import { READ_LIMITS, readBoundedTextSync } from '../../lib/bounded-read.js';
import { errnoOf } from '../../lib/fs-errors.js';
import type { AttemptRecord } from '../heartbeat/policy.js';
import { writeFileAtomicSync } from '../../lib/atomic-write.js';

export const ATTEMPT_FILE = 'last-heartbeat.json';

/** The attempt record as saved: monotonic times only mean something with the same time scale. */
interface SavedAttempt extends AttemptRecord {
  timeScale: number;
  pid: number;
}

export function createAttemptStore(runtimeDir: string, timeScale: number, onError?: (err: unknown) => void) {
  const file = path.join(runtimeDir, ATTEMPT_FILE);
  return {
    /**
     * Written at once (temp and rename on tmpfs, no disk to wait for): the
     * heartbeat it records goes right after it, before the work the same
     * moment set going (a device record's listeners at start) holds the loop.
     */
    save(rec: AttemptRecord): Promise<void> {
      try {
        writeFileAtomicSync(file, `${JSON.stringify({ ...rec, timeScale, pid: process.pid } satisfies SavedAttempt, null, 2)}\n`);
      } catch (err) {
        onError?.(err);
      }
      return Promise.resolve();
    },
    /** Nothing is ever left to write (each save is done when it returns). */
    flush: (): Promise<void> => Promise.resolve(),
  };
}

export type AttemptRead = { kind: 'missing' } | { kind: 'unreadable'; error: string } | { kind: 'ok'; record: AttemptRecord };

/** The previous process's last attempt, as last-heartbeat.json tells it. */
export function readLastAttempt(runtimeDir: string, timeScale: number): AttemptRead {
  let text: string;
  try {
    // A FIFO in its place must not stop the daemon before it handles signals: it reads as unreadable.
    text = readBoundedTextSync(path.join(runtimeDir, ATTEMPT_FILE), { what: 'attempt record', maxBytes: READ_LIMITS.small });
  } catch (err) {
    const code = errnoOf(err);
    return code === 'ENOENT' ? { kind: 'missing' } : { kind: 'unreadable', error: code ?? String(err) };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { kind: 'unreadable', error: 'not JSON' };
  }
  const r = (raw ?? {}) as Record<string, unknown>;
  if (typeof r.startedAt !== 'number' || !Number.isFinite(r.startedAt)) return { kind: 'unreadable', error: 'no startedAt' };
  const scale = typeof r.timeScale === 'number' && r.timeScale > 0 ? r.timeScale : timeScale;
  // Monotonic times are boot-origin hrtime times the scale: rescaling is exact.
  const record: AttemptRecord = { startedAt: (r.startedAt / scale) * timeScale };
  if (typeof r.endedAt === 'number' && Number.isFinite(r.endedAt)) record.endedAt = (r.endedAt / scale) * timeScale;
  return { kind: 'ok', record };
}

/**
 * The record to start from. One that exists but cannot be read (say root-owned
 * 0600, left by a manual `sudo c2c-agent run`) may hide a heartbeat sent a moment
 * ago: count it as an attempt ending now, so the first one waits a full spacing.
 */
export function attemptToStartFrom(read: AttemptRead, now: number): AttemptRecord | undefined {
  if (read.kind === 'ok') return read.record;
  return read.kind === 'missing' ? undefined : { startedAt: now, endedAt: now };
}

