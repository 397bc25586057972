#!/usr/bin/env node
// The long fuzz run (`npm run fuzz`): the same seeded generators and oracles
// as the jest suites in test/fuzz/, for as many cases or minutes as asked.
//
//   node scripts/fuzz.mjs [--target answers|files|media|localapi|all] [--seed S]
//                         [--cases N] [--minutes M] [--case N] [--jobs N] [--verbose]
//                         [--bundle FILE] [--fake-cloud FILE]
//
// --case N replays one case of --seed S exactly (what a failure line prints).
// Prints one summary line per target ("answers: 5000 cases, 0 crashes, 0
// hangs, 0 wrong") and the failures grouped by cause; exits 1 when any count
// but cases is non-zero, 64 on a bad option. Needs the built dist/ (npm run
// fuzz builds it first).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { TARGETS, freshSeed, killAll, replayCommand, runTarget } from '../test/fuzz/lib/run.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const USAGE = 'usage: node scripts/fuzz.mjs [--target answers|files|media|localapi|all] [--seed S] [--cases N] [--minutes M] [--case N] [--jobs N] [--verbose] [--bundle FILE] [--fake-cloud FILE]';

function usage(message) {
  process.stderr.write(`fuzz: ${message}\n${USAGE}\n`);
  process.exit(64);
}

let values;
try {
  ({ values } = parseArgs({
    options: {
      target: { type: 'string', default: 'all' },
      seed: { type: 'string' },
      cases: { type: 'string' },
      minutes: { type: 'string' },
      case: { type: 'string' },
      jobs: { type: 'string' },
      verbose: { type: 'boolean', default: false },
      bundle: { type: 'string' },
      'fake-cloud': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  }));
} catch (err) {
  usage(err.message);
}
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const int = (name, min) => {
  const v = values[name];
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v) || Number(v) < min) usage(`--${name} must be an integer >= ${min}, got '${v}'`);
  return Number(v);
};
const targets = values.target === 'all' ? Object.keys(TARGETS) : values.target.split(',');
for (const t of targets) if (!(t in TARGETS)) usage(`unknown target '${t}'`);
const seed = int('seed', 0) ?? freshSeed();
const only = int('case', 0);
const minutes = values.minutes === undefined ? undefined : Number(values.minutes);
if (minutes !== undefined && !(minutes > 0)) usage(`--minutes must be a positive number, got '${values.minutes}'`);
let cases = int('cases', 1);
if (cases === undefined && minutes === undefined && only === undefined) cases = 200;
const jobs = int('jobs', 1);

// --bundle / --fake-cloud fuzz another build (an older one, to see whether a failure is new).
const bundle = path.resolve(values.bundle ?? path.join(root, 'dist/c2c-agent.mjs'));
const fakeCloud = path.resolve(values['fake-cloud'] ?? path.join(root, 'dist/fake-cloud.mjs'));
if (!existsSync(bundle)) usage(`${bundle} is missing: run npm run build (npm run fuzz builds it)`);

// Ctrl-C (or SIGTERM): no new case starts, the cases in flight finish and the runner kills what is
// left; a second one kills every child now and quits.
let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    if (interrupted) {
      void killAll().finally(() => process.exit(130));
      return;
    }
    interrupted = true;
    process.stderr.write('fuzz: interrupted; stopping after the cases in flight\n');
  });
}

process.stdout.write(`fuzz: seed ${seed}${only !== undefined ? `, case ${only}` : ''}${cases !== undefined ? `, ${cases} cases per target` : ''}${minutes !== undefined ? `, ${minutes} minutes per target` : ''}\n`);
const results = [];
for (const target of targets) {
  const deadline = minutes === undefined ? undefined : Date.now() + minutes * 60_000;
  const r = await runTarget({
    target,
    bundle,
    fakeCloud,
    seed,
    cases,
    only,
    deadline,
    stop: () => interrupted,
    jobs: jobs ?? (target === 'media' ? 1 : 2),
    verbose: values.verbose,
    replayExtra: `${values.bundle ? ` --bundle ${bundle}` : ''}${values['fake-cloud'] ? ` --fake-cloud ${fakeCloud}` : ''}`,
  });
  results.push({ ...r, replayExtra: `${values.bundle ? ` --bundle ${bundle}` : ''}${values['fake-cloud'] ? ` --fake-cloud ${fakeCloud}` : ''}` });
  if (interrupted) break;
}
process.stdout.write('\n');
for (const r of results) {
  if (r.groups.length === 0) continue;
  process.stdout.write(`${r.target}: failures by cause (cases, first case)\n`);
  for (const g of r.groups) process.stdout.write(`  ${String(g.cases).padStart(5)}  [${g.cat}] ${g.sig}  e.g. ${g.example.slice(0, 160)}\n         replay: ${replayCommand(r.target, r.seed, g.first, r.replayExtra)}\n`);
}
for (const r of results) process.stdout.write(`${r.summary}\n`);
process.exitCode = results.some((r) => r.crashes + r.hangs + r.wrong + r.errors > 0) ? 1 : 0;
