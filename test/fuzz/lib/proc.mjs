// Child processes for the fuzzers: each in its own process group (so a kill
// reaches anything it started), killed on a per-case deadline (a hang), or as
// soon as its RSS passes a bound (a file like /dev/zero read into memory), and
// with its output kept only up to a cap (a process that prints without end
// must not fill ours). Every child is tracked until it exits, so killAll()
// in a jest afterAll or the script's exit path leaves nothing behind.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

const OUTPUT_CAP = 4 * 1024 * 1024;
const live = new Set();

/** VmRSS of a pid in MiB, or undefined once it is gone. */
export function rssMiB(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Open descriptors of a pid: the count and the socket inodes among them. */
export function openFds(pid) {
  const out = { count: 0, sockets: [] };
  let names;
  try {
    names = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return undefined;
  }
  for (const n of names) {
    out.count++;
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${n}`));
      if (m) out.sockets.push(m[1]);
    } catch {
      // closed between the listing and the readlink
    }
  }
  return out;
}

function killGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // gone
    }
  }
}

/**
 * Starts `cmd args` and returns a handle: `done` resolves with
 * {code, signal, stdout, stderr, timedOut, rssKilled, maxRssMiB, ms}.
 * `timeoutMs` (per-case deadline) may be Infinity for a daemon the caller stops.
 */
export function start(cmd, args, o = {}) {
  const t0 = Date.now();
  const child = spawn(cmd, args, {
    cwd: o.cwd,
    env: o.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(o.uid !== undefined && { uid: o.uid, gid: o.gid }),
  });
  live.add(child);
  const out = { stdout: [], stderr: [], stdoutBytes: 0, stderrBytes: 0 };
  const keep = (which) => (d) => {
    const key = `${which}Bytes`;
    if (out[key] < OUTPUT_CAP) out[which].push(d.subarray(0, OUTPUT_CAP - out[key]));
    out[key] += d.length;
    o.onData?.(which, d);
  };
  child.stdout.on('data', keep('stdout'));
  child.stderr.on('data', keep('stderr'));
  let timedOut = false;
  let rssKilled = false;
  let maxRssMiB = 0;
  const limit = o.rssLimitMiB ?? 300;
  const timer = Number.isFinite(o.timeoutMs ?? 20_000)
    ? setTimeout(() => {
        timedOut = true;
        killGroup(child, 'SIGKILL');
      }, o.timeoutMs ?? 20_000)
    : undefined;
  const watch = setInterval(() => {
    const rss = child.pid === undefined ? undefined : rssMiB(child.pid);
    if (rss === undefined) return;
    maxRssMiB = Math.max(maxRssMiB, rss);
    if (rss > limit && !rssKilled) {
      rssKilled = true;
      killGroup(child, 'SIGKILL');
    }
  }, 50);
  const done = new Promise((resolve) => {
    let settled = false;
    const finish = (code, signal, spawnError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearInterval(watch);
      live.delete(child);
      // Whatever the child started must not outlive it.
      killGroup(child, 'SIGKILL');
      resolve({
        code,
        signal,
        spawnError,
        stdout: Buffer.concat(out.stdout).toString('utf8'),
        stderr: Buffer.concat(out.stderr).toString('utf8'),
        stdoutBytes: out.stdoutBytes,
        stderrBytes: out.stderrBytes,
        timedOut,
        rssKilled,
        maxRssMiB: Math.round(maxRssMiB),
        ms: Date.now() - t0,
      });
    };
    child.once('error', (err) => finish(null, null, String(err)));
    child.once('close', (code, signal) => finish(code, signal));
  });
  return {
    child,
    pid: child.pid,
    done,
    /** What it printed so far. */
    output: () => ({ stdout: Buffer.concat(out.stdout).toString('utf8'), stderr: Buffer.concat(out.stderr).toString('utf8') }),
    signal: (s) => {
      try {
        child.kill(s);
      } catch {
        // gone
      }
    },
    kill: () => killGroup(child, 'SIGKILL'),
  };
}

/** Runs to the end (or the deadline). */
export const run = (cmd, args, o = {}) => start(cmd, args, o).done;

/** SIGKILLs every process group still running; resolves once they are gone. */
export async function killAll() {
  const waits = [];
  for (const c of live) {
    waits.push(new Promise((r) => c.once('close', r)));
    killGroup(c, 'SIGKILL');
  }
  live.clear();
  await within(Promise.all(waits), 5_000);
}

/**
 * A pause the case draws: how long it exposes a real daemon, when a change comes while the daemon works.
 * Real time because its subject is a real process on real time. Never a wait for something to happen
 * before an oracle looks: that is pollUntil (or agent time, counted in heartbeats).
 */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms)); // real time: a case's own pacing of a real process

/**
 * `probe`'s first value that is neither undefined nor false, looked for every `everyMs`; undefined once
 * `hangMs` real ms passed (a bound against a hang, never a window an oracle judges).
 */
export async function pollUntil(probe, { everyMs = 25, hangMs = 10_000 } = {}) {
  const deadline = Date.now() + hangMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) return undefined;
    await new Promise((r) => setTimeout(r, everyMs)); // a poll's pace: the condition ends the wait
  }
}

/**
 * Real ms a daemon gets after SIGTERM before its case calls it hung: a bound against a hang, never a window an
 * oracle judges. The daemon's own hard exit comes 4.5 real s after SIGTERM (agent/daemon/main.ts HARD_EXIT_MS,
 * its real-time rule, systemd's TimeoutStopSec, held by test/integration/lifecycle.test.ts); a loaded
 * machine only makes it late.
 */
export const STOP_HANG_MS = 30_000;

/** `promise`'s value, or undefined after ms; the timer goes either way (a pending one would keep jest's worker alive). */
export function within(promise, ms) {
  let timer;
  return Promise.race([promise, new Promise((r) => (timer = setTimeout(() => r(undefined), ms)))]).finally(() => clearTimeout(timer));
}
