// Start to first heartbeat: `node <the unit's V8 flags> dist/c2c-agentd.cjs run`,
// as the unit's ExecStart runs it (scale 1, a fresh state dir and a fresh
// runtime dir on tmpfs as RuntimeDirectory= is (procs.mjs), the unit's
// Environment= lines, and its cache directory holding the code cache an
// earlier start wrote, agent/daemon/boot.ts) against a bare node script
// sending the same one request (POST /v2/devices/heartbeat with its token and
// x-client-version, through node:https) to the same fake cloud, with the
// same environment. A third start per round is the agent's first after an
// install or upgrade: no code cache yet.
//
// All are timed the same way, on one clock: the fake runs in this process,
// the spawn time is read from its clock (cloud.now()) just before spawn(),
// and the arrival is the time the fake stamped on the request in its journal.
// So polling delays count for none. Runs alternate, each on its own seeded
// device (no heartbeat is ever "too soon" for the next run); medians are
// reported. Fifteen rounds: this 2-core machine runs in a fast and a slow
// phase, and the median of seven moved from 1.37x to 1.81x between runs of
// the same build (docs/benchmarks.md, "Start-up"). The note also gives the
// median of each round's own ratio (the agent's start over the same round's
// bare POST), which a change of phase between rounds moves less.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { cleanEnv, codeCacheDir, daemonBundle, daemonNodeArgs, root, runtimeDirOf, runtimeOnTmpfs, sleep, tmp } from './procs.mjs';
import { fmt, median, row } from './figures.mjs';
import { unitEnvironment } from '../bench-upload-helpers.mjs';

export const START_RATIO_GOAL = 1.5;
const HEARTBEAT = '/v2/devices/heartbeat';

/** test/fake-cloud bundled into the temp dir and imported (no ts runtime is installed). */
async function loadFakeCloud() {
  const { build } = await import('esbuild');
  const outfile = path.join(tmp, 'fake-cloud-lib.mjs');
  await build({
    entryPoints: [path.join(root, 'test/fake-cloud/index.ts')], outfile, bundle: true, platform: 'node', format: 'esm', target: 'node20', logLevel: 'warning',
    banner: { js: "import { createRequire as __c2cCreateRequire } from 'node:module'; const require = __c2cCreateRequire(import.meta.url);" },
  });
  return import(pathToFileURL(outfile).href);
}

// The baseline: one heartbeat as plainly as Node can send it, over HTTPS as well (the CA through NODE_EXTRA_CA_CERTS for both).
const BARE_SCRIPT = `
const http = require(process.argv[1].startsWith('https:') ? 'node:https' : 'node:http');
const req = http.request(process.argv[1], { method: 'POST', headers: {
  authorization: 'Bearer ' + process.env.BENCH_TOKEN, 'x-client-version': '1.6.0', 'content-type': 'application/json' } },
  (res) => { res.resume(); res.on('end', () => process.exit(res.statusCode < 300 ? 0 : 1)); });
req.on('error', () => process.exit(2));
req.end('{}');
`;

async function timeOne(cloud, device, args, env, timeoutMs = 20_000) {
  const spawnedAt = cloud.now();
  const child = spawn(process.execPath, args, { env: cleanEnv(env), stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err = (err + d).slice(-1000)));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      const hit = cloud.journal.find((e) => e.deviceId === device.id && e.method === 'POST' && e.path === HEARTBEAT);
      if (hit) {
        const first = cloud.journal.find((e) => e.deviceId === device.id);
        return { ms: hit.t - spawnedAt, firstRequestMs: first.t - spawnedAt, firstPath: first.path };
      }
      if (child.exitCode !== null) throw new Error(`${path.basename(args[0] ?? 'node')} exited (${child.exitCode}) before its heartbeat reached the fake: ${err.trim()}`);
      if (Date.now() > deadline) throw new Error(`no heartbeat within ${timeoutMs / 1000} s`);
      await sleep(10);
    }
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await exited;
  }
}

/** { rows, notes } for start-up, `runs` alternating rounds. */
export async function startup({ runs = 7 } = {}) {
  const { startFakeCloud } = await loadFakeCloud();
  const cloud = await startFakeCloud({ devices: 3 * runs + 4, timeScale: 1, tls: true });
  // As the unit runs it: its Environment= lines (node flags, malloc tuning) for the agent and the bare script alike.
  const unit = { ...unitEnvironment(root), NODE_EXTRA_CA_CERTS: cloud.caFile };
  const cached = [];
  const cold = [];
  const bare = [];
  let next = 0;
  const device = () => cloud.devices[next++];
  const agentStart = (i, kind, extra = {}) => {
    const d = device();
    const dir = path.join(tmp, `start-${i}-${kind}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'config.json'), '{}\n');
    return timeOne(cloud, d,
      [...daemonNodeArgs, daemonBundle, 'run', '--api-url', cloud.url, '--time-scale', '1', '--state-dir', path.join(dir, 'state'), '--runtime-dir', runtimeDirOf(`start-${i}-${kind}`)],
      { ...unit, ...extra, C2C_TOKEN: d.accessToken, C2C_LOG_LEVEL: 'info', C2C_CONFIG: path.join(dir, 'config.json') });
  };
  try {
    const cacheDir = await codeCacheDir(cloud, 60, next++, unit);
    // One untimed start of each first: the first spawn of a file pays for reading it from disk.
    for (let i = 0; i <= runs; i++) {
      const c = await agentStart(i, 'cached', { CACHE_DIRECTORY: cacheDir });
      const f = await agentStart(i, 'cold');
      const d = device();
      const b = await timeOne(cloud, d, ['-e', BARE_SCRIPT, `${cloud.url}${HEARTBEAT}`], { ...unit, BENCH_TOKEN: d.accessToken });
      if (i === 0) continue;
      cached.push(c);
      cold.push(f);
      bare.push(b);
    }
  } finally {
    await cloud.close();
  }
  const a = median(cached.map((r) => r.ms));
  const c = median(cold.map((r) => r.ms));
  const b = median(bare.map((r) => r.ms));
  const ms = (xs) => xs.map((r) => fmt(r.ms, 0)).join(', ');
  const firstPaths = [...new Set(cached.map((r) => r.firstPath))].join(', ');
  return {
    rows: [
      row('start to first heartbeat (the unit\'s code cache)', { agent: `${fmt(a, 0)} ms`, baseline: `${fmt(b, 0)} ms bare node, one request`, ratio: a / b, goal: `<= ${START_RATIO_GOAL}x`, pass: a / b <= START_RATIO_GOAL }),
      row('start to first heartbeat, first start after an install (no code cache yet)', { agent: `${fmt(c, 0)} ms`, baseline: `${fmt(b, 0)} ms bare node, one request`, ratio: c / b, goal: 'none (for comparison)', pass: undefined }),
    ],
    notes: [
      `start: over HTTPS (the fake's CA through NODE_EXTRA_CA_CERTS), the unit's Environment= lines for all, the agent's runtime dir ${runtimeOnTmpfs ? 'on tmpfs, as RuntimeDirectory= is' : 'on the disk (no tmpfs at /dev/shm; the unit\'s is tmpfs)'}, median of ${runs} alternating rounds, spawn to the fake's journal stamp of the heartbeat; ` +
        `agent with the code cache an earlier start wrote in its cache directory (CacheDirectory=, agent/daemon/boot.ts) ${ms(cached)} ms; the same without it ${ms(cold)} ms; bare node (node:https POST) ${ms(bare)} ms; ` +
        `the agent's first request (${firstPaths}) arrived after a median ${fmt(median(cached.map((r) => r.firstRequestMs)), 0)} ms; ` +
        `the median of each round's own ratio (agent / bare) ${fmt(median(cached.map((r, i) => r.ms / bare[i].ms)), 2)}x; one untimed round first.`,
    ],
  };
}
