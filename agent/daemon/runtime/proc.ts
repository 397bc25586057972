// /proc/<pid>/stat: tells a live process from a dead one, and ours from
// another that the kernel gave the same pid.
import { readFileSync } from 'node:fs';

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
