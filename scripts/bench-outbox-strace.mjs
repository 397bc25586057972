// Part of scripts/bench-outbox.mjs: what the built daemon writes to its state
// dir (flash) during one agent hour of healthy heartbeats with no channel
// change, seen by strace, against its runtime dir (a tmpfs as deployed; here
// in the bench's temp dir) as the baseline.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';

const TRACED = 'write,pwrite64,writev,pwritev,pwritev2,openat,rename,renameat,renameat2,unlink,unlinkat,ftruncate,fsync,fdatasync';
const WRITES = new Set(['write', 'pwrite64', 'writev', 'pwritev', 'pwritev2']);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function straceMissing() {
  const r = spawnSync('strace', ['-V'], { stdio: 'ignore' });
  return r.error !== undefined || r.status !== 0;
}

/** strace -f output as whole calls: { t (epoch s), name, args, ret, retPath }; `<unfinished ...>` halves joined per thread. */
export function parseStrace(text) {
  const open = new Map();
  const calls = [];
  for (const line of text.split('\n')) {
    const m = /^(\d+)\s+(\d+\.\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const [, pid, t, body] = m;
    if (body.endsWith('<unfinished ...>')) {
      open.set(pid, { t: Number(t), head: body.slice(0, -'<unfinished ...>'.length).trimEnd() });
      continue;
    }
    let whole = body;
    let at = Number(t);
    const resumed = /^<\.\.\. (\w+) resumed>\s?(.*)$/.exec(body);
    if (resumed) {
      const head = open.get(pid);
      open.delete(pid);
      if (!head) continue;
      whole = `${head.head}${head.head.endsWith('(') || resumed[2].startsWith(')') ? '' : ' '}${resumed[2]}`;
      at = head.t;
    }
    const call = /^(\w+)\((.*)$/.exec(whole);
    const cut = whole.lastIndexOf(') = ');
    if (!call || cut < 0) continue;
    const ret = whole.slice(cut + 4);
    calls.push({ t: at, name: call[1], args: whole.slice(call[1].length + 1, cut), ret: Number.parseInt(ret, 10), retPath: /^\d+<(.*)>$/.exec(ret)?.[1] });
  }
  return calls;
}

/** Bytes and operations under `dir` among `calls`: writes, opens for writing, renames, unlinks, truncates, fsyncs. */
export function tally(calls, dir) {
  const under = (p) => p !== undefined && (p === dir || p.startsWith(`${dir}/`));
  const fdPath = (args) => /^\d+<([^>]*)>/.exec(args)?.[1]?.replace(/ \(deleted\)$/, '');
  const quoted = (args) => [...args.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((x) => x[1]);
  const out = { bytes: 0, writes: 0, opensForWrite: 0, renames: 0, unlinks: 0, truncates: 0, fsyncs: 0, files: new Set() };
  for (const c of calls) {
    if (c.ret < 0 || Number.isNaN(c.ret)) continue;
    if (WRITES.has(c.name) && under(fdPath(c.args))) {
      out.bytes += c.ret;
      out.writes++;
      out.files.add(fdPath(c.args));
    } else if (c.name === 'openat' && under(c.retPath) && /O_WRONLY|O_RDWR|O_CREAT|O_TRUNC/.test(c.args)) out.opensForWrite++;
    else if (c.name.startsWith('rename') && quoted(c.args).some(under)) out.renames++;
    else if (c.name.startsWith('unlink') && quoted(c.args).some(under)) out.unlinks++;
    else if (c.name === 'ftruncate' && under(fdPath(c.args))) out.truncates++;
    else if ((c.name === 'fsync' || c.name === 'fdatasync') && under(fdPath(c.args))) out.fsyncs++;
  }
  const ops = out.opensForWrite + out.renames + out.unlinks + out.truncates;
  // Temp names of atomic writes differ every time: one entry per target.
  const files = new Set([...out.files].map((f) => path.relative(dir, f).replace(/\.[0-9a-f]{8,}\.tmp$/, '.*.tmp').replace(/\.tmp-[0-9a-z]+$/, '.tmp-*')));
  return { ...out, ops, files: [...files].sort() };
}

async function firstLine(child, what) {
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${what} exited (${code}) before it was ready`)));
  });
}

/**
 * Runs the bundle under strace against the built fake cloud at `scale`,
 * waits for start-up and the first channel sync to settle, then counts one
 * agent hour (3600 / scale real s) from a marker time.
 */
export async function idleHour({ root, tmp, scale, children, settleMs = 1000, timeoutMs = 30_000 }) {
  const cloud = spawn(process.execPath, [path.join(root, 'dist/fake-cloud.mjs'), '--plain-http', '--port', '0', '--devices', '1', '--time-scale', String(scale)], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(cloud);
  const info = JSON.parse(await firstLine(cloud, 'fake cloud'));
  const device = info.devices[0];
  const base = path.join(tmp, 'idle');
  const dirs = { state: path.join(base, 'state'), run: path.join(base, 'run'), host: path.join(base, 'host') };
  for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true, mode: 0o700 });
  mkdirSync(path.join(dirs.host, 'dev'));
  writeFileSync(path.join(dirs.host, 'dev/video0'), '');
  writeFileSync(path.join(dirs.state, 'credentials.json'), JSON.stringify({ access_token: device.accessToken, refresh_token: device.refreshToken, token_type: 'bearer' }), { mode: 0o600 });
  writeFileSync(path.join(base, 'config.json'), '{}\n');
  const traceFile = path.join(tmp, 'agent.strace');
  const args = ['run', '--api-url', info.url, '--time-scale', String(scale), '--state-dir', dirs.state, '--runtime-dir', dirs.run,
    '--host-root', dirs.host, '--firmware-version', '1.6.0', '--client-id', device.clientId];
  const tracer = spawn('strace', ['-f', '-y', '-ttt', '-e', `trace=${TRACED}`, '-o', traceFile, process.execPath, path.join(root, 'dist/c2c-agent.mjs'), ...args], {
    cwd: tmp, env: { ...process.env, C2C_CONFIG: path.join(base, 'config.json'), C2C_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(tracer);
  let stderr = '';
  tracer.stderr.on('data', (d) => (stderr = (stderr + d).slice(-2000)));
  const exited = new Promise((resolve) => tracer.once('exit', resolve));
  const referee = async () => (await fetch(`${info.adminUrl}/referee/${encodeURIComponent(device.id)}`)).json();
  const status = () => {
    try {
      return JSON.parse(readFileSync(path.join(dirs.run, 'status.json'), 'utf8'));
    } catch {
      return undefined;
    }
  };
  // A killed strace leaves its tracee running, so the agent is killed by its own pid
  // (while strace runs, which it does until the agent exits, the pid is the agent's).
  let agentPid;
  const firstPid = () => {
    try {
      return Number(/^(\d+) /.exec(readFileSync(traceFile, 'utf8'))?.[1]) || undefined;
    } catch {
      return undefined;
    }
  };
  const track = () => {
    if (agentPid !== undefined) return;
    agentPid = status()?.pid ?? firstPid();
    if (agentPid !== undefined) children.unshift({ exitCode: null, signalCode: null, kill: (sig) => {
      try {
        if (tracer.exitCode === null) process.kill(agentPid, sig);
      } catch {
        // already gone
      }
    } });
  };
  // Settled: a heartbeat went through, the queue is empty and idle, and the channel sync is behind us.
  const settled = (s) => {
    if (s?.lastHeartbeat?.result !== 'ok' || s.queue === undefined) return false;
    const pending = Object.values(s.queue.byKind ?? {}).reduce((n, k) => n + (k.pending?.items ?? 0), 0);
    return pending === 0 && (s.queue.inFlight ?? []).length === 0 && (s.channels?.pendingSyncs ?? 0) === 0 && s.channels?.known !== undefined;
  };
  const started = Date.now();
  let s;
  while (!settled((s = status()))) {
    track();
    if (tracer.exitCode !== null) throw new Error(`the agent under strace exited early: ${stderr.trim()}`);
    if (Date.now() - started > timeoutMs) throw new Error(`the agent did not settle within ${timeoutMs / 1000} s (status: ${JSON.stringify(s)?.slice(0, 300)})`);
    await sleep(100);
  }
  // The group-commit window (and the deletes after it) must close before the hour opens.
  await sleep(settleMs);
  const before = await referee();
  const from = Date.now() / 1000;
  await sleep((3600 * 1000) / scale);
  const to = Date.now() / 1000;
  const after = await referee();
  track();
  if (agentPid !== undefined) process.kill(agentPid, 'SIGTERM');
  const code = await Promise.race([exited, sleep(10_000).then(() => 'timeout')]);
  if (code === 'timeout') {
    if (agentPid !== undefined) process.kill(agentPid, 'SIGKILL');
    tracer.kill('SIGKILL');
  }
  cloud.kill('SIGTERM');
  const calls = parseStrace(readFileSync(traceFile, 'utf8'));
  const inHour = calls.filter((c) => c.t >= from && c.t < to);
  const startup = calls.filter((c) => c.t < from);
  return {
    scale,
    realSeconds: to - from,
    agentHours: ((to - from) * scale) / 3600,
    heartbeats: after.heartbeats - before.heartbeats,
    tooSoon: after.tooSoon - before.tooSoon,
    startupSeconds: from - started / 1000,
    state: tally(inHour, dirs.state),
    runtime: tally(inHour, dirs.run),
    startupState: tally(startup, dirs.state),
    startupRuntime: tally(startup, dirs.run),
  };
}
