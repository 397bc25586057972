#!/usr/bin/env node
// Idle footprint of the agent daemon, as ratios to a bare `node` process
// measured in the same run on the same machine (absolute figures mean little
// across a Pi Zero and a laptop; ratios travel).
//
//   npm run bench            (builds first)
//   node scripts/bench-agent.mjs [--scale 600] [--window 20] [--settle 30]
//
// What is measured, and why this is an honest comparison:
// - RSS: VmRSS of the agent right after 10 heartbeats at the referee, and
//   again once start-up garbage is collected, each vs the bare process's
//   VmRSS at the same moment.
// - Under systemd every STATUS= and WATCHDOG=1 is a systemd-notify child:
//   the scale-N agent talks to a stand-in notify socket, so its figure
//   includes STATUS= runs; a third agent at scale 1 with a 1 s watchdog
//   prices one ping, added at the unit's rate (3600 / (WatchdogSec / 2) pings an hour).
// - CPU per agent-hour: an agent at --time-scale N does N agent-hours of
//   heartbeat work per real hour, but its fixed idle cost (timers, GC) is
//   paid per REAL second and is divided by N. So two agents run at once:
//   one at scale N (heartbeat work, a window of many heartbeats) and one at
//   scale 1 (idle cost between heartbeats, after its first heartbeat). The
//   estimate for a real camera is idle(scale 1) per real hour + per-heartbeat
//   work x heartbeats per hour. The bare process's CPU per real hour over the
//   same window is the baseline (a real hour IS an agent-hour at scale 1).
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const SCALE = arg('scale', 600);
const WINDOW_S = arg('window', 20);
// Start-up work (JIT, and V8's memory reducer, which runs GCs for some
// 20 s after allocation calms down) must not count as idle: every process
// has been up this long when the window opens.
const SETTLE_S = arg('settle', 30);
const HZ = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
// WatchdogSec= in systemd/c2c-agent.service: a ping every half of it.
const WATCHDOG_SEC = Number.parseInt(/^WatchdogSec=(\d+)/m.exec(readFileSync(path.join(root, 'systemd/c2c-agent.service'), 'utf8'))?.[1] ?? '', 10);
if (!(WATCHDOG_SEC > 0)) throw new Error('bench-agent: no WatchdogSec= in systemd/c2c-agent.service');
const children = [];
const tmp = mkdtempSync(path.join(tmpdir(), 'c2c-bench-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function cleanup() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(tmp, { recursive: true, force: true });
}
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

function launch(args, env = {}) {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let err = '';
  child.stderr.on('data', (d) => (err = (err + d).slice(-2000)));
  child.on('exit', (code, sig) => {
    if (shuttingDown) return;
    console.error(`bench: ${args.slice(0, 2).join(' ')} exited early (${code ?? sig}): ${err.trim()}`);
    process.exit(1);
  });
  return child;
}
let shuttingDown = false;

async function fakeCloud(scale, devices = 1) {
  const child = launch([path.join(root, 'dist/fake-cloud.mjs'), '--port', '0', '--devices', String(devices), '--time-scale', String(scale)]);
  const line = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', () => reject(new Error('fake cloud did not start')));
  });
  const info = JSON.parse(line);
  return { child, ...info, device: info.devices[0] };
}

function agent(cloud, scale, name, env = {}, deviceIndex = 0) {
  const dir = path.join(tmp, name);
  // An explicit empty config keeps the machine's /etc/c2c-agent out of it.
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'config.json'), '{}\n');
  // Logs go to a pipe we drain and drop: the cost of pino writing JSON is
  // part of the agent's cost, the terminal's is not.
  const child = launch(
    [path.join(root, 'dist/c2c-agent.mjs'), 'run', '--api-url', cloud.url, '--time-scale', String(scale),
      '--state-dir', path.join(dir, 'state'), '--runtime-dir', path.join(dir, 'run')],
    { C2C_TOKEN: cloud.devices[deviceIndex].accessToken, C2C_LOG_LEVEL: 'info', C2C_CONFIG: path.join(dir, 'config.json'), ...env },
  );
  child.stdout.resume();
  return child;
}

// A stand-in for PID 1's notify socket (Node has no unix datagram sockets):
// counts datagrams, and closes systemd-notify's barrier fd as PID 1 does.
const LISTENER_PY = `
import socket, sys, os, array
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("listening", flush=True)
while True:
    msg, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(64))
    for level, typ, data in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fds = array.array('i'); fds.frombytes(data[:len(data) - len(data) % 4])
            for fd in fds: os.close(fd)
    print(msg.decode().replace("\\n", " "), flush=True)
`;

async function notifySocket(name) {
  const sock = path.join(tmp, `${name}.sock`);
  const child = spawn('python3', ['-c', LISTENER_PY, sock], { stdio: ['ignore', 'pipe', 'inherit'] });
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

async function referee(cloud) {
  const res = await fetch(`${cloud.adminUrl}/referee/${encodeURIComponent(cloud.device.id)}`);
  return res.json();
}

async function waitHeartbeats(cloud, n, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await referee(cloud);
    if (r.heartbeats >= n) return r;
    if (Date.now() > deadline) throw new Error(`only ${r.heartbeats} of ${n} heartbeats within ${timeoutMs / 1000} s`);
    await sleep(100);
  }
}

const rssKiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
// CPU seconds of every thread (V8's GC and libuv's pool included), from
// schedstat's nanosecond run time: utime+stime in /proc/<pid>/stat counts
// 10 ms ticks, too coarse for an idle process over a few seconds.
function cpuSeconds(pid) {
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
// The above plus the reaped children (systemd-notify runs), in clock ticks.
function cpuWithChildren(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return cpuSeconds(pid) + (Number(f[13]) + Number(f[14])) / HZ;
}

const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const ratio = (a, b) => (b > 0 ? fmt(a / b, 2) : 'n/a');

async function main() {
  const [fast, slow, nFast, nSd] = await Promise.all([fakeCloud(SCALE), fakeCloud(1, 2), notifySocket('fast'), notifySocket('sd')]);
  const bare = launch(['-e', 'setInterval(() => {}, 1000)']);
  const launchedAt = Date.now();
  // As under systemd (STATUS= lines on every state change), no watchdog.
  const aFast = agent(fast, SCALE, 'fast', { NOTIFY_SOCKET: nFast.sock });
  const aSlow = agent(slow, 1, 'slow');
  // Scale 1 with a 1 s watchdog: the price of one WATCHDOG=1 ping.
  const aSd = agent(slow, 1, 'sd', { NOTIFY_SOCKET: nSd.sock, WATCHDOG_USEC: '1000000' }, 1);

  await waitHeartbeats(slow, 1, 20_000);
  await waitHeartbeats(fast, 10, (10 * 300 * 1000) / SCALE + 20_000);
  const rssAt10 = { agent: rssKiB(aFast.pid), bare: rssKiB(bare.pid) };
  await sleep(Math.max(0, launchedAt + SETTLE_S * 1000 - Date.now()));
  const rssAfter = (await referee(fast)).heartbeats;
  const rss = { agent: rssKiB(aFast.pid), slowAgent: rssKiB(aSlow.pid), bare: rssKiB(bare.pid) };

  const before = { fast: cpuWithChildren(aFast.pid), slow: cpuSeconds(aSlow.pid), sd: cpuWithChildren(aSd.pid), pings: nSd.counts.watchdog, bare: cpuSeconds(bare.pid), hb: (await referee(fast)).heartbeats, slowHb: (await referee(slow)).heartbeats };
  const t0 = process.hrtime.bigint();
  await sleep(WINDOW_S * 1000);
  const realS = Number(process.hrtime.bigint() - t0) / 1e9;
  const after = { fast: cpuWithChildren(aFast.pid), slow: cpuSeconds(aSlow.pid), sd: cpuWithChildren(aSd.pid), pings: nSd.counts.watchdog, bare: cpuSeconds(bare.pid), fastRef: await referee(fast), slowRef: await referee(slow) };

  const hb = after.fastRef.heartbeats - before.hb;
  const agentHours = (realS * SCALE) / 3600;
  const fastCpu = after.fast - before.fast;
  const idleRate = (after.slow - before.slow) / realS; // CPU s per real s, between heartbeats
  const perHeartbeat = hb > 0 ? Math.max(0, fastCpu - idleRate * realS) / hb : NaN;
  const hbPerHour = hb / agentHours;
  const estimatePerAgentHour = idleRate * 3600 + perHeartbeat * hbPerHour;
  const barePerHour = ((after.bare - before.bare) / realS) * 3600;
  const pings = after.pings - before.pings;
  const perPing = pings > 0 ? Math.max(0, after.sd - before.sd - idleRate * realS) / pings : NaN;
  const underSystemd = estimatePerAgentHour + perPing * (3600 / (WATCHDOG_SEC / 2));

  shuttingDown = true;
  const rows = [
    ['RSS right after 10 heartbeats (MiB)', fmt(rssAt10.agent / 1024, 1), fmt(rssAt10.bare / 1024, 1), fmt(rssAt10.agent / rssAt10.bare)],
    [`idle RSS after ${SETTLE_S} s, ${rssAfter} heartbeats (MiB)`, fmt(rss.agent / 1024, 1), fmt(rss.bare / 1024, 1), fmt(rss.agent / rss.bare)],
    [`CPU s per agent-hour at --time-scale ${SCALE}`, fmt(fastCpu / agentHours, 3), fmt(barePerHour, 3), ratio(fastCpu / agentHours, barePerHour)],
    ['idle CPU s per real hour at --time-scale 1', fmt(idleRate * 3600, 3), fmt(barePerHour, 3), ratio(idleRate * 3600, barePerHour)],
    ['est. CPU s per agent-hour on a camera (scale 1)', fmt(estimatePerAgentHour, 3), fmt(barePerHour, 3), ratio(estimatePerAgentHour, barePerHour)],
    [`  same, plus WATCHDOG=1 every ${WATCHDOG_SEC / 2} s`, fmt(underSystemd, 3), fmt(barePerHour, 3), ratio(underSystemd, barePerHour)],
  ];
  const w = [50, 12, 12, 10];
  const line = (r) => r.map((c, i) => String(c).padEnd(w[i])).join(' ');
  console.log(line(['measure', 'agent', 'bare node', 'ratio']));
  console.log('-'.repeat(86));
  for (const r of rows) console.log(line(r));
  console.log('');
  console.log(
    `window ${fmt(realS, 1)} s real = ${fmt(agentHours, 2)} agent-hours at scale ${SCALE}; ${hb} heartbeats ` +
      `(${fmt(hbPerHour, 1)}/agent-hour), ${fmt(perHeartbeat * 1000, 1)} ms CPU each; ` +
      `STATUS= runs ${nFast.counts.status} in all at scale ${SCALE} (their CPU is in the rows above); ` +
      `one WATCHDOG=1 ping costs ${fmt(perPing * 1000, 1)} ms CPU with its systemd-notify child (${pings} pings, tick ${1000 / HZ} ms); ` +
      `referee at scale ${SCALE}: tooSoon ${after.fastRef.tooSoon}, tooLate ${after.fastRef.tooLate}, missingVersion ${after.fastRef.missingVersion}; ` +
      `scale-1 agent: RSS ${fmt(rss.slowAgent / 1024, 1)} MiB, ${after.slowRef.heartbeats - before.slowHb} heartbeats in the window (0 = a true idle figure)`,
  );
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`bench: ${err.message}`);
    process.exit(1);
  },
);
