// Every process the simulator starts, kept in one list, so that no way of
// ending leaves one behind. The fake cloud and the agents run in their own
// process groups (a Ctrl-C at the terminal must reach the simulator only, which
// still needs them for its report), so neither the terminal's SIGINT nor its
// SIGHUP reaches them: the simulator ends them itself. On a normal end, the
// session stops each one; on any other (a second signal, process.exit, an
// uncaught error, a rejected promise) the 'exit' hook below SIGKILLs whatever
// is left. Only SIGKILL of the simulator itself escapes this.
import { spawn, execFile } from 'node:child_process';

const alive = new Set();

function track(child) {
  alive.add(child);
  child.once('exit', () => alive.delete(child));
  child.once('error', () => alive.delete(child));
  return child;
}

/** `child_process.spawn`, the child remembered until it exits. */
export function spawnTracked(command, args, options) {
  return track(spawn(command, args, options));
}

/** `child_process.execFile`, the child remembered until it exits. */
export function execFileTracked(command, args, options, callback) {
  return track(execFile(command, args, options, callback));
}

/** The pids of the children still running (for a test, or a last word). */
export function livePids() {
  return [...alive].map((c) => c.pid).filter((pid) => pid !== undefined);
}

function killAll() {
  for (const child of alive) {
    try {
      child.kill('SIGKILL');
    } catch {
      // Already gone.
    }
  }
  alive.clear();
}

let installed = false;

/**
 * Installed once, before the first child: every exit kills what is left; an
 * uncaught error or a rejected promise is said in one line (and a FAILED
 * verdict, the last line on the screen) and exits 70, which runs that hook.
 */
export function reapOnExit({ onCrash } = {}) {
  if (installed) return;
  installed = true;
  process.on('exit', killAll);
  const crash = (err) => {
    killAll();
    try {
      onCrash?.(err);
    } finally {
      process.exit(70);
    }
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
}
