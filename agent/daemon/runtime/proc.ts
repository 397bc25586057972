// /proc/<pid>/stat: tells a live process from a dead one, and ours from
// another that the kernel gave the same pid.
import { readBoundedTextSync } from '../../lib/bounded-read.js';

export interface ProcStat {
  /** Field 3: R, S, D... Z (zombie) and X (dead) hold a pid but no live process. */
  state: string;
  /** Field 22: the start time, which tells a reused pid from ours. */
  start: string;
}

/** /proc/<pid>/stat, or undefined when it cannot be read (gone, or hidden by hidepid/ProtectProc). */
export function procStatOf(pid: number): ProcStat | undefined {
  try {
    // procfs gives size 0; the bounded read reads to the end (a command name is at most 64 bytes, the line well under 4 KiB).
    const stat = readBoundedTextSync(`/proc/${pid}/stat`, { what: 'process stat', maxBytes: 4096 });
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
