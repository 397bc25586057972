#!/usr/bin/env node
// The agent's footprint in one table, every figure against a baseline
// measured in the same run on the same machine (the machine is noisy and
// absolute figures do not travel from a laptop to a Pi; ratios do).
//
//   npm run bench            (builds first; about 10 minutes on 2 cores)
//   node scripts/bench.mjs [--only idle,start,bundle,features,state,upload,realtime,fleet] [--quick]
//
// --only runs a subset (rss and cpu are names for idle); --quick shortens
// every window (4 agent hours of RSS, 3 start-up runs, a 512 MiB upload, a
// smaller fleet) for iterating, not for docs/benchmarks.md. The parts, one module
// each under scripts/bench/, say how they measure. The table is also written
// as Markdown to dist/bench.md for docs/benchmarks.md.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { bundleSize, stateDirWrites } from './bench/disk.mjs';
import { fleetHerd, realtimeUploads, uploadRss } from './bench/external.mjs';
import { markdownTable, missingRow, parseOnly, textTable } from './bench/figures.mjs';
import { idle } from './bench/idle.mjs';
import { FEATURE_ROWS, featureCosts, featureLabel } from './bench/features.mjs';
import { killAll, root } from './bench/procs.mjs';
import { startup } from './bench/start.mjs';

let values;
try {
  ({ values } = parseArgs({ options: { only: { type: 'string' }, quick: { type: 'boolean', default: false } } }));
} catch (err) {
  console.error(`bench: ${err.message}`);
  process.exit(64);
}
const quick = values.quick;

// Each part: what it measures (for progress and for a row when it fails), its rows' ids in table order, and the run.
const PARTS = {
  bundle: { ids: ['bundle'], about: 'bundle size', run: () => bundleSize() },
  start: { ids: ['start', 'startcold'], about: 'start to first heartbeat', run: () => startup({ runs: quick ? 3 : 15 }) },
  idle: { ids: ['rss10', 'rss10fast', 'rss10plain', 'rss10cafile', 'rss10noflags', 'rss10api', 'rss10web', 'rss10webpage', 'rss24', 'growth', 'cpu'], about: `idle RSS and CPU (${quick ? 'about 1 min' : 'about 4 min'})`, run: () => idle(quick ? { hours: 4, settleS: 10 } : {}) },
  features: { ids: FEATURE_ROWS.map((n) => `feature-${n}`), about: `each feature's cost to an idle daemon, on but unused and used (about 4 min)`, run: () => featureCosts() },
  state: { ids: ['state'], about: 'state-dir writes per heartbeat', run: () => stateDirWrites() },
  upload: { ids: ['upload'], about: `RSS while uploading (${quick ? 'about 1 min' : 'about 6 min'}: the unit's node flags, then bare node)`, run: () => uploadRss({ quick }) },
  realtime: { ids: ['realtime', 'realtimeRss'], about: `real-time uploads against whole-file (${quick ? 'about 1 min' : 'about 3 min'})`, run: () => realtimeUploads({ quick }) },
  fleet: { ids: ['herd'], about: `fleet simulation (${quick ? 'seconds' : 'a few minutes'})`, run: () => fleetHerd(quick ? { fleet: 200, hours: 6 } : {}) },
};
// Table order, and what a row says when its part failed.
const LABELS = {
  rss10: "idle RSS after 10 heartbeats (HTTPS, the unit's node flags)", rss10fast: 'idle RSS after 10 heartbeats at --time-scale 600 (before V8 returns the start-up\'s memory)', rss10plain: 'idle RSS after 10 heartbeats, plain HTTP (loopback)', rss10cafile: 'idle RSS after 10 heartbeats, HTTPS trusting caFile', rss10noflags: "idle RSS after 10 heartbeats (HTTPS), without the unit's environment (node flags, malloc tuning)", rss10api: 'idle RSS after 10 heartbeats (HTTPS), local API with an events reader attached', rss10web: 'idle RSS after 10 heartbeats (HTTPS), web page on, no page open', rss10webpage: 'idle RSS after 10 heartbeats (HTTPS), web page on, one page open', rss24: 'idle RSS after 24 agent hours', growth: 'RSS growth over 24 agent hours', start: "start to first heartbeat (the unit's code cache)", startcold: 'start to first heartbeat, first start after an install (no code cache yet)',
  bundle: 'bundle dist/c2c-agent.mjs', state: 'bytes written to the state dir per healthy heartbeat', cpu: 'CPU s per agent hour',
  upload: 'RSS while uploading a 2 GiB sparse file',
  realtime: 'stop to complete, a clip recorded at 20 MB/s over a 40 MB/s link', realtimeRss: 'RSS while a recording uploads in real time', herd: 'thundering herd after a mass restart',
  ...Object.fromEntries(FEATURE_ROWS.map((n) => [`feature-${n}`, featureLabel(n)])),
};
const ORDER = Object.keys(LABELS);

function header() {
  const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
  let commit;
  try {
    commit = git('rev-parse', '--short', 'HEAD') + (git('status', '--porcelain', '--untracked-files=no') ? '+dirty' : '');
  } catch {
    commit = 'n/a (not a git checkout)';
  }
  const cores = cpus();
  return {
    commit,
    lines: [
      `commit ${commit}; node ${process.version}; ${cores.length} cores (${cores[0]?.model?.trim() ?? 'unknown'}); ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}${quick ? '; --quick' : ''}`,
    ],
  };
}

async function main() {
  let only;
  try {
    only = parseOnly(values.only?.replace(/\b(rss|cpu)\b/g, 'idle'), Object.keys(PARTS));
  } catch (err) {
    console.error(`bench: ${err.message} (rss and cpu mean idle)`);
    process.exit(64);
  }
  const head = header();
  const rows = new Map();
  const notes = [];
  // One part at a time: even figures that are not timings (an RSS peak)
  // move when GC threads compete with another part for the two cores.
  for (const name of only) {
    const part = PARTS[name];
    process.stderr.write(`bench: ${part.about}...\n`);
    try {
      const r = await part.run();
      r.rows.forEach((x, i) => rows.set(part.ids[i], x));
      notes.push(...r.notes);
    } catch (err) {
      killAll(); // what the failed part left running
      for (const id of part.ids) rows.set(id, missingRow(LABELS[id], '', `failed: ${String(err.message ?? err).split('\n')[0].slice(0, 160)}`));
    }
  }
  const table = ORDER.filter((id) => rows.has(id)).map((id) => rows.get(id));
  console.log(head.lines.join('\n'));
  console.log('');
  console.log(textTable(table));
  console.log('');
  for (const n of notes) console.log(`- ${n}`);

  const md = [
    `Measured on commit ${head.commit}: ${head.lines[0].split('; ').slice(1).join('; ')}. Rerun: \`npm run bench\`.`,
    '',
    markdownTable(table),
    '',
    ...notes.map((n) => `- ${n}`),
    '',
  ].join('\n');
  mkdirSync(path.join(root, 'dist'), { recursive: true });
  writeFileSync(path.join(root, 'dist/bench.md'), md);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`bench: ${err.stack ?? err}`);
    process.exit(1);
  },
);
