#!/usr/bin/env node
// Media upload benchmark (figures, not assertions): the real agent
// (`c2c-agent run --time-scale 1 --media-dir D`, paired through its
// credentials file) uploading to the fake cloud on loopback, as ratios to
// curl doing the same PUTs in the same run.
//
//   npm run bench:upload     (builds first)
//   node scripts/bench-upload.mjs [--size 512M] [--sparse-size 2G] [--part-size 5M]
//        [--rounds 3] [--budget 90] [--settle 10] [--timeout 300] [--camera-mbps 20]
//        [--skip-throughput] [--skip-memory] [--skip-loopback-memory] [--skip-bare]
//        [--node-options '--max-semi-space-size=1' (default: the systemd unit's NODE_OPTIONS)]
//        [--bundle FILE (default dist/c2c-agent.mjs)] [--json]
//
// Bounded: at most --rounds throughput rounds, and no round is started that
// would likely end past --budget s of rounds (one always runs); each upload
// fails after --timeout s. Sizes are the knobs for a quicker run.
//
// What is measured, and why this is an honest comparison:
// - The fake runs in this process (the standalone fake has no part size
//   flag): test/fake-cloud/index.ts bundled into the temp dir and imported.
//   It hashes every byte it receives, for the agent and for curl alike; its
//   CPU is in neither figure. Both read the same bytes from the page cache.
// - Throughput: from the asset's first storage PUT arriving at the fake (its
//   journal) to the fake holding every byte (cloud.asset(id).complete), polled
//   every 5 ms. The agent gets an S-byte file dropped into its media dir; the
//   baseline creates an asset through the API with a device token and PUTs
//   the same parts (the same even split the agent makes) with ONE curl
//   process: --parallel-max 2 over kept-alive connections (the agent's two
//   chunks in flight), `-T part-file` per presigned URL (the parts are cut
//   from the same file beforehand, untimed, so curl streams from a file with
//   a Content-Length as the agent does), the same Content-Type and
//   x-amz-acl headers, and no `Expect: 100-continue` round trip (got sends none).
// - CPU per GB: the agent's utime+stime (/proc/<pid>/stat, all threads) from
//   its first PUT until it has deleted the uploaded file (so its progress
//   records, index entry and unlink count), divided by GB (10^9 bytes)
//   uploaded; curl's is its whole rusage (/usr/bin/time, start-up included).
// - Rounds alternate curl and agent; medians are reported. One agent serves
//   every round: each round copies the file and fsyncs the copy (untimed: no
//   write-back runs during the timed upload; on a file system that copies
//   the bytes, its pages stay in the page cache, as a clip the camera has
//   just written) and renames the copy into the media dir under a new name.
//   A copy, not a hard link: the agent uploads no file with a second name
//   (docs/uploads.md).
// - Memory, against the agent's own idle RSS: a fresh agent, idle for --settle
//   s after GET /v2/devices/me, then a sparse file (no disk taken) is moved in;
//   VmRSS of the agent process alone (the fake is in this one) sampled every
//   100 ms. Twice: at loopback speed, and through a proxy that lets the
//   agent send --camera-mbps MB/s (a camera's uplink; answers unthrottled).
//   The agents run with the node flags of the systemd unit (as a camera runs
//   them) unless --node-options says otherwise, and in the memory runs over
//   HTTPS with the rest of the unit's Environment= lines; the memory runs are
//   repeated with bare node (no NODE_OPTIONS, none of the unit's environment;
//   `run` still sets the daemon's V8 flags itself) for
//   comparison, unless --skip-bare.
import { spawn, execFileSync } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { HZ, MiB, JournalWatch, cutPart, freeBytes, loadFakeCloud, median, parseSize, startAgent, unitEnvironment, unitNodeOptions, writeDataFile } from './bench-upload-helpers.mjs';
import { agentUpload, memoryRun, startThrottle } from './bench-upload-memory.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    size: { type: 'string', default: '512M' },
    'sparse-size': { type: 'string', default: '2G' },
    'part-size': { type: 'string' },
    rounds: { type: 'string', default: '3' },
    budget: { type: 'string', default: '90' },
    settle: { type: 'string', default: '10' },
    timeout: { type: 'string', default: '300' },
    'camera-mbps': { type: 'string', default: '20' },
    'skip-throughput': { type: 'boolean', default: false },
    'skip-memory': { type: 'boolean', default: false },
    'skip-loopback-memory': { type: 'boolean', default: false },
    'node-options': { type: 'string' },
    'skip-bare': { type: 'boolean', default: false },
    bundle: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const SIZE = parseSize('size', values.size);
const SPARSE = parseSize('sparse-size', values['sparse-size']);
const PART = values['part-size'] === undefined ? undefined : parseSize('part-size', values['part-size']);
const ROUNDS = Math.max(1, Math.floor(Number(values.rounds)) || 1);
const SETTLE_S = Math.max(0, Number(values.settle) || 0);
const BUDGET_MS = Math.max(0, Number(values.budget) || 0) * 1000;
const TIMEOUT_MS = Math.max(1, Number(values.timeout) || 300) * 1000;
const CAMERA_MBPS = Number(values['camera-mbps']);
if (!(CAMERA_MBPS > 0)) throw new Error(`--camera-mbps: not a rate in MB/s: ${JSON.stringify(values['camera-mbps'])}`);
const TYPE = 'video/mp4';
const NODE_OPTIONS = values['node-options'] ?? unitNodeOptions(root);

const bundle = values.bundle === undefined ? path.join(root, 'dist/c2c-agent.mjs') : path.resolve(values.bundle);
if (!existsSync(bundle)) execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs'), '--quiet'], { stdio: 'inherit' });
for (const [tool, ...args] of [['curl', '--version'], ['/usr/bin/time', '-f', '%U', 'true']]) {
  try {
    execFileSync(tool, args, { stdio: 'ignore' });
  } catch {
    console.error(`bench-upload: the baseline needs ${tool}`);
    process.exit(1);
  }
}

const tmp = mkdtempSync(path.join(tmpdir(), 'c2c-bench-upload-'));
const children = new Set(); // agents
const groups = new Set(); // pids of /usr/bin/time + curl process groups
let fatal;
function cleanup() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const pgid of groups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(tmp, { recursive: true, force: true });
}
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

let partsCut = 0;
/** The baseline: the same parts of `src`, PUT by one curl with two transfers at a time. */
async function curlUpload(watch, cloud, device, src, size, r) {
  const res = await fetch(`${cloud.url}/v2/devices/assets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${device.accessToken}`, 'content-type': 'application/json', 'x-client-version': '1.0.0' },
    body: JSON.stringify({ name: `curl-${r}.mp4`, filetype: TYPE, filesize: size, offset: 0, extension: '.mp4' }),
  });
  if (!res.ok) throw new Error(`creating the baseline asset: HTTP ${res.status} ${await res.text()}`);
  const asset = await res.json();
  const urls = asset.upload_urls;
  const chunk = Math.ceil(size / urls.length);
  const partsDir = path.join(tmp, 'parts');
  if (partsCut !== urls.length) {
    mkdirSync(partsDir, { recursive: true });
    const buf = Buffer.allocUnsafe(4 * MiB);
    for (let i = 0; i < urls.length; i++) {
      const start = Math.min(size, i * chunk);
      cutPart(src, path.join(partsDir, `p${i}`), start, Math.min(size, start + chunk) - start, buf);
    }
    partsCut = urls.length;
  }
  const cfg = path.join(tmp, 'curl.cfg');
  writeFileSync(cfg, urls.map((u, i) => `url = "${u}"\nupload-file = "${path.join(partsDir, `p${i}`)}"\noutput = "/dev/null"\n`).join(''));
  const timeFile = path.join(tmp, 'curl.time');
  const child = spawn(
    '/usr/bin/time',
    ['-f', '%U %S', '-o', timeFile, 'curl', '-s', '--no-progress-meter', '--parallel', '--parallel-immediate', '--parallel-max', '2',
      '-H', 'Expect:', '-H', `content-type: ${TYPE}`, '-H', 'x-amz-acl: private', '-w', '%{http_code}\\n', '-K', cfg],
    { detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  groups.add(child.pid);
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise((resolve) => child.once('exit', (code) => (groups.delete(child.pid), resolve(code))));
  let curlFailed;
  exited.then((code) => {
    if (code !== 0) curlFailed = `curl exited with ${code}: ${out.trim().slice(-500)}`;
  });
  const up = await watch.upload({ assetId: asset.id, timeoutMs: TIMEOUT_MS, failed: () => curlFailed });
  await exited;
  const codes = out.trim().split('\n');
  if (codes.length !== urls.length || codes.some((c) => c !== '200')) throw new Error(`curl: expected ${urls.length} x 200, got ${out.trim().slice(0, 300)}`);
  const [u, s] = readFileSync(timeFile, 'utf8').trim().split('\n').pop().split(' ').map(Number);
  return { seconds: (up.completeMs - up.firstPutMs) / 1000, cpuS: u + s, parts: urls.length, partBytes: chunk };
}

async function throughput(cloud, watch) {
  // The file, curl's copy of its parts, and the one copy a round drops in (the agent deletes it once uploaded).
  const need = 3 * SIZE + 256 * MiB;
  const free = freeBytes(tmp);
  if (free < need) return { skipped: `throughput and CPU: skipped, ${(free / MiB).toFixed(0)} MiB free in ${tmpdir()}, ${(need / MiB).toFixed(0)} MiB needed (the file, curl's copy of its parts and a round's copy)` };
  const staging = path.join(tmp, 'staging');
  mkdirSync(staging);
  const src = path.join(staging, 'source.mp4');
  writeDataFile(src, SIZE, randomBytes(MiB));
  const device = cloud.devices[0];
  const agent = startAgent({ bundle, cloud, device, dir: path.join(tmp, 'agent-throughput'), children, onEarlyExit: (m) => (fatal = m), nodeOptions: NODE_OPTIONS });
  const rounds = [];
  try {
    await watch.ready(device.id, 30_000);
    const t0 = Date.now();
    for (let r = 0; r < ROUNDS; r++) {
      // Another round only when it should end inside the budget (rounds take about as long as the last one).
      if (r > 0 && Date.now() - t0 + (Date.now() - t0) / r > BUDGET_MS) break;
      const curl = await curlUpload(watch, cloud, device, src, SIZE, r);
      const copy = path.join(staging, `clip-${r}.mp4`);
      copyFileSync(src, copy);
      const fd = openSync(copy, 'r+');
      fsyncSync(fd);
      closeSync(fd);
      const agentRun = await agentUpload({ watch, agent, device, name: `clip-${r}.mp4`, drop: (file) => renameSync(copy, file), timeoutMs: TIMEOUT_MS, failed: () => fatal });
      rounds.push({ curl, agent: agentRun });
      if (!values.json) process.stderr.write(`bench-upload: round ${r + 1}: agent ${(SIZE / 1e6 / agentRun.seconds).toFixed(1)} MB/s, curl ${(SIZE / 1e6 / curl.seconds).toFixed(1)} MB/s\n`);
    }
  } finally {
    await agent.stop();
  }
  const gb = SIZE / 1e9;
  const mbps = (x) => SIZE / 1e6 / x.seconds;
  return {
    parts: rounds[0].curl.parts,
    partBytes: rounds[0].curl.partBytes,
    rounds,
    agentMBps: median(rounds.map((x) => mbps(x.agent))),
    curlMBps: median(rounds.map((x) => mbps(x.curl))),
    agentCpuPerGB: median(rounds.map((x) => x.agent.cpuS / gb)),
    curlCpuPerGB: median(rounds.map((x) => x.curl.cpuS / gb)),
    agentPeakRssMiB: Math.max(...rounds.map((x) => x.agent.peakRss.total)) / 1024,
  };
}

/**
 * The memory runs, as a camera has it: over HTTPS (a fake of their own serving its throwaway CA's
 * certificate, which the agent trusts through NODE_EXTRA_CA_CERTS), and with every Environment= line
 * of the unit (its malloc tuning too: without MALLOC_MMAP_THRESHOLD_ the upload's buffers of 16 to
 * 64 KiB stay in malloc's heap, 4 to 5 MiB of the peak, docs/benchmarks.md). The bare runs get
 * neither the unit's NODE_OPTIONS nor the rest of its environment (`run` still sets the daemon's V8
 * flags itself, v8-flags.ts).
 */
async function memory(startFakeCloud) {
  if (values['skip-memory']) return { skipped: 'memory: skipped (--skip-memory)' };
  const free = freeBytes(tmp);
  if (free < 256 * MiB) return { skipped: `memory: skipped, only ${(free / MiB).toFixed(0)} MiB free in ${tmpdir()} (the sparse file takes none, the agents' queues and logs need a little)` };
  const cloud = await startFakeCloud({ devices: 3, tls: true, ...(PART !== undefined && { uploadPartBytes: PART }) });
  const watch = new JournalWatch(cloud);
  const trust = { NODE_EXTRA_CA_CERTS: cloud.caFile };
  const { NODE_OPTIONS: _flags, ...unitRest } = unitEnvironment(root);
  const common = { bundle, cloud, watch, children, onEarlyExit: (m) => (fatal = m), failed: () => fatal, settleS: SETTLE_S, sparseBytes: SPARSE };
  const throttle = await startThrottle(cloud.url, CAMERA_MBPS * 1e6);
  // Its own timeout: the file at the camera's rate, and then some.
  const cameraTimeoutMs = TIMEOUT_MS + (SPARSE / (CAMERA_MBPS * 1e6)) * 1500;
  const modes = [['', NODE_OPTIONS, { ...unitRest, ...trust }], ...(values['skip-bare'] || NODE_OPTIONS === '' ? [] : [['bare ', '', trust]])];
  const out = {};
  try {
    for (const [prefix, nodeOptions, env] of modes) {
      const run = (name, extra) => memoryRun({ ...common, nodeOptions, env, dir: path.join(tmp, `agent-${prefix.trim() || 'unit'}-${name}`), ...extra });
      if (!values['skip-loopback-memory']) out[`${prefix}loopback`] = { nodeOptions, ...(await run('loopback', { device: cloud.devices[1], timeoutMs: TIMEOUT_MS })) };
      out[`${prefix}camera`] = { nodeOptions, ...(await run('camera', { device: cloud.devices[2], apiUrl: throttle.url, timeoutMs: cameraTimeoutMs })) };
    }
    return out;
  } finally {
    await throttle.close();
    await cloud.close();
  }
}

async function main() {
  const { startFakeCloud } = await loadFakeCloud(root, tmp);
  const cloud = await startFakeCloud({ devices: 3, ...(PART !== undefined && { uploadPartBytes: PART }) });
  const watch = new JournalWatch(cloud);
  let tp, mem;
  try {
    tp = values['skip-throughput'] ? { skipped: 'throughput: skipped' } : await throughput(cloud, watch);
    mem = await memory(startFakeCloud);
  } finally {
    await cloud.close();
  }
  if (values.json) {
    console.log(JSON.stringify({ sizeBytes: SIZE, maxRounds: ROUNDS, clockTickMs: 1000 / HZ, cameraMBps: CAMERA_MBPS, nodeOptions: NODE_OPTIONS, throughput: tp, memory: mem }));
    return;
  }
  const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  const ratio = (a, b) => (b > 0 ? fmt(a / b, 2) : 'n/a');
  const w = [56, 9, 15, 6];
  const line = (r) => r.map((c, i) => String(c).padEnd(w[i])).join(' ');
  const sz = (n) => (n % (1024 * MiB) === 0 ? `${n / 1024 / MiB} GiB` : `${fmt(n / MiB, n % MiB ? 1 : 0)} MiB`);
  console.log(line(['measure', 'agent', 'baseline', 'ratio']));
  console.log('-'.repeat(89));
  if (tp.skipped) console.log(tp.skipped);
  else {
    console.log(line([`throughput, ${sz(SIZE)} file, MB/s (median of ${tp.rounds.length})`, fmt(tp.agentMBps), `${fmt(tp.curlMBps)} curl`, ratio(tp.agentMBps, tp.curlMBps)]));
    console.log(line([`CPU s per GB uploaded (median of ${tp.rounds.length})`, fmt(tp.agentCpuPerGB, 2), `${fmt(tp.curlCpuPerGB, 2)} curl`, ratio(tp.agentCpuPerGB, tp.curlCpuPerGB)]));
  }
  const how = (name) => `${name.startsWith('bare ') ? 'bare node, ' : ''}${name.endsWith('camera') ? `via a ${fmt(CAMERA_MBPS, 0)} MB/s link` : 'on loopback'}`;
  const runs = mem.skipped ? [] : Object.entries(mem).map(([name, m]) => [name, m, how(name)]);
  if (mem.skipped) console.log(mem.skipped);
  for (const [, m, how] of runs) {
    console.log(line([`peak RSS, ${sz(SPARSE)} sparse ${how} (${fmt(m.MBps, 1)} MB/s), MiB`, fmt(m.peakRssMiB.total), `${fmt(m.idleRssMiB.total)} idle`, ratio(m.peakRssMiB.total, m.idleRssMiB.total)]));
    console.log(line([`  peak - idle, MiB`, fmt(m.growthMiB), '', '']));
  }
  console.log('');
  const notes = [];
  notes.push(NODE_OPTIONS ? `agents run with node ${NODE_OPTIONS}${values['node-options'] === undefined ? ' (the systemd unit\'s NODE_OPTIONS)' : ''}, the bare node runs without` : 'agents run with bare node');
  if (!mem.skipped) notes.push('the memory runs are over HTTPS, the agents with the rest of the unit\'s Environment= lines too (malloc tuning), the bare node without');
  if (!tp.skipped) {
    const each = (k) => tp.rounds.map((x) => `${fmt(SIZE / 1e6 / x[k].seconds, 0)} MB/s ${fmt(x[k].cpuS, 2)} s CPU`).join('; ');
    notes.push(
      `${tp.parts} parts of ${sz(tp.partBytes)}, two in flight for both; MB and GB are 10^6 and 10^9 bytes; CPU in ${1000 / HZ} ms ticks`,
      `agent rounds: ${each('agent')}; from the file's drop to complete ${tp.rounds.map((x) => fmt(x.agent.dropToCompleteS, 2)).join(', ')} s; peak RSS per round ${tp.rounds.map((x) => fmt(x.agent.peakRss.total / 1024)).join(', ')} MiB`,
      `curl rounds:  ${each('curl')} (one process, --parallel-max 2, kept-alive connections, -T part files cut beforehand)`,
    );
  }
  if (runs.length > 0) {
    notes.push(`sparse file: ${sz(SPARSE)} with ${runs[0][1].allocatedBytes} bytes on disk, a fresh agent each run; RSS every 100 ms; idle = median of 10 samples after ${SETTLE_S} s settled`);
  }
  for (const [name, m] of runs) {
    notes.push(
      `${name}: ${fmt(m.MBps, 1)} MB/s, ${fmt(m.cpuPerGB, 2)} CPU s/GB; anon/file MiB: idle ${fmt(m.idleRssMiB.anon)}/${fmt(m.idleRssMiB.file)}, ` +
        `peak ${fmt(m.peakRssMiB.anon)}/${fmt(m.peakRssMiB.file)}, when the agent had deleted it ${fmt(m.endRssMiB.anon)}/${fmt(m.endRssMiB.file)}`,
    );
  }
  for (const n of notes) console.log(n);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`bench-upload: ${err.message}`);
    process.exit(1);
  },
);
