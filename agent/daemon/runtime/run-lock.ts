// One `c2c-agent run` per runtime dir. A manual run next to the service
// would heartbeat with the same token on its own schedule, and the service
// would see two heartbeats inside a minute. The lock names its owner by pid
// and /proc start time, so a lock left by a crash or kill -9 (or whose pid
// the kernel has since given to another process) is taken over, not obeyed.
import { linkSync, readdirSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sweepOwnTemps } from '../../lib/atomic-write.js';
import { READ_LIMITS, readBoundedTextSync } from '../../lib/bounded-read.js';
import { configError } from '../../lib/errors.js';
import type { DaemonState } from '../../core/state.js';
import { procStartOf, procStatOf, type ProcStat } from './proc.js';

export const LOCK_FILE = 'run.lock';

export interface LockOwner {
  pid: number;
  procStart?: string;
}

export type LockResult = { kind: 'acquired'; release: () => void; /** Stale temp files removed from the runtime dir on taking it. */ swept?: string[] } | { kind: 'held'; owner: LockOwner };

/** How processAlive looks at a pid; injectable, so each case can be tested without staging it. */
export interface ProcProbe {
  /** kill(pid, 0): 'ok', 'eperm' (exists, another user's) or 'gone'. */
  signal(pid: number): 'ok' | 'eperm' | 'gone';
  stat(pid: number): ProcStat | undefined;
}

export const realProbe: ProcProbe = {
  signal(pid) {
    try {
      process.kill(pid, 0);
      return 'ok';
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM' ? 'eperm' : 'gone';
    }
  },
  stat: (pid) => procStatOf(pid),
};

/** The process is running and is the one that wrote `procStart` (not a reuse of its pid). */
export function processAlive(pid: number, procStart: string | undefined, probe: ProcProbe = realProbe): boolean {
  if (probe.signal(pid) === 'gone') return false;
  const stat = probe.stat(pid);
  // The owner recorded its start time, so it could read its own /proc entry, and
  // so could we (same user) if it still ran: an unreadable one is another user's
  // process (ProtectProc=invisible hides those) that inherited the pid. Without a
  // recorded start (no /proc at all) kill() is all we have.
  if (stat === undefined) return procStart === undefined;
  // A zombie answers kill(pid, 0) and keeps its start time, but runs nothing.
  if (stat.state === 'Z' || stat.state === 'X') return false;
  return procStart === undefined || stat.start === procStart;
}

/**
 * Whether the daemon named by `who` runs: the run lock's owner, or the status
 * document (core/status-document.ts) whose last word may be 'stopped'. The
 * one answer for the lock, `status`, `queue` and the CLI's commands: a daemon that
 * said it stopped does not run; otherwise its pid must be alive and still
 * the process that recorded `procStart`.
 */
export function daemonRuns(who: { pid: number; procStart?: string; state?: DaemonState }, probe: ProcProbe = realProbe): boolean {
  return who.state !== 'stopped' && processAlive(who.pid, who.procStart, probe);
}

/** The lock's text; anything that is not a small regular file (a FIFO, a device) reads as no owner, so it is stale. */
function readText(file: string): string | undefined {
  try {
    return readBoundedTextSync(file, { what: 'run lock', maxBytes: READ_LIMITS.small });
  } catch {
    return undefined;
  }
}

function parseOwner(text: string | undefined): LockOwner | undefined {
  try {
    const o = JSON.parse(text ?? '') as Partial<LockOwner>;
    if (typeof o.pid !== 'number' || !Number.isInteger(o.pid) || o.pid <= 0) return undefined;
    return typeof o.procStart === 'string' ? { pid: o.pid, procStart: o.procStart } : { pid: o.pid };
  } catch {
    return undefined;
  }
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // Gone already: nothing to undo.
  }
}

export function acquireRunLock(runtimeDir: string, me: LockOwner = { pid: process.pid, ...optionalStart(process.pid) }): LockResult {
  try {
    const r = takeLock(runtimeDir, me);
    // Holding the lock, we are the only writer here: temp files are leftovers of a
    // kill -9, and RuntimeDirectoryPreserve=yes would keep them across restarts.
    if (r.kind === 'acquired') r.swept = [...sweepOwnTemps(runtimeDir), ...removeStaleLockTemps(runtimeDir)];
    return r;
  } catch (err) {
    // A runtime dir we cannot write is a setting to fix (exit 78), not a bug.
    const code = (err as NodeJS.ErrnoException).code;
    if (code === undefined) throw err;
    throw configError(
      `cannot take the run lock in the runtime dir ${runtimeDir} (${code}); make it writable for this user or set --runtime-dir or C2C_RUNTIME_DIR (systemd: RuntimeDirectory=)`,
      'runtimeDir',
    );
  }
}

function takeLock(runtimeDir: string, me: LockOwner): LockResult {
  const file = path.join(runtimeDir, LOCK_FILE);
  const mine = `${JSON.stringify(me)}\n`;
  // Written whole under a private name, then linked: link() fails if the lock
  // exists, and nobody ever reads a half-written lock.
  const tmp = `${file}.${me.pid}.tmp`;
  writeFileSync(tmp, mine, { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        linkSync(tmp, file);
        return { kind: 'acquired', release: () => (readText(file) === mine ? unlinkQuietly(file) : undefined) };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const seen = readText(file);
      const owner = parseOwner(seen);
      if (owner && daemonRuns(owner)) return { kind: 'held', owner };
      // Stale. Remove it only if it is still the one judged stale: another
      // starter may have taken it over meanwhile, and its lock is not ours to break.
      if (readText(file) === seen) unlinkStale(file);
    }
    throw new Error(`cannot take ${file}: it keeps changing`);
  } finally {
    unlinkQuietly(tmp);
  }
}

/** Only "already gone" is fine: a stale lock we cannot remove would make us spin, then fail vaguely. */
function unlinkStale(file: string): void {
  try {
    unlinkSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/**
 * The lock is written under `run.lock.<pid>.tmp` before it is linked into
 * place; a starter killed in between leaves that file. Removed when its pid
 * is gone (a live starter's is left alone: it is about to link it).
 */
export function removeStaleLockTemps(runtimeDir: string, probe: ProcProbe = realProbe): string[] {
  const removed: string[] = [];
  let names: string[] = [];
  try {
    names = readdirSync(runtimeDir);
  } catch {
    return removed;
  }
  for (const name of names) {
    const m = new RegExp(`^${LOCK_FILE.replace('.', '\\.')}\\.(\\d+)\\.tmp$`).exec(name);
    const pid = m ? Number(m[1]) : NaN;
    if (!Number.isInteger(pid) || pid === process.pid || processAlive(pid, undefined, probe)) continue;
    unlinkQuietly(path.join(runtimeDir, name));
    removed.push(name);
  }
  return removed;
}

/** The live daemon holding the lock in `runtimeDir`, if one runs. */
export function runningDaemon(runtimeDir: string, probe: ProcProbe = realProbe): LockOwner | undefined {
  const owner = parseOwner(readText(path.join(runtimeDir, LOCK_FILE)));
  return owner && daemonRuns(owner, probe) ? owner : undefined;
}

function optionalStart(pid: number): { procStart?: string } {
  const s = procStartOf(pid);
  return s === undefined ? {} : { procStart: s };
}
