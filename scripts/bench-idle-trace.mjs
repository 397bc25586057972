#!/usr/bin/env node
// The idle daemon's RSS over time beside a bare node, as docs/benchmarks.md
// ("The idle figure as a camera has it") shows it: one line a second, and
// one at each heartbeat the fake accepted. The daemon and the bare node run
// as `npm run bench` runs them (the unit's ExecStart, Environment= and code
// cache, HTTPS). Run `npm run build` first.
//
//   node scripts/bench-idle-trace.mjs [--scale 1] [--heartbeats 10] [--every-second]
//
// At --scale 1 (as deployed) ten heartbeats take 10 to 50 minutes.
import { parseArgs } from 'node:util';
import { agent, bareNode, codeCacheDir, fakeCloud, killAll, referee, root, rssKiB, sleep } from './bench/procs.mjs';
import { unitEnvironment } from './bench-upload-helpers.mjs';

const { values } = parseArgs({ options: { scale: { type: 'string', default: '1' }, heartbeats: { type: 'string', default: '10' }, 'every-second': { type: 'boolean', default: false } } });
const scale = Number(values.scale);
const beats = Number(values.heartbeats);
if (!(scale >= 1) || !(beats >= 1)) {
  console.error('bench-idle-trace: --scale and --heartbeats take numbers from 1');
  process.exit(64);
}
const cloud = await fakeCloud(scale, 2);
const unitEnv = unitEnvironment(root);
const bare = bareNode(unitEnv);
const daemon = agent(cloud, scale, 'trace', { env: { ...unitEnv, CACHE_DIRECTORY: await codeCacheDir(cloud, scale, 1, unitEnv) } });
const t0 = Date.now();
const mib = (pid) => (rssKiB(pid) / 1024).toFixed(1);
console.log(`--time-scale ${scale}; seconds after start, heartbeats accepted, agent and bare node VmRSS (MiB)`);
let seen = 0;
for (;;) {
  await sleep(1000);
  const { heartbeats } = await referee(cloud);
  if (values['every-second'] || heartbeats !== seen) {
    console.log(`${((Date.now() - t0) / 1000).toFixed(0)} s, ${heartbeats} heartbeats: agent ${mib(daemon.pid)}, bare ${mib(bare.pid)}${heartbeats !== seen ? ' (a heartbeat)' : ''}`);
  }
  seen = heartbeats;
  if (heartbeats >= beats) break;
}
killAll();
process.exit(0);
