// Start to first heartbeat: `node dist/c2c-agentd.cjs run`, as the unit's
// ExecStart runs it (scale 1, a fresh
// state and runtime dir) against a bare node script sending the same one
// request (POST /v2/devices/heartbeat with its token and x-client-version,
// through node:http) to the same fake cloud.
//
// Both are timed the same way, on one clock: the fake runs in this process,
// the spawn time is read from its clock (cloud.now()) just before spawn(),
// and the arrival is the time the fake stamped on the request in its journal.
// So polling delays count for neither. Runs alternate agent and baseline, each
// on its own seeded device (no heartbeat is ever "too soon" for the next run);
// medians are reported.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { cleanEnv, daemonBundle, root, sleep, tmp } from './procs.mjs';
import { fmt, median, row } from './figures.mjs';

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

/** { rows, notes } for start-up, `runs` alternating pairs. */
export async function startup({ runs = 7 } = {}) {
  const { startFakeCloud } = await loadFakeCloud();
  const cloud = await startFakeCloud({ devices: 2 * runs + 1, timeScale: 1, tls: true });
  const trust = { NODE_EXTRA_CA_CERTS: cloud.caFile };
  const agentRuns = [];
  const bareRuns = [];
  try {
    // One untimed agent start: the first spawn of the bundle pays for reading it from disk.
    const warm = [];
    for (let i = 0; i <= runs; i++) {
      const agentDevice = cloud.devices[2 * i];
      const dir = path.join(tmp, `start-${i}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'config.json'), '{}\n');
      const a = await timeOne(cloud, agentDevice,
        [daemonBundle, 'run', '--api-url', cloud.url, '--time-scale', '1', '--state-dir', path.join(dir, 'state'), '--runtime-dir', path.join(dir, 'run')],
        { C2C_TOKEN: agentDevice.accessToken, C2C_LOG_LEVEL: 'info', C2C_CONFIG: path.join(dir, 'config.json'), ...trust });
      if (i === 0) {
        warm.push(a);
        continue;
      }
      agentRuns.push(a);
      const bareDevice = cloud.devices[2 * i - 1];
      bareRuns.push(await timeOne(cloud, bareDevice, ['-e', BARE_SCRIPT, `${cloud.url}${HEARTBEAT}`], { BENCH_TOKEN: bareDevice.accessToken, ...trust }));
    }
  } finally {
    await cloud.close();
  }
  const a = median(agentRuns.map((r) => r.ms));
  const b = median(bareRuns.map((r) => r.ms));
  const ms = (xs) => xs.map((r) => fmt(r.ms, 0)).join(', ');
  const firstPaths = [...new Set(agentRuns.map((r) => r.firstPath))].join(', ');
  return {
    rows: [row('start to first heartbeat', { agent: `${fmt(a, 0)} ms`, baseline: `${fmt(b, 0)} ms bare node, one request`, ratio: a / b, goal: `<= ${START_RATIO_GOAL}x`, pass: a / b <= START_RATIO_GOAL })],
    notes: [
      `start: over HTTPS (the fake's CA through NODE_EXTRA_CA_CERTS), median of ${runs} alternating runs, spawn to the fake's journal stamp of the heartbeat; agent ${ms(agentRuns)} ms; bare node (node:https POST) ${ms(bareRuns)} ms; ` +
        `the agent's first request (${firstPaths}) arrived after a median ${fmt(median(agentRuns.map((r) => r.firstRequestMs)), 0)} ms; one untimed warm-up start first.`,
    ],
  };
}
