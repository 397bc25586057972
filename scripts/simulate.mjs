#!/usr/bin/env node
// The simulator: a short story played by real agent processes from the
// bundle against the fake cloud, with no camera and no service account.
// The parts live in scripts/sim/ (options, cloud, device, monitor, story,
// progress, judge, report, session). With --fleet it hands over to
// dist/fleet.mjs, the fleet in virtual time.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT_USAGE, USAGE, parseOptions } from './sim/options.mjs';
import { runSession } from './sim/session.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = (f) => path.join(root, 'dist', f);
const EXIT_UNAVAILABLE = 69;

function missing(file, hint) {
  process.stderr.write(`simulate: ${file} is missing; ${hint}\n`);
  process.exit(EXIT_UNAVAILABLE);
}

const parsed = parseOptions(process.argv.slice(2));
if (parsed.kind === 'usage') {
  process.stderr.write(`simulate: ${parsed.message}; ${USAGE}\n`);
  process.exit(EXIT_USAGE);
}
if (parsed.kind === 'help') {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (parsed.kind === 'fleet') {
  if (!existsSync(dist('fleet.mjs'))) missing(dist('fleet.mjs'), 'run `npm run build` (the fleet simulator is built with the bundle)');
  const child = spawn(process.execPath, [dist('fleet.mjs'), ...parsed.args], { stdio: 'inherit' });
  // The fleet shares the terminal: a Ctrl-C reaches it directly; a SIGTERM sent to us is passed on.
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => child.kill('SIGTERM'));
  child.once('exit', (code, signal) => process.exit(code ?? (signal === 'SIGINT' ? 130 : 143)));
} else {
  const bundles = { agent: dist('c2c-agent.mjs'), fakeCloud: dist('fake-cloud.mjs') };
  for (const f of Object.values(bundles)) if (!existsSync(f)) missing(f, 'run `npm run build` first (npm run simulate does)');
  process.exit(await runSession(parsed.options, { bundles }));
}
