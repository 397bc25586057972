#!/usr/bin/env node
// The simulator: a short story played by real agent processes from the
// bundle against the fake cloud, with no camera and no service account.
// The parts live in scripts/sim/ (options, cloud, device, monitor, story,
// progress, judge, report, session). With --fleet it hands over to
// dist/fleet.mjs, the fleet in virtual time.
import { existsSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT_USAGE, USAGE, parseOptions } from './sim/options.mjs';
import { runSession } from './sim/session.mjs';
import { reapOnExit, spawnTracked } from './sim/children.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = (f) => path.join(root, 'dist', f);
const EXIT_UNAVAILABLE = 69;

function missing(file, hint) {
  process.stderr.write(`simulate: ${file} is missing; ${hint}\n`);
  process.exit(EXIT_UNAVAILABLE);
}

// No way of ending leaves a process behind; a crash is said in one line and is the verdict, last on the screen.
reapOnExit({
  onCrash(err) {
    process.stderr.write(`simulate: crashed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.stdout.write(`\nFAILED: the simulator crashed (${err instanceof Error ? err.message : String(err)}); no process of this run is left\n`);
  },
});

// The environment tells when npm took an option meant for the simulator (`npm run simulate --devices 3`, the -- forgotten).
const parsed = parseOptions(process.argv.slice(2), process.env);
if (parsed.kind === 'usage') {
  process.stderr.write(`simulate: ${parsed.message}${parsed.usageLine === false ? '' : `; ${USAGE}`}\n`);
  process.exit(EXIT_USAGE);
}
if (parsed.kind === 'help') {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (parsed.kind === 'fleet') {
  if (!existsSync(dist('fleet.mjs'))) missing(dist('fleet.mjs'), 'run `npm run build` (the fleet simulator is built with the bundle)');
  const child = spawnTracked(process.execPath, [dist('fleet.mjs'), ...parsed.args], { stdio: 'inherit' });
  // The fleet shares the terminal: a Ctrl-C or a hang-up reaches it directly; one sent to us alone is passed on.
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => child.kill(sig));
  child.once('exit', (code, signal) => {
    // The fleet prints its own verdict; one stopped by a signal could not, so it is said here, last.
    if (signal && !parsed.args.includes('--json')) process.stdout.write(`FAILED: the fleet run was stopped by ${signal}\n`);
    process.exit(code ?? 128 + (osConstants.signals[signal] ?? 15));
  });
} else {
  const bundles = { agent: dist('c2c-agent.mjs'), fakeCloud: dist('fake-cloud.mjs') };
  for (const f of Object.values(bundles)) if (!existsSync(f)) missing(f, 'run `npm run build` first (npm run simulate does)');
  process.exit(await runSession(parsed.options, { bundles }));
}
