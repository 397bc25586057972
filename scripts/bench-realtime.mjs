#!/usr/bin/env node
// Real-time upload benchmark (figures, not assertions; issue 21): how long
// after the camera stops a clip is complete at the service, uploading while
// it records against uploading the finished file, in the same run.
//
//   npm run bench -- --only realtime          (the row in the table)
//   node scripts/bench-realtime.mjs [--size 1G] [--record-mbps 20] [--link-mbps 40]
//        [--settle 5] [--timeout 600] [--node-options '...' (default: the systemd unit's)]
//        [--bundle FILE (default dist/c2c-agent.mjs)] [--json]
//
// What is measured:
// - A recorder in this process writes `take.mov.part` into the agent's media
//   dir (on tmpfs, /dev/shm) at --record-mbps in 1 MiB writes, rewrites its
//   first 4 KiB when it stops (as MOV writers do), and renames it to
//   `take.mov`. The figure is the time from that rename to the fake holding
//   every byte of the asset (cloud.asset(id).complete, polled every 5 ms), on
//   the fake's clock (performance.now() at scale 1).
// - Each agent runs as the unit runs it: the unit's Environment= lines (its
//   NODE_OPTIONS unless --node-options says otherwise), over HTTPS to the fake,
//   whose throwaway CA it trusts through NODE_EXTRA_CA_CERTS.
// - Each agent talks to the fake through a TCP proxy that lets --link-mbps MB/s
//   through from the agent (one uplink shared by its connections; answers
//   unthrottled): the storage link the issue names.
// - Real-time: `run --realtime-uploads true`. Whole-file: the same agent
//   without it, --media-settle-seconds 0 (the finished file is taken at once:
//   the whole-file figure is its transfer, nothing added). A fresh agent and a
//   fresh fake device each; both delete the clip once uploaded.
// - RSS: VmRSS of the real-time agent sampled every 100 ms from before the
//   recording starts until its asset is complete; idle = the median of 10
//   samples after --settle s idle. Peak minus idle is the figure (the
//   recorder and the fake run in this process, not in the agent's).
import { closeSync, existsSync, mkdtempSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { MiB, loadFakeCloud, median, parseSize, rss, sampleRss, sleep, startAgent, unitEnvironment, unitNodeOptions, JournalWatch } from './bench-upload-helpers.mjs';
import { startThrottle } from './bench-upload-memory.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let values;
try {
  ({ values } = parseArgs({
    options: {
      size: { type: 'string', default: '1G' },
      'record-mbps': { type: 'string', default: '20' },
      'link-mbps': { type: 'string', default: '40' },
      settle: { type: 'string', default: '5' },
      timeout: { type: 'string', default: '600' },
      'node-options': { type: 'string' },
      bundle: { type: 'string', default: path.join(root, 'dist/c2c-agent.mjs') },
      json: { type: 'boolean', default: false },
    },
  }));
} catch (err) {
  console.error(`bench-realtime: ${err.message}`);
  process.exit(64);
}
const SIZE = parseSize('size', values.size);
const RECORD = Number(values['record-mbps']) * 1e6;
const LINK = Number(values['link-mbps']) * 1e6;
const SETTLE_S = Number(values.settle);
const TIMEOUT_MS = Number(values.timeout) * 1000;
const NODE_OPTIONS = values['node-options'] ?? unitNodeOptions(root);
if (!(RECORD > 0) || !(LINK > 0) || !(SETTLE_S >= 0) || !(TIMEOUT_MS > 0)) {
  console.error('bench-realtime: --record-mbps, --link-mbps and --timeout must be positive numbers, --settle not negative');
  process.exit(64);
}
if (!existsSync(values.bundle)) {
  console.error(`bench-realtime: ${values.bundle} is not built (npm run build)`);
  process.exit(66);
}

const tmp = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : '/tmp', 'c2c-bench-rt-'));
const children = new Set();
let fatal;
const failed = () => fatal;
const log = (m) => !values.json && process.stderr.write(`bench-realtime: ${m}\n`);

/** Writes `size` bytes to `<dir>/<name>.part` at `rate`, patches its first 4 KiB, renames it; resolves with the fake's time of the rename. */
async function record(dir, name, size, rate, now) {
  const part = path.join(dir, `${name}.part`);
  const block = randomBytes(MiB);
  const fd = openSync(part, 'w');
  const t0 = performance.now();
  try {
    for (let at = 0; at < size; ) {
      const n = Math.min(MiB, size - at);
      // A fresh first word per write: no two MiB of the clip are the same.
      block.writeUInt32LE(at / MiB, 0);
      writeSync(fd, block, 0, n, at);
      at += n;
      const due = t0 + (at / rate) * 1000;
      if (due > performance.now()) await sleep(due - performance.now());
      const why = failed();
      if (why) throw new Error(why);
    }
    writeSync(fd, randomBytes(4096), 0, 4096, 0);
  } finally {
    closeSync(fd);
  }
  renameSync(part, path.join(dir, name));
  return now();
}

/**
 * As the unit runs the agent: its other Environment= lines (glibc's malloc
 * tuning; NODE_OPTIONS goes as --node-options says), and the fake's
 * throwaway CA trusted as a public one is, through NODE_EXTRA_CA_CERTS.
 */
function asDeployed(cloud) {
  const { NODE_OPTIONS: _flags, ...unitRest } = unitEnvironment(root);
  return { ...unitRest, NODE_EXTRA_CA_CERTS: cloud.caFile };
}

/** One agent through the throttle: idle RSS, then a recording; the stop-to-complete time and the RSS peak. */
async function run(cloud, watch, device, mode) {
  const throttle = await startThrottle(cloud.url, LINK);
  const agent = startAgent({
    bundle: values.bundle, cloud, device, dir: path.join(tmp, mode), children, apiUrl: throttle.url, nodeOptions: NODE_OPTIONS, env: asDeployed(cloud),
    onEarlyExit: (m) => (fatal = m), extraArgs: mode === 'realtime' ? ['--realtime-uploads', 'true'] : [],
  });
  try {
    await watch.ready(device.id, 30_000);
    await sleep(SETTLE_S * 1000);
    const idle = [];
    for (let i = 0; i < 10; i++, await sleep(100)) idle.push(rss(agent.pid).total);
    const stopRss = sampleRss(agent.pid);
    const name = `take-${mode}.mov`;
    log(`${mode}: recording ${(SIZE / MiB).toFixed(0)} MiB at ${RECORD / 1e6} MB/s`);
    const stoppedAt = await record(agent.mediaDir, name, SIZE, RECORD, () => cloud.now());
    const deadline = Date.now() + TIMEOUT_MS;
    let asset;
    for (;;) {
      asset = cloud.assets().find((a) => a.deviceId === device.id && a.name === name && a.complete);
      if (asset) break;
      if (failed()) throw new Error(failed());
      if (Date.now() > deadline) throw new Error(`${mode}: ${name} not complete within ${TIMEOUT_MS / 1000} s of the stop`);
      await sleep(5);
    }
    const completeAt = cloud.now();
    const samples = stopRss().map((x) => x.total);
    const idleKiB = median(idle);
    const peakKiB = Math.max(...samples);
    if (asset.filesize !== SIZE) throw new Error(`${mode}: the asset holds ${asset.filesize} bytes, the clip ${SIZE}`);
    log(`${mode}: complete ${((completeAt - stoppedAt) / 1000).toFixed(2)} s after the stop`);
    return { tailS: (completeAt - stoppedAt) / 1000, parts: asset.parts.length, realtime: asset.realtime, idleRssMiB: idleKiB / 1024, peakRssMiB: peakKiB / 1024, growthMiB: (peakKiB - idleKiB) / 1024 };
  } finally {
    await agent.stop();
    await throttle.close();
  }
}

async function main() {
  const { startFakeCloud } = await loadFakeCloud(root, tmp);
  // Over HTTPS, as the service and its storage are.
  const cloud = await startFakeCloud({ devices: 2, tls: true });
  const watch = new JournalWatch(cloud);
  let realtime, whole;
  try {
    realtime = await run(cloud, watch, cloud.devices[0], 'realtime');
    whole = await run(cloud, watch, cloud.devices[1], 'whole');
  } finally {
    await cloud.close();
  }
  const out = { sizeBytes: SIZE, recordMBps: RECORD / 1e6, linkMBps: LINK / 1e6, nodeOptions: NODE_OPTIONS, realtime, whole, ratio: whole.tailS / realtime.tailS };
  if (values.json) return console.log(JSON.stringify(out));
  const f = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  console.log(`stop to complete, ${(SIZE / MiB).toFixed(0)} MiB recorded at ${RECORD / 1e6} MB/s over ${LINK / 1e6} MB/s: real-time ${f(realtime.tailS)} s (${realtime.parts} parts), whole-file ${f(whole.tailS)} s; ratio ${f(out.ratio)}x`);
  console.log(`RSS of the real-time agent: idle ${f(realtime.idleRssMiB, 1)} MiB, peak ${f(realtime.peakRssMiB, 1)} MiB, +${f(realtime.growthMiB, 1)} MiB (whole-file agent: +${f(whole.growthMiB, 1)} MiB)`);
}

const cleanUp = () => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(tmp, { recursive: true, force: true });
};
main().then(
  () => (cleanUp(), process.exit(0)),
  (err) => {
    cleanUp();
    console.error(`bench-realtime: ${err.message}`);
    process.exit(1);
  },
);
