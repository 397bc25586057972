// What every entry file does around its main(): the Node.js version check
// before any code an older Node cannot run, the one-line contract for a throw
// outside main's promise, an exit code through process.exitCode (never
// process.exit(), so pending stdout writes reach a pipe), and a lost promise
// reported as the bug it is. For cli/main.ts (dist/c2c-agent.mjs, every
// command) and daemon/entry.ts (dist/c2c-agentd-main.cjs, the daemon systemd runs).
import { EXIT } from '../lib/errors.js';
import { fail, stderr } from './output.js';
import { checkNodeVersion } from './version.js';

export function runMain(main: (argv: string[]) => Promise<number>): void {
  const argv = process.argv.slice(2);
  const tooOld = checkNodeVersion(process.versions.node);
  if (tooOld !== undefined) {
    stderr().write(`${tooOld}\n`);
    process.exitCode = EXIT.config;
    return;
  }
  // A throw from a callback outside main's promise (a stream, a timer) would
  // otherwise be a multi-line stack trace: keep the one-line contract. A
  // command that installs its own handler (run: log, release the lock, exit)
  // owns the exit, so this one then stands aside.
  process.on('uncaughtException', (err) => {
    if (process.listenerCount('uncaughtException') > 1) return;
    fail(err, { json: argv.includes('--json') });
    process.exit(1);
  });
  let settled = false;
  // A command whose work was lost (a promise nothing will ever settle: the way a
  // 101 once made `check` exit 0 having verified nothing) must not pass for a
  // success when the event loop runs dry: that is a bug, and it says so.
  process.once('beforeExit', () => {
    if (!settled) process.exitCode = fail(new Error('the command ended without an outcome'), { json: argv.includes('--json') });
  });
  main(argv).then(
    (code) => {
      settled = true;
      process.exitCode = code;
    },
    (err: unknown) => {
      settled = true;
      // Before parsing succeeded we cannot know the command took --json; the literal flag is the best hint.
      process.exitCode = fail(err, { json: argv.includes('--json') });
    },
  );
}
