// The runtime dir (tmpfs, cleared at boot): status.json for `c2c-agent
// status` and last-heartbeat.json for the next process's 60 s rule. Nothing
// here goes to the state dir, so a healthy camera never writes to its SD card.
import { readFileSync } from 'node:fs';
import { ensureDir } from '../lib/ensure-dir.js';
import path from 'node:path';
import { writeFileAtomic } from '../lib/atomic-write.js';
import type { AttemptRecord } from './heartbeat-policy.js';
import type { DaemonSnapshot } from './snapshot.js';

export const STATUS_FILE = 'status.json';
export const ATTEMPT_FILE = 'last-heartbeat.json';
// Status holds no secret, so we ask for no more privacy than the umask and
// the directory give. Under the unit that is UMask=0077 (the file ends up
// 0600) in a RuntimeDirectoryMode=0700 dir: only the c2c-agent user and root
// can run `c2c-agent status`. A manual run's file is as open as its umask
// and --runtime-dir allow.
const STATUS_MODE = 0o644;

/**
 * Writes snapshots one at a time, newest wins: a burst of transitions
 * coalesces into one write, and an older snapshot never lands after a newer one.
 */
export class FileSink<T> {
  private pending: T | undefined;
  private writing: Promise<void> | undefined;

  constructor(
    readonly file: string,
    private readonly onError: (err: unknown) => void = () => {},
    private readonly mode = STATUS_MODE,
  ) {}

  write(value: T): void {
    this.pending = value;
    if (!this.writing) this.writing = this.drain();
  }

  /** Resolves once everything written so far is on disk. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending !== undefined) {
        const value = this.pending;
        this.pending = undefined;
        try {
          await ensureDir(path.dirname(this.file));
          await writeFileAtomic(this.file, `${JSON.stringify(value, null, 2)}\n`, { mode: this.mode, durable: false });
        } catch (err) {
          this.onError(err);
        }
      }
    } finally {
      this.writing = undefined;
    }
  }
}

export function statusFile(runtimeDir: string): string {
  return path.join(runtimeDir, STATUS_FILE);
}

export function createStatusSink(runtimeDir: string, onError?: (err: unknown) => void): FileSink<DaemonSnapshot> {
  return new FileSink<DaemonSnapshot>(statusFile(runtimeDir), onError);
}

/** The attempt record as saved: monotonic times only mean something with the same time scale. */
interface SavedAttempt extends AttemptRecord {
  timeScale: number;
  pid: number;
}

export function createAttemptStore(runtimeDir: string, timeScale: number, onError?: (err: unknown) => void) {
  const sink = new FileSink<SavedAttempt>(path.join(runtimeDir, ATTEMPT_FILE), onError, 0o600);
  return {
    async save(rec: AttemptRecord): Promise<void> {
      sink.write({ ...rec, timeScale, pid: process.pid });
      await sink.flush();
    },
    flush: () => sink.flush(),
  };
}

export type AttemptRead = { kind: 'missing' } | { kind: 'unreadable'; error: string } | { kind: 'ok'; record: AttemptRecord };

/** The previous process's last attempt, as last-heartbeat.json tells it. */
export function readLastAttempt(runtimeDir: string, timeScale: number): AttemptRead {
  let text: string;
  try {
    text = readFileSync(path.join(runtimeDir, ATTEMPT_FILE), 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
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

export type StatusRead = { kind: 'missing' } | { kind: 'unreadable'; error: string } | { kind: 'ok'; snapshot: DaemonSnapshot };

export function readStatus(runtimeDir: string): StatusRead {
  let text: string;
  try {
    text = readFileSync(statusFile(runtimeDir), 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? { kind: 'missing' } : { kind: 'unreadable', error: code ?? String(err) };
  }
  try {
    const snap = JSON.parse(text) as DaemonSnapshot;
    if (snap === null || typeof snap !== 'object' || typeof snap.state !== 'string' || typeof snap.pid !== 'number') {
      return { kind: 'unreadable', error: 'not a status file' };
    }
    return { kind: 'ok', snapshot: snap };
  } catch {
    return { kind: 'unreadable', error: 'not JSON' };
  }
}

export interface ProcStat {
  /** Field 3: R, S, D... Z (zombie) and X (dead) hold a pid but no live process. */
  state: string;
  /** Field 22: the start time, which tells a reused pid from ours. */
  start: string;
}

/** /proc/<pid>/stat, or undefined when it cannot be read (gone, or hidden by hidepid/ProtectProc). */
export function procStatOf(pid: number): ProcStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const [state, start] = [rest[0], rest[19]];
    return state === undefined || start === undefined ? undefined : { state, start };
  } catch {
    return undefined;
  }
}

export function procStartOf(pid: number): string | undefined {
  return procStatOf(pid)?.start;
}
