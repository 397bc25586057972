// test:node-versions: the bundle's smoke test on each Node.js line the agent
// supports. Node 20 is the one running this script (or fetched like the
// others when it is not 20); 22 and 24 come as the npm packages
// node-linux-<arch>, installed once into a cache outside the repository.
// Each runs --version, --help, profiles --json, check --json against the fake
// cloud, and a short `run` until the fake cloud has its heartbeat and a
// SIGTERM ends it with exit 0; then the daemon's own file as the unit runs it
// (its ExecStart's node options, a cache directory): twice, the first start
// writing V8's code cache, the second starting from it.
//
//   npm run test:node-versions [-- --only 22]
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { unitExecStart } from './lib/unit-exec-start.mjs';

// Pinned, so a run is repeatable; raise them here.
const PINNED = { 20: '20.20.2', 22: '22.23.3', 24: '24.21.0' };
const RUN_TIME_SCALE = 60;
const HEARTBEAT_WAIT_MS = 20_000;

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const bundle = path.join(root, 'dist/c2c-agent.mjs');
const cacheDir = path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'c2c-agent', 'node');
const agentVersion = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version;
const log = (line) => process.stdout.write(`${line}\n`);

let opts;
try {
  ({ values: opts } = parseArgs({ options: { only: { type: 'string' } } }));
} catch (err) {
  process.stderr.write(`node-versions: ${err.message}; usage: node scripts/node-versions.mjs [--only 20|22|24]\n`);
  process.exit(64);
}
const majors = opts.only ? [Number(opts.only)] : [20, 22, 24];
if (majors.some((m) => PINNED[m] === undefined)) {
  process.stderr.write(`node-versions: --only takes one of ${Object.keys(PINNED).join(', ')}, got ${JSON.stringify(opts.only)}\n`);
  process.exit(64);
}
if (!existsSync(bundle)) {
  process.stderr.write(`node-versions: ${bundle} is missing; run 'npm run build' first\n`);
  process.exit(66);
}

/** A node binary of this major version: this one, or the npm package's (installed once). */
function nodeBinary(major) {
  if (process.versions.node.split('.')[0] === String(major)) return { bin: process.execPath, how: 'this node' };
  const pkg = `node-${process.platform}-${process.arch}`;
  const version = PINNED[major];
  const prefix = path.join(cacheDir, `${process.platform}-${process.arch}-${version}`);
  const bin = path.join(prefix, 'node_modules', pkg, 'bin', 'node');
  if (existsSync(bin)) return { bin, how: `${pkg}@${version}, cached` };
  const t0 = Date.now();
  const npm = spawnSync('npm', ['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', '--loglevel=error', `${pkg}@${version}`], { encoding: 'utf8' });
  if (npm.status !== 0 || !existsSync(bin)) throw new Error(`npm install ${pkg}@${version} failed: ${(npm.stderr || npm.stdout).trim().split('\n').at(-1)}`);
  return { bin, how: `${pkg}@${version}, installed in ${((Date.now() - t0) / 1000).toFixed(1)} s` };
}

async function startFakeCloud(devices) {
  const child = spawn(process.execPath, [path.join(root, 'dist/fake-cloud.mjs'), '--port', '0', '--devices', String(devices), '--time-scale', String(RUN_TIME_SCALE)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let buf = '';
  child.stdout.setEncoding('utf8');
  for await (const chunk of child.stdout) {
    buf += chunk;
    if (buf.includes('\n')) break;
  }
  return { child, ...JSON.parse(buf.slice(0, buf.indexOf('\n'))) };
}

async function referee(adminUrl, deviceId) {
  const r = await fetch(`${adminUrl}/referee/${deviceId}`);
  return r.json();
}

/** Runs the smoke test on one binary; returns [step, ok, detail] rows. */
async function smoke(bin, cloud, device, dir) {
  // An empty config file of its own, so no /etc/c2c-agent/config.json on this machine counts.
  writeFileSync(path.join(dir, 'config.json'), '{}\n');
  const env = { ...process.env, C2C_STATE_DIR: path.join(dir, 'state'), C2C_RUNTIME_DIR: path.join(dir, 'run'), C2C_CONFIG: path.join(dir, 'config.json'), C2C_API_URL: cloud.url, C2C_TOKEN: device.accessToken, ...(cloud.caFile && { C2C_CA_FILE: cloud.caFile }) };
  delete env.NODE_OPTIONS;
  const cli = (...args) => spawnSync(bin, [bundle, ...args], { encoding: 'utf8', env, timeout: 30_000 });
  const rows = [];
  const v = cli('--version');
  rows.push(['--version', v.status === 0 && v.stdout.includes(agentVersion), v.stdout.trim() || v.stderr.trim()]);
  const h = cli('--help');
  rows.push(['--help', h.status === 0 && h.stdout.startsWith('usage: c2c-agent'), `exit ${h.status}, ${h.stdout.split('\n').length} lines`]);
  const p = cli('profiles', '--json');
  const profiles = safeJson(p.stdout);
  rows.push(['profiles --json', p.status === 0 && profiles?.ok === true, `exit ${p.status}, ${profiles?.profiles?.length ?? '?'} profiles`]);
  const c = cli('check', '--json');
  const checked = safeJson(c.stdout);
  rows.push(['check --json', c.status === 0 && checked?.device?.id === device.id, `exit ${c.status}, device ${checked?.device?.name ?? '?'}`]);

  const t0 = Date.now();
  const agent = spawn(bin, [bundle, 'run', '--time-scale', String(RUN_TIME_SCALE)], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  agent.stderr.on('data', (d) => (stderr += d));
  let beats = 0;
  while (Date.now() - t0 < HEARTBEAT_WAIT_MS && agent.exitCode === null) {
    // A failed poll (a kept-alive socket the fake just closed) is only a poll.
    beats = (await referee(cloud.adminUrl, device.id).catch(() => ({ successfulHeartbeats: 0 }))).successfulHeartbeats;
    if (beats > 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const beatMs = Date.now() - t0;
  agent.kill('SIGTERM');
  const [code] = agent.exitCode === null ? await once(agent, 'exit') : [agent.exitCode];
  rows.push(['run', beats > 0 && code === 0, beats > 0 ? `heartbeat ${(beatMs / 1000).toFixed(1)} s after start, SIGTERM -> exit ${code}` : `no heartbeat in ${HEARTBEAT_WAIT_MS / 1000} s (exit ${code}) ${stderr.trim().split('\n').at(-1) ?? ''}`]);

  // The daemon as the unit runs it, through its loader and V8's code cache (agent/daemon/boot.ts).
  const { nodeArgs, file } = unitExecStart(root);
  const cache = path.join(dir, 'cache');
  mkdirSync(cache);
  for (const [step, wanted] of [['daemon, first start', 'wrote the code cache'], ['daemon, from the code cache', 'started from the code cache']]) {
    const d = spawn(bin, [...nodeArgs, file, 'run', '--time-scale', String(RUN_TIME_SCALE)], { env: { ...env, CACHE_DIRECTORY: cache, C2C_LOG_LEVEL: 'debug' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    d.stdout.on('data', (b) => (out += b));
    d.stderr.on('data', (b) => (out += b));
    const t1 = Date.now();
    // And "daemon started": logged once its signal handlers are on. "started from the code cache" comes
    // before them, and a SIGTERM in between ended a daemon by the signal's default action (a CI run).
    const shown = () => out.includes(wanted) && out.includes('"daemon started"');
    while (Date.now() - t1 < HEARTBEAT_WAIT_MS && d.exitCode === null && !shown()) await new Promise((r) => setTimeout(r, 100));
    d.kill('SIGTERM');
    const [dc] = d.exitCode === null ? await once(d, 'exit') : [d.exitCode];
    const files = readdirSync(cache).filter((f) => f.endsWith('.v8cache'));
    rows.push([step, out.includes(wanted) && dc === 0 && files.length === 1, `${out.includes(wanted) ? `"${wanted}"` : `no "${wanted}" in ${HEARTBEAT_WAIT_MS / 1000} s`}, ${files.length} cache file(s), SIGTERM -> exit ${dc}`]);
  }
  return rows;
}

function safeJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const started = Date.now();
// Every binary first: an npm install blocks this process for seconds.
const binaries = majors.map((major) => {
  try {
    return nodeBinary(major);
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
});
const cloud = await startFakeCloud(majors.length);
const summary = [];
try {
  for (const [i, major] of majors.entries()) {
    const dir = mkdtempSync(path.join(tmpdir(), `c2c-node${major}-`));
    const t0 = Date.now();
    try {
      const { bin, how, error } = binaries[i];
      if (error !== undefined) throw new Error(error);
      const actual = execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim();
      const rows = await smoke(bin, cloud, cloud.devices[i], dir);
      for (const [step, ok, detail] of rows) log(`${ok ? 'PASS' : 'FAIL'}  node ${actual}  ${step}: ${detail}`);
      const ok = rows.every((r) => r[1]);
      summary.push([major, ok]);
      log(`${ok ? 'PASS' : 'FAIL'}  node ${actual} (${how}): ${rows.filter((r) => r[1]).length}/${rows.length} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    } catch (err) {
      summary.push([major, false]);
      log(`FAIL  node ${major}: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
} finally {
  cloud.child.kill('SIGTERM');
}
const failed = summary.filter(([, ok]) => !ok).map(([m]) => m);
log(`${failed.length === 0 ? 'node ' + majors.join(', ') + ': all passed' : `failed on node ${failed.join(', ')}`} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
process.exit(failed.length === 0 ? 0 : 1);
