// /proc/<pid>/task/<pid>/stat: tells a live process from a dead one, and ours
// from another that the kernel gave the same pid.
//
// The main thread's task entry rather than /proc/<pid>/stat: under qemu-user
// (an ARM image tested on a PC) the emulator answers a process's reads of its
// own /proc/<pid>/stat itself, with a start time one tick off the kernel's,
// so the start the daemon recorded never matched what `status` read and a
// live daemon looked stale. The emulator leaves the task entry alone; where
// there is none, /proc/<pid>/stat is read.
import { readBoundedTextSync } from '../../lib/bounded-read.js';

export interface ProcStat {
  /** Field 3: R, S, D... Z (zombie) and X (dead) hold a pid but no live process. */
  state: string;
  /** Field 22: the start time, which tells a reused pid from ours. */
  start: string;
}

function readStat(file: string): string | undefined {
  try {
    // procfs gives size 0; the bounded read reads to the end (a command name is at most 64 bytes, the line well under 4 KiB).
    return readBoundedTextSync(file, { what: 'process stat', maxBytes: 4096 });
  } catch {
    return undefined;
  }
}

/**
 * The process's stat, or undefined when it cannot be read (gone, or hidden by
 * hidepid/ProtectProc). `procRoot` is for tests: a tree shaped like /proc.
 */
export function procStatOf(pid: number, procRoot = '/proc'): ProcStat | undefined {
  const stat = readStat(`${procRoot}/${pid}/task/${pid}/stat`) ?? readStat(`${procRoot}/${pid}/stat`);
  if (stat === undefined) return undefined;
  // The command name (field 2) may hold spaces and parentheses: split after the last ')'.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const [state, start] = [rest[0], rest[19]];
  return state === undefined || start === undefined ? undefined : { state, start };
}

export function procStartOf(pid: number): string | undefined {
  return procStatOf(pid)?.start;
}
