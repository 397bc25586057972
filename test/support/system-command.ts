// The system tools the root-only suites run (ip, iptables, losetup, mount,
// mkfs.ext4, e2fsck): found by full path, since jest's PATH begins with
// node_modules/.bin folders, and run with their stderr in the error. Which
// suite needs which tool, and how npm test installs them, is
// scripts/system-tools.mjs.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const SYSTEM_DIRS = ['/usr/sbin', '/sbin', '/usr/bin', '/bin'];

/** A system tool by its full path. */
export function tool(name: string): string {
  for (const dir of SYSTEM_DIRS) if (existsSync(`${dir}/${name}`)) return `${dir}/${name}`;
  throw new Error(`${name} not found in ${SYSTEM_DIRS.join(', ')}; npm test installs it as root (scripts/system-tools.mjs)`);
}

/** Runs a system tool; its stdout, or an error with its stderr. */
export function run(cmd: string, args: string[]): string {
  try {
    return execFileSync(tool(cmd), args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${(e.stderr ?? '').trim() || e.message}`);
  }
}

/** Runs a system tool for cleanup: whatever is already gone is fine. */
export function quiet(cmd: string, args: string[]): void {
  try {
    run(cmd, args);
  } catch {
    // already gone
  }
}
