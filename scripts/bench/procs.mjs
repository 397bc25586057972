// Processes of the benchmark: the built fake cloud and agents as children,
// a stand-in systemd notify socket, and what /proc says about a process.
// Every child goes on one list and is killed when the benchmark exits.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { unitExecStart } from '../lib/unit-exec-start.mjs';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const bundle = path.join(root, 'dist/c2c-agent.mjs');
/** The daemon as the unit's ExecStart runs it (scripts/lib/unit-exec-start.mjs): the agents here run it so. */
const execStart = unitExecStart(root);
export const daemonBundle = execStart.file;
/** The unit's node options for the daemon, before the file. */
export const daemonNodeArgs = execStart.nodeArgs;
export const HZ = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const children = [];
export const tmp = mkdtempSync(path.join(tmpdir(), 'c2c-bench-'));
const ended = new WeakSet(); // children killed by us: their exit is expected

// Linux's statfs(2) f_type of a tmpfs.
const TMPFS_MAGIC = 0x01021994;
const onTmpfs = (dir) => existsSync(dir) && statfsSync(dir).type === TMPFS_MAGIC;
/**
 * Where the agents' runtime dirs go: a tmpfs, as the unit's
 * RuntimeDirectory= is (/run), when the machine has one at /dev/shm; else
 * beside the rest in `tmp`, and the start row's note says so
 * (docs/benchmarks.md, "The runtime dir on tmpfs, as deployed").
 */
export const runtimeOnTmpfs = onTmpfs('/dev/shm');
export const runtimeRoot = runtimeOnTmpfs ? mkdtempSync('/dev/shm/c2c-bench-run-') : path.join(tmp, 'run');
/** The runtime dir of the agent `name` (made by the agent, as systemd makes the unit's). */
export const runtimeDirOf = (name) => path.join(runtimeRoot, name);

/** Kills every child started so far (a part calls it when it is done with them). */
export function killAll() {
  for (const c of children.splice(0)) {
    ended.add(c);
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
}
/** Kills one child whose work is done (its exit is expected). */
export function end(child) {
  ended.add(child);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}
process.on('exit', () => {
  killAll();
  // Each on its own: a tmpfs dir left behind holds RAM until the next boot.
  for (const dir of [runtimeRoot, tmp]) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // a child still writing in it; nothing else to do at exit
    }
  }
});
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => process.exit(130));

/** The environment without the developer's own C2C_* settings, NODE_OPTIONS or systemd variables. */
export function cleanEnv(extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('C2C_') && k !== 'NOTIFY_SOCKET' && !k.startsWith('WATCHDOG_') && k !== 'NODE_OPTIONS') env[k] = v;
  }
  return { ...env, ...extra };
}

/** `node args...` as a child that must not die on its own: if it does, the benchmark stops with its stderr. */
export function launch(args, env = {}) {
  const child = spawn(process.execPath, args, { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let err = '';
  child.stderr.on('data', (d) => (err = (err + d).slice(-2000)));
  child.on('exit', (code, sig) => {
    if (ended.has(child)) return;
    console.error(`bench: ${args.slice(0, 2).join(' ')} exited early (${code ?? sig}): ${err.trim()}`);
    process.exit(1);
  });
  return child;
}

/** A bare node process doing nothing, the baseline; `env` as an agent's (NODE_OPTIONS: the same node flags). */
export const bareNode = (env = {}) => launch(['-e', 'setInterval(() => {}, 1000)'], env);

/**
 * The built fake cloud on ephemeral ports: { child, url, adminUrl, caFile, devices }.
 * HTTPS with its throwaway CA, as the service is; `plainHttp` for the loopback baseline.
 */
export async function fakeCloud(scale, devices = 1, { plainHttp = false } = {}) {
  // Its CA file in our temp dir: a fake killed with SIGKILL cannot remove its own.
  const caDir = mkdtempSync(path.join(tmp, 'ca-'));
  const child = launch([path.join(root, 'dist/fake-cloud.mjs'), '--port', '0', '--devices', String(devices), '--time-scale', String(scale), ...(plainHttp ? ['--plain-http'] : ['--ca-dir', caDir])]);
  const line = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', () => reject(new Error('fake cloud did not start')));
  });
  return { child, ...JSON.parse(line) };
}

/**
 * `c2c-agent run` against `cloud` as device `deviceIndex`, with its own
 * state and runtime dirs and an explicit empty config (the machine's
 * /etc/c2c-agent stays out). `nodeArgs` go before the bundle. Over HTTPS the
 * fake's CA is trusted through NODE_EXTRA_CA_CERTS: Node's own default store,
 * as a unit talking to a service with a public certificate uses (caFile
 * builds a context of its own; `trust: 'caFile'` measures that instead).
 */
export function caEnv(cloud, trust = 'env') {
  if (!cloud.caFile) return {};
  return trust === 'caFile' ? { C2C_CA_FILE: cloud.caFile } : { NODE_EXTRA_CA_CERTS: cloud.caFile };
}

export function agent(cloud, scale, name, { env = {}, deviceIndex = 0, nodeArgs = [], trust = 'env' } = {}) {
  const dir = path.join(tmp, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'config.json'), '{}\n');
  // Logs go to a pipe we drain and drop: the cost of pino writing JSON is
  // part of the agent's cost, the terminal's is not.
  const child = launch(
    [...daemonNodeArgs, ...nodeArgs, daemonBundle, 'run', '--api-url', cloud.url, '--time-scale', String(scale),
      '--state-dir', path.join(dir, 'state'), '--runtime-dir', runtimeDirOf(name)],
    { C2C_TOKEN: cloud.devices[deviceIndex].accessToken, C2C_LOG_LEVEL: 'info', C2C_CONFIG: path.join(dir, 'config.json'), ...caEnv(cloud, trust), ...env },
  );
  child.stdout.resume();
  return child;
}

/**
 * A cache directory holding the daemon's code cache, as a camera's holds it
 * from its first start on (the unit's CacheDirectory=, agent/daemon/boot.ts):
 * one daemon runs until it has written it (after its first heartbeat) and is stopped. `env`: the unit's environment, which the cache's
 * V8 flags must match.
 */
export async function codeCacheDir(cloud, scale, deviceIndex, env = {}) {
  const dir = path.join(tmp, 'code-cache');
  mkdirSync(dir, { recursive: true });
  const child = agent(cloud, scale, 'code-cache-writer', { deviceIndex, env: { ...env, CACHE_DIRECTORY: dir } });
  const deadline = Date.now() + 30_000;
  try {
    while (!readdirSync(dir).some((f) => f.endsWith('.v8cache'))) {
      if (Date.now() > deadline) throw new Error('bench: no code cache written within 30 s');
      await sleep(50);
    }
  } finally {
    end(child);
  }
  return dir;
}

// A stand-in for PID 1's notify socket (scripts/lib/notify-listener.py): counts datagrams.
const LISTENER_PY = path.join(root, 'scripts/lib/notify-listener.py');

export async function notifySocket(name) {
  const sock = path.join(tmp, `${name}.sock`);
  const child = spawn('python3', [LISTENER_PY, sock], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const counts = { watchdog: 0, status: 0 };
  const lines = createInterface({ input: child.stdout });
  await new Promise((resolve) => lines.once('line', resolve));
  lines.on('line', (l) => {
    if (l.includes('WATCHDOG=1')) counts.watchdog++;
    if (l.includes('STATUS=')) counts.status++;
  });
  return { sock, counts };
}

export async function referee(cloud, deviceIndex = 0) {
  const res = await fetch(`${cloud.adminUrl}/referee/${encodeURIComponent(cloud.devices[deviceIndex].id)}`);
  return res.json();
}

export async function waitHeartbeats(cloud, n, timeoutMs, deviceIndex = 0) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await referee(cloud, deviceIndex);
    if (r.heartbeats >= n) return r;
    if (Date.now() > deadline) throw new Error(`only ${r.heartbeats} of ${n} heartbeats within ${timeoutMs / 1000} s`);
    await sleep(100);
  }
}

export const rssKiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);

// CPU seconds of every thread (V8's GC and libuv's pool included), from
// schedstat's nanosecond run time: utime+stime in /proc/<pid>/stat counts
// 10 ms ticks, too coarse for an idle process over a few seconds.
export function cpuSeconds(pid) {
  let ns = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended between listing and reading
    }
  }
  return ns / 1e9;
}

/** The above plus the reaped children (systemd-notify runs), in clock ticks. */
export function cpuWithChildren(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return cpuSeconds(pid) + (Number(f[13]) + Number(f[14])) / HZ;
}

/** Runs a node script as a child to its end: { code, signal, timedOut, stdout, stderr }; a timeout kills it. */
export function runNode(args, { timeoutMs, env = {} } = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
    let timedOut = false;
    const timer = timeoutMs ? setTimeout(() => ((timedOut = true), child.kill('SIGTERM')), timeoutMs) : undefined;
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, timedOut, stdout, stderr });
    });
  });
}
