// For a command that puts work in the daemon's queue itself because no
// daemon answers (`upload`, `press`, `comment`): the daemon's two locks, the
// runtime dir's and the state dir's, held for the moment it writes, so it is
// never a second writer of a queue a daemon holds. A daemon that holds a
// lock but whose API does not answer, or one running on this state dir with
// another runtime dir, is one line naming what to do, exit 69.
import type { Settings } from '../config/types.js';
import { acquireRunLock } from '../daemon/runtime/run-lock.js';
import { acquireStateLock } from '../daemon/state-lock.js';
import { SystemClock, type Clock } from '../lib/clock.js';
import { ensureDir } from '../lib/ensure-dir.js';
import { AgentError } from '../lib/errors.js';
import { fsError, isFsError } from '../lib/fs-errors.js';
import { formatBytes, quotePath } from '../lib/text.js';
import { nodeOutboxFs } from '../outbox/node-fs.js';
import { Outbox } from '../outbox/outbox.js';
import type { OutboxFs } from '../outbox/types.js';
import { assertNoDaemon } from './daemon-api.js';

/** Runs `fn` holding both locks; `doing` is what only the daemon may do while it runs ("write its queue"). */
export async function withQueueLocks<T>(settings: Settings, socket: string, doing: string, fn: (clock: SystemClock) => Promise<T>): Promise<T> {
  // Without a runtime dir no daemon can be running here: make it, so the lock can say so.
  await ensureDir(settings.runtimeDir).catch(() => undefined);
  const lock = acquireRunLock(settings.runtimeDir);
  if (lock.kind === 'held') {
    assertNoDaemon(settings, socket, doing);
    throw new AgentError('unavailable', `a daemon (pid ${lock.owner.pid}) holds the run lock but its API at ${socket} does not answer; try again in a moment`);
  }
  const clock = new SystemClock(settings.timeScale);
  // A daemon with another runtime dir may run on this state dir (state-lock.ts): it alone writes its queue.
  await ensureDir(settings.stateDir).catch(() => undefined);
  const stateLock = await acquireStateLock(settings.stateDir, { pid: process.pid }, clock).catch((err: unknown) => {
    lock.release();
    throw err;
  });
  if (stateLock.kind === 'held') {
    lock.release();
    const h = stateLock.holder;
    const where = h?.runtimeDir !== undefined ? `; its API is in ${quotePath(h.runtimeDir)}: run this command with --runtime-dir ${quotePath(h.runtimeDir)}` : '';
    throw new AgentError('unavailable', `a daemon (${h === undefined ? 'its pid unknown' : `pid ${h.pid}`}) runs on the state dir ${quotePath(settings.stateDir)} with another runtime dir, and it alone may ${doing}${where}`);
  }
  try {
    return await fn(clock);
  } finally {
    stateLock.release();
    lock.release();
  }
}

/**
 * Puts one item in the outbox at `queueDir` and closes it (no daemon runs;
 * the caller holds the locks): resolves with its id once its record is on
 * flash. A disk that refuses the write is one line (lib/fs-errors.ts: 78 for
 * a read-only one, 75 for a full one); the outbox holding the record in
 * memory, as it does for a daemon, is a failure for a process about to exit.
 */
/**
 * The queue at `queueDir` opened for this process's own puts (no daemon runs). The outbox keeps a
 * refused write to itself (it holds the records and retries, as a daemon wants); here the error is
 * wanted: `assertWritten()` throws it, as one line naming `what` and the queue, unless every record
 * put is on flash.
 */
export async function openQueue(queueDir: string, o: { fs?: OutboxFs | undefined; clock: Clock; bootId: string; capBytes: number; source?: string | undefined; what: string }): Promise<{ outbox: Outbox; assertWritten(): void }> {
  let refused: unknown;
  const base = o.fs ?? nodeOutboxFs();
  const noting = <A extends unknown[], R>(fn: (...a: A) => Promise<R>) => async (...a: A): Promise<R> => {
    try {
      return await fn(...a);
    } catch (err) {
      refused = err;
      throw err;
    }
  };
  const fs: OutboxFs = { ...base, mkdir: noting(base.mkdir), append: noting(base.append), fsync: noting(base.fsync), fsyncDir: noting(base.fsyncDir), truncate: noting(base.truncate) };
  const outbox = new Outbox({ dir: queueDir, fs, clock: o.clock, bootId: o.bootId, capBytes: o.capBytes });
  try {
    await outbox.open();
  } catch (err) {
    throw isFsError(err) ? fsError(err, `open the ${o.what}`, queueDir, o.source) : err;
  }
  return {
    outbox,
    assertWritten: () => {
      if (outbox.stats().unwritten > 0) throw fsError(refused ?? Object.assign(new Error('write refused'), { code: 'EIO', syscall: 'write' }), `write the ${o.what}`, queueDir, o.source);
    },
  };
}

export async function putInQueue(queueDir: string, kind: string, payload: unknown, o: { clock: Clock; bootId: string; capBytes: number; priority: number; source: string }): Promise<string> {
  const { outbox, assertWritten } = await openQueue(queueDir, { ...o, what: 'queue' });
  try {
    const put = outbox.put(kind, payload, { priority: o.priority });
    await outbox.flush();
    const item = await put;
    assertWritten();
    if (item.state !== 'pending') throw new AgentError('disk', `cannot queue it: the queue is at its cap of ${formatBytes(o.capBytes)} (${item.reason ?? 'dropped'}); let the daemon send what is queued, or raise queueMaxBytes`);
    return item.id;
  } finally {
    await outbox.close().catch(() => undefined);
  }
}
