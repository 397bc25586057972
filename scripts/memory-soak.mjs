#!/usr/bin/env node
// Memory under hostile answers (issue 27): N daemons of the built bundle,
// each against its own hostile service (the `answers` fuzz target's raw HTTP
// server, test/fuzz/lib/hostile-server.mjs, over TLS as deployed), run with
// the systemd unit's Environment= lines (NODE_OPTIONS=--max-old-space-size=64
// --max-semi-space-size=1, and whatever else the unit sets) for a number of
// agent hours at a time scale. Every answer is drawn as the fuzzer's daemon
// cases draw them (hostile-answers.mjs): random statuses and bodies, 101
// upgrades held open, huge and dripping bodies, resets, stalls, 1xx, lying
// lengths, spoiled TLS handshakes. Clips keep arriving in each daemon's media
// dir so uploads (assets, presigned PUTs) go on all along.
//
//   node scripts/memory-soak.mjs [--daemons 3] [--agent-hours 31] [--scale 75] [--seed 1]
//        [--bundle FILE] [--unit FILE] [--plain] [--sample-s S] [--env K=V ...]
//        [--probe] [--json FILE] [--keep]
//
// Each daemon's VmRSS, VmHWM, RssAnon and RssFile are read from
// /proc/PID/status every agent minute (at least every second, at most every
// 5 s real). Prints the curve (one row per agent hour: the median RSS of the
// hour and its highest sample, per daemon), the peak (VmHWM, the kernel's own
// high-water mark, against the unit's MemoryHigh=), and end against start
// (median of the last agent hour minus the median of the first).
//
// --probe adds a preload (a diagnostic, never in the figures of a plain run)
// that logs process.memoryUsage() (heap used and total, external,
// arrayBuffers) every 5 s real, and --heapsnapshot-signal=SIGUSR2; at the
// end, a full collection (SIGWINCH to the preload), /proc/PID/smaps, and a
// heap snapshot, in each daemon's dir, kept with the answers each server gave
// (answers.jsonl: to line RSS jumps up with what came just before). --env K=V overrides or adds to the unit's
// environment (MALLOC_ARENA_MAX=2, say) to try a setting without editing it.
//
// A daemon that exits is restarted like systemd would (Restart=on-failure,
// after RestartSec= real time) and counted; one that falls into needs-pairing
// (a hostile refresh answer can cost it its grant) gets fresh credentials
// and a SIGHUP, as `pair` does, so requests never stop. Exits 1 when a daemon
// died or the peak reached MemoryHigh=.
import { spawn } from 'node:child_process';
import { appendFileSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startHostileServer } from '../test/fuzz/lib/hostile-server.mjs';
import { drawAnswer, routeOf, World } from '../test/fuzz/lib/hostile-answers.mjs';
import { Rng } from '../test/fuzz/lib/rng.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const USAGE = 'usage: node scripts/memory-soak.mjs [--daemons N] [--agent-hours H] [--scale S] [--seed K] [--bundle FILE] [--unit FILE] [--plain] [--sample-s S] [--env K=V ...] [--probe] [--json FILE] [--keep]';

function usage(message) {
  process.stderr.write(`memory-soak: ${message}\n${USAGE}\n`);
  process.exit(64);
}

let values;
try {
  ({ values } = parseArgs({
    options: {
      daemons: { type: 'string', default: '3' },
      'agent-hours': { type: 'string', default: '31' },
      scale: { type: 'string', default: '75' },
      seed: { type: 'string', default: '1' },
      bundle: { type: 'string' },
      unit: { type: 'string' },
      plain: { type: 'boolean', default: false },
      'sample-s': { type: 'string' },
      env: { type: 'string', multiple: true, default: [] },
      probe: { type: 'boolean', default: false },
      json: { type: 'string' },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  }));
} catch (err) {
  usage(err.message);
}
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const num = (name, min, max = Infinity) => {
  const v = Number(values[name]);
  if (!Number.isFinite(v) || v < min || v > max) usage(`--${name} must be a number in [${min}, ${max}], got '${values[name]}'`);
  return v;
};
const DAEMONS = num('daemons', 1, 3);
const AGENT_HOURS = num('agent-hours', 0.05);
const SCALE = num('scale', 1, 600);
const SEED = Math.floor(num('seed', 0));
const bundle = path.resolve(values.bundle ?? path.join(root, 'dist/c2c-agent.mjs'));
if (!existsSync(bundle)) usage(`${bundle} is missing: run npm run build`);
// The unit beside the bundle's tree (an older build's own unit), else this tree's.
const besideBundle = path.resolve(path.dirname(bundle), '../systemd/c2c-agent.service');
const unitFile = path.resolve(values.unit ?? (existsSync(besideBundle) ? besideBundle : path.join(root, 'systemd/c2c-agent.service')));

const AGENT_MINUTE_MS = 60_000 / SCALE;
const SAMPLE_MS = values['sample-s'] !== undefined ? num('sample-s', 0.2) * 1000 : Math.min(5000, Math.max(1000, AGENT_MINUTE_MS));
const realMs = (agentMs) => agentMs / SCALE;
const agentHoursAt = (t) => (t * SCALE) / 3_600_000;

// ---- the unit ----------------------------------------------------------------------------

/** The unit's Environment= assignments, MemoryHigh= (bytes) and RestartSec= (s). */
function readUnit(file) {
  const text = readFileSync(file, 'utf8');
  const env = {};
  for (const m of text.matchAll(/^Environment=(.*)$/gm)) {
    // systemd: space-separated assignments, each optionally in double quotes.
    for (const a of m[1].match(/"[^"]*"|\S+/g) ?? []) {
      const s = a.startsWith('"') ? a.slice(1, -1) : a;
      const i = s.indexOf('=');
      if (i > 0) env[s.slice(0, i)] = s.slice(i + 1);
    }
  }
  const size = (v) => {
    const m = /^(\d+(?:\.\d+)?)([KMGT]?)$/i.exec(v ?? '');
    return m ? Number(m[1]) * 1024 ** ' KMGT'.indexOf((m[2] || ' ').toUpperCase()) : undefined;
  };
  const restart = /^RestartSec=(\d+)s?$/m.exec(text)?.[1];
  return { env, memoryHigh: size(/^MemoryHigh=(\S+)$/m.exec(text)?.[1]), memoryMax: size(/^MemoryMax=(\S+)$/m.exec(text)?.[1]), restartSec: restart === undefined ? 10 : Number(restart) };
}

const unit = readUnit(unitFile);
for (const kv of values.env) {
  const i = kv.indexOf('=');
  if (i <= 0) usage(`--env wants K=V, got '${kv}'`);
  unit.env[kv.slice(0, i)] = kv.slice(i + 1);
}

// ---- /proc -------------------------------------------------------------------------------

const KIB = 1024;
const MIB = 1024 * 1024;

/** VmRSS, VmHWM, RssAnon, RssFile of a pid in bytes, or undefined once it is gone. */
function memOf(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * KIB;
  const m = { rss: field('VmRSS'), hwm: field('VmHWM'), anon: field('RssAnon'), file: field('RssFile') };
  return Number.isFinite(m.rss) ? m : undefined;
}

// ---- a daemon and its service ------------------------------------------------------------

/** The `answers` fuzz target's daemon mix (test/fuzz/lib/answers.mjs), any answer at all. */
const MIX = { pValid: 0.6, retryOnly: false, pProperWire: 0.45, pGarbageHeaders: 0.25 };

/** As answers.mjs's tlsPlan: a share of new connections spoiled before any request. */
function tlsTrouble(rng) {
  return {
    trouble() {
      if (!rng.chance(0.1)) return undefined;
      const kind = rng.pick(['cut', 'hold', 'certificate']);
      if (kind === 'hold') return { kind, ms: rng.pick([200, 1500, 6000]) };
      if (kind === 'certificate') return { kind, certificate: rng.pick(['expired', 'not-yet-valid', 'wrong-host', 'unknown-ca']) };
      return { kind };
    },
  };
}

const tmpRoot = mkdtempSync(path.join(os.tmpdir(), 'c2c-memory-soak-'));
const PROBE = path.join(tmpRoot, 'probe.mjs');
writeFileSync(
  PROBE,
  `import { appendFileSync } from 'node:fs';
const out = process.env.SOAK_PROBE_OUT;
const t0 = Date.now();
const log = (what) => {
  const m = process.memoryUsage();
  appendFileSync(out, JSON.stringify({ t: Date.now() - t0, what, rss: m.rss, heapTotal: m.heapTotal, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers }) + '\\n');
};
setInterval(() => log('sample'), 5000).unref();
// SIGWINCH: a full collection (as agent/lib/heap-trim.ts makes one), logged before and 3 s after.
process.on('SIGWINCH', async () => {
  const { default: vm } = await import('node:vm');
  const { default: v8 } = await import('node:v8');
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  v8.setFlagsFromString('--no-expose-gc');
  log('before-gc');
  gc();
  log('after-gc');
  setTimeout(() => log('3s-after-gc'), 3000).unref();
});
`,
);

async function makeDaemon(i) {
  const rng = new Rng(SEED).fork(`daemon#${i}`);
  const dir = path.join(tmpRoot, `d${i}`);
  const dirs = { state: path.join(dir, 'state'), run: path.join(dir, 'run'), host: path.join(dir, 'host'), media: path.join(dir, 'media') };
  mkdirSync(dirs.state, { recursive: true, mode: 0o700 });
  mkdirSync(path.join(dirs.host, 'dev'), { recursive: true });
  mkdirSync(dirs.media, { recursive: true });
  writeFileSync(path.join(dirs.host, 'dev/video0'), '');
  writeFileSync(path.join(dir, 'config.json'), '{}\n');
  let world;
  const seen = new Map();
  const serverRng = rng.fork('server');
  const plan = (req) => {
    const route = routeOf(req);
    const n = seen.get(route) ?? 0;
    seen.set(route, n + 1);
    const r = serverRng.fork(`${route}#${n}`);
    world.rng = r;
    return drawAnswer(r, world, route, req, route === 'other' || route === 'redirected' ? { pValid: 1, pProperWire: 1 } : MIX);
  };
  const server = await startHostileServer({ plan, ...(values.plain ? {} : { tls: tlsTrouble(rng.fork('tls')) }) });
  world = new World(rng.fork('world'), server.url);
  const clientSecret = path.join(dir, 'client-secret');
  writeFileSync(clientSecret, `${world.secret('fzcs')}\n`, { mode: 0o600 });
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    ...unit.env,
    C2C_CONFIG: path.join(dir, 'config.json'),
    C2C_API_URL: server.url,
    C2C_STATE_DIR: dirs.state,
    C2C_RUNTIME_DIR: dirs.run,
    C2C_TIME_SCALE: String(SCALE),
    C2C_CLIENT_SECRET_FILE: clientSecret,
    C2C_CLIENT_ID: `soak-client-${rng.hex(8)}`,
    C2C_FIRMWARE_VERSION: '1.6.0',
    C2C_HOST_ROOT: dirs.host,
    C2C_MEDIA_DIR: dirs.media,
    C2C_MEDIA_SETTLE_SECONDS: '1',
    C2C_LOG_LEVEL: 'info',
  };
  if (server.caPem) {
    writeFileSync(path.join(dir, 'ca.pem'), server.caPem);
    env.C2C_CA_FILE = path.join(dir, 'ca.pem');
  }
  const nodeArgs = [];
  if (values.probe) {
    nodeArgs.push('--import', PROBE, '--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`);
    env.SOAK_PROBE_OUT = path.join(dir, 'probe.jsonl');
  }
  const d = { i, dir, dirs, rng, world, server, env, nodeArgs, proc: undefined, pid: undefined, deaths: [], repairs: 0, clips: 0, samples: [], stopping: false };
  grant(d);
  return d;
}

/** Credentials the service granted, as `pair` stores them (a short lifetime: refreshes get fuzzed too). */
function grant(d) {
  const lifetime = 3600;
  const now = Date.now();
  const g = d.world.grant();
  writeFileSync(
    path.join(d.dirs.state, 'credentials.json'),
    JSON.stringify({ access_token: g.access_token, refresh_token: g.refresh_token, token_type: 'bearer', expires_in: lifetime, obtained_at: new Date(now).toISOString(), expires_at: new Date(now + realMs(lifetime * 1000)).toISOString(), clock: 'local' }),
    { mode: 0o600 },
  );
}

function launch(d) {
  const log = createWriteStream(path.join(d.dir, 'daemon.log'), { flags: 'a' });
  const child = spawn(process.execPath, [...d.nodeArgs, bundle, 'run'], { cwd: d.dir, env: d.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  d.proc = child;
  d.pid = child.pid;
  d.started = Date.now();
  child.once('exit', (code, signal) => {
    if (d.stopping) return;
    d.deaths.push({ atAgentH: agentHoursAt(Date.now() - t0), code, signal });
    process.stdout.write(`memory-soak: daemon ${d.i + 1} exited ${signal ?? code} at agent hour ${agentHoursAt(Date.now() - t0).toFixed(1)}; restarted in ${unit.restartSec} s\n`);
    setTimeout(() => d.stopping || launch(d), unit.restartSec * 1000);
  });
}

/** The daemon's state from its status document, if it has one. */
function stateOf(d) {
  try {
    return JSON.parse(readFileSync(path.join(d.dirs.run, 'status.json'), 'utf8')).state;
  } catch {
    return undefined;
  }
}

/** A finished clip in the media dir (old mtime: settled); the oldest go beyond 40, as a camera's storage rotates. */
function newClip(d) {
  const f = path.join(d.dirs.media, `clip-${String(d.clips++).padStart(5, '0')}.mp4`);
  writeFileSync(f, d.rng.bytes(d.rng.pick([1000, 70_000, 200_000, 600_000])));
  const old = (Date.now() - 3_600_000) / 1000;
  utimesSync(f, old, old);
  const clips = readdirSync(d.dirs.media).filter((n) => n.startsWith('clip-')).sort();
  for (const n of clips.slice(0, Math.max(0, clips.length - 40))) {
    try {
      unlinkSync(path.join(d.dirs.media, n));
    } catch {
      // gone
    }
  }
}

// ---- the run -----------------------------------------------------------------------------

const fmt = (b) => (b / MIB).toFixed(1);
const median = (xs) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
};

process.stdout.write(
  `memory-soak: ${DAEMONS} daemon(s) of ${path.relative(process.cwd(), bundle) || bundle}, ${AGENT_HOURS} agent hours at --time-scale ${SCALE} (${((AGENT_HOURS * 3600) / SCALE / 60).toFixed(1)} min real), seed ${SEED}, ${values.plain ? 'plain HTTP' : 'HTTPS (caFile), 10% of handshakes spoiled'}\n` +
    `memory-soak: unit ${path.relative(process.cwd(), unitFile) || unitFile}: ${Object.entries(unit.env).map(([k, v]) => `${k}=${v}`).join(' ')}; MemoryHigh ${unit.memoryHigh === undefined ? 'none' : `${fmt(unit.memoryHigh)} MiB`}; samples every ${(SAMPLE_MS / 1000).toFixed(1)} s real; dir ${tmpRoot}\n`,
);

const daemons = [];
for (let i = 0; i < DAEMONS; i++) daemons.push(await makeDaemon(i));
const t0 = Date.now();
for (const d of daemons) launch(d);

const endAt = t0 + realMs(AGENT_HOURS * 3_600_000);
const CLIP_EVERY_MS = realMs(10 * 60_000);
let nextClip = t0;
const needsPairingSince = new Map();
let lastRow = 0;
let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => (interrupted = true));

const header = `${'agent h'.padStart(7)}  ${daemons.map((d) => `d${d.i + 1} RSS (max)`.padStart(16)).join('')}`;
process.stdout.write(`\nRSS per agent hour, MiB: median of the hour's samples (its highest)\n${header}\n`);

function printRow(h) {
  const hour = daemons.map((d) => d.samples.filter((s) => s.h > h - 1 && s.h <= h).map((s) => s.rss));
  if (hour.every((xs) => xs.length === 0)) return;
  const cells = hour.map((xs) => (xs.length === 0 ? '-'.padStart(16) : `${fmt(median(xs))} (${fmt(Math.max(...xs))})`.padStart(16)));
  process.stdout.write(`${String(h).padStart(7)}  ${cells.join('')}\n`);
}

while (Date.now() < endAt && !interrupted) {
  const now = Date.now();
  const h = agentHoursAt(now - t0);
  for (const d of daemons) {
    const m = d.pid === undefined ? undefined : memOf(d.pid);
    if (m !== undefined) d.samples.push({ h, t: now - t0, pid: d.pid, ...m });
    const state = stateOf(d);
    if (state === 'needs-pairing') {
      if (!needsPairingSince.has(d)) needsPairingSince.set(d, now);
      else if (now - needsPairingSince.get(d) > AGENT_MINUTE_MS) {
        grant(d);
        d.repairs++;
        needsPairingSince.delete(d);
        d.proc?.kill('SIGHUP');
      }
    } else needsPairingSince.delete(d);
    // The server's request log is the fuzzer's oracle food; here it would only grow (--probe keeps it on disk).
    if (values.probe && d.server.log.length > 0) appendFileSync(path.join(d.dir, 'answers.jsonl'), d.server.log.map((e) => JSON.stringify({ t: e.t, route: e.route, label: e.label })).join('\n') + '\n');
    d.server.log.length = 0;
  }
  if (now >= nextClip) {
    for (const d of daemons) newClip(d);
    nextClip += CLIP_EVERY_MS;
  }
  while (lastRow + 1 <= h) printRow(++lastRow);
  await new Promise((r) => setTimeout(r, SAMPLE_MS));
}
if (values.probe) {
  // A full collection, then what is left: RSS by mapping, then a heap snapshot (the live heap).
  for (const d of daemons) d.proc?.kill('SIGWINCH');
  await new Promise((r) => setTimeout(r, 4000));
  for (const d of daemons) {
    try {
      writeFileSync(path.join(d.dir, 'smaps-end.txt'), readFileSync(`/proc/${d.pid}/smaps`));
    } catch {
      // gone
    }
    d.proc?.kill('SIGUSR2');
  }
  await new Promise((r) => setTimeout(r, 8000));
}

// ---- stop, then the figures --------------------------------------------------------------

const endH = agentHoursAt(Date.now() - t0);
if (endH > lastRow) printRow(lastRow + 1);
for (const d of daemons) {
  d.stopping = true;
  d.proc?.kill('SIGTERM');
}
await Promise.all(daemons.map((d) => new Promise((r) => (d.proc === undefined || d.proc.exitCode !== null || d.proc.signalCode !== null ? r() : (d.proc.once('exit', r), setTimeout(() => { try { process.kill(-d.pid, 'SIGKILL'); } catch { /* gone */ } r(); }, 8000))))));
for (const d of daemons) await d.server.close();

const summary = daemons.map((d) => {
  const first = d.samples.filter((s) => s.h <= 1).map((s) => s.rss);
  const last = d.samples.filter((s) => s.h > endH - 1).map((s) => s.rss);
  const peak = Math.max(...d.samples.map((s) => s.hwm));
  const peakSample = d.samples.reduce((a, s) => (s.rss > (a?.rss ?? 0) ? s : a), undefined);
  const requests = [...d.server.counts].map(([k, n]) => `${k} ${n}`).join(', ');
  return { daemon: d.i + 1, start: median(first), end: median(last), peak, peakAt: peakSample?.h, anonEnd: median(d.samples.filter((s) => s.h > endH - 1).map((s) => s.anon)), deaths: d.deaths, repairs: d.repairs, clips: d.clips, requests };
});
process.stdout.write('\n');
for (const s of summary) {
  process.stdout.write(
    `d${s.daemon}: start ${fmt(s.start)} MiB, end ${fmt(s.end)} (${s.end >= s.start ? '+' : ''}${fmt(s.end - s.start)}), peak ${fmt(s.peak)} (VmHWM; highest sample at agent hour ${s.peakAt?.toFixed(1)}), anon at end ${fmt(s.anonEnd)}; ${s.deaths.length} exit(s), ${s.repairs} re-pairing(s), ${s.clips} clips\n    requests: ${s.requests}\n`,
  );
}
const peak = Math.max(...summary.map((s) => s.peak));
const over = unit.memoryHigh !== undefined && peak >= unit.memoryHigh;
process.stdout.write(`\npeak ${fmt(peak)} MiB (MemoryHigh ${unit.memoryHigh === undefined ? 'none' : `${fmt(unit.memoryHigh)} MiB${over ? ': REACHED' : `: ${fmt(unit.memoryHigh - peak)} MiB to spare`}`}); end - start ${summary.map((s) => `${s.end >= s.start ? '+' : ''}${fmt(s.end - s.start)}`).join(', ')} MiB; ${summary.reduce((n, s) => n + s.deaths.length, 0)} exit(s)\n`);
if (values.json) writeFileSync(values.json, JSON.stringify({ bundle, unitEnv: unit.env, scale: SCALE, agentHours: AGENT_HOURS, seed: SEED, tls: !values.plain, summary, samples: daemons.map((d) => d.samples) }));
if (values.keep || values.probe) process.stdout.write(`memory-soak: kept ${tmpRoot}\n`);
else rmSync(tmpRoot, { recursive: true, force: true });
process.exitCode = over || summary.some((s) => s.deaths.length > 0) ? 1 : 0;
