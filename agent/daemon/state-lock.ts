// One daemon per state dir. The run lock (runtime/run-lock.ts) is one per
// runtime dir; a second `run` given the same state dir and another runtime
// dir passed it, came online beside the first, and its start-up removed the
// first one's upload URL files as leftovers. The state dir is what two
// daemons must never share (credentials, queue, index), so it has a lock of
// its own.
//
// How, without writing to flash and without a native addon (Node has no
// flock(2), and open file description locks are not reachable from it): a
// unix socket bound in Linux's abstract namespace, named after the state
// dir's device and inode (`\0c2c-agent/state/<dev>:<ino>`). bind() is
// atomic and refuses a name in use (EADDRINUSE); the kernel frees the name
// when the process ends, however it ends (kill -9, a crash, a power cut), so
// nothing goes stale; and nothing is written anywhere: no file per start to
// wear the card or to be judged stale later (a pid file would be both). The
// device and inode name the directory itself, whatever path or bind mount
// reaches it. The holder answers each connection with one JSON line (its
// pid, /proc start time and runtime dir), so a second daemon names it.
//
// Limits (docs/files.md): abstract names belong to a network namespace, so
// a daemon in another one (a container with its own network sharing the
// card) is not seen; and any local process may bind a name there, so a
// process squatting this one keeps the daemon from starting (it then says
// that something holds the lock, not whose it is, unless that says).
import net from 'node:net';
import { statSync } from 'node:fs';
import path from 'node:path';
import type { Clock } from '../lib/clock.js';
import { fitSocketName, listenUnix } from '../lib/socket-path.js';

/** What the holder says of itself. */
export interface StateLockHolder {
  pid: number;
  procStart?: string;
  runtimeDir?: string;
}

export type StateLockResult =
  | { kind: 'acquired'; release: () => void }
  /** `holder` undefined: the holder did not say who it is (not a c2c-agent, or too busy to answer in time). */
  | { kind: 'held'; holder: StateLockHolder | undefined };

/** The holder's answer is a line this long at most. */
const ANSWER_MAX = 1024;
/** Real ms the holder is given to answer. */
const ASK_REAL_MS = 2_000;

/**
 * The lock's name: `\0c2c-agent/state/<dev>:<ino>` of the state dir, or,
 * when it cannot be looked at, of its absolute path (still one name for
 * every daemon naming it the same way).
 */
export function stateLockName(stateDir: string): string {
  try {
    const st = statSync(stateDir);
    return `\0c2c-agent/state/${st.dev}:${st.ino}`;
  } catch {
    return fitSocketName(`\0c2c-agent/state-path/${path.resolve(stateDir)}`);
  }
}

function listen(name: string, me: StateLockHolder): Promise<net.Server | 'in-use'> {
  return new Promise((resolve, reject) => {
    const answer = `${JSON.stringify(me)}\n`;
    const server = net.createServer((c) => {
      c.on('error', () => undefined);
      c.end(answer);
    });
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve('in-use') : reject(err)));
    listenUnix(server, name, () => {
      // It must not keep a process alive that has nothing else to do (a command that took it for a moment).
      server.unref();
      resolve(server);
    });
  });
}

function holderOf(text: string): StateLockHolder | undefined {
  try {
    const o = JSON.parse(text) as Partial<StateLockHolder>;
    if (typeof o.pid !== 'number' || !Number.isSafeInteger(o.pid) || o.pid <= 0) return undefined;
    return { pid: o.pid, ...(typeof o.procStart === 'string' && { procStart: o.procStart }), ...(typeof o.runtimeDir === 'string' && { runtimeDir: o.runtimeDir }) };
  } catch {
    return undefined;
  }
}

/** Asks the holder who it is: its answer, 'gone' when nobody holds the name any more, undefined when it does not say. */
function ask(name: string, clock: Clock): Promise<StateLockHolder | 'gone' | undefined> {
  return new Promise((resolve) => {
    let text = '';
    const c = net.connect(name);
    const done = (v: StateLockHolder | 'gone' | undefined): void => {
      timer.cancel();
      c.destroy();
      resolve(v);
    };
    const timer = clock.setTimer(() => done(holderOf(text.split('\n')[0] ?? '')), ASK_REAL_MS * clock.scale);
    c.setEncoding('utf8');
    c.on('data', (d: string) => {
      text += d;
      if (text.includes('\n') || text.length > ANSWER_MAX) done(holderOf(text.slice(0, ANSWER_MAX).split('\n')[0] ?? ''));
    });
    c.on('end', () => done(holderOf(text.slice(0, ANSWER_MAX))));
    c.on('error', (err: NodeJS.ErrnoException) => done(err.code === 'ECONNREFUSED' ? 'gone' : undefined));
  });
}

/**
 * Takes the state dir's lock for this process, or says who holds it. Held
 * until release() or the process's end. The state dir must exist (its inode
 * names the lock): the caller makes it first.
 */
export async function acquireStateLock(stateDir: string, me: StateLockHolder, clock: Clock): Promise<StateLockResult> {
  const name = stateLockName(stateDir);
  for (let attempt = 0; ; attempt++) {
    const got = await listen(name, me);
    if (got !== 'in-use') return { kind: 'acquired', release: () => void got.close() };
    const holder = await ask(name, clock);
    // Its holder ended between the bind and the question: try again, a few times (another starter may win).
    if (holder === 'gone' && attempt < 3) continue;
    return { kind: 'held', holder: holder === 'gone' ? undefined : holder };
  }
}
