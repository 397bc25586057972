// Helpers of scripts/bench-upload.mjs: sizes, /proc readers, the in-process
// fake cloud, the agent as a child process, and a watch on the fake's journal
// that tells when an asset's first storage PUT arrived and when it completed.
import { spawn, execFileSync } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, statfsSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export const MiB = 1024 * 1024;
export const HZ = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** "512M", "2GiB", "1.5g", "4096" (bytes): binary units. */
export function parseSize(name, text) {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$/i.exec(String(text));
  if (!m) throw new Error(`--${name}: not a size: ${JSON.stringify(text)} (e.g. 512M, 2G, 1048576)`);
  const n = Math.round(Number(m[1]) * 1024 ** ' kmgt'.indexOf((m[2] || ' ').toLowerCase()));
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name}: must be at least one byte`);
  return n;
}

/** utime + stime of every thread of a live process, in clock ticks. */
export function cpuTicks(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]);
}

/** VmRSS and its parts (RssAnon: heap and buffers; RssFile: mapped files, the node binary's pages), KiB. */
export function rss(pid) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1]);
  return { total: field('VmRSS'), anon: field('RssAnon'), file: field('RssFile') };
}

/** A file of `size` bytes of random-looking data (a 1 MiB random block repeated: nothing on the path compresses). */
export function writeDataFile(file, size, block) {
  const fd = openSync(file, 'w');
  try {
    for (let left = size; left > 0; left -= block.length) writeSync(fd, block, 0, Math.min(left, block.length));
  } finally {
    closeSync(fd);
  }
}

/** Copies bytes [start, start + length) of `src` into a new file `dst`. */
export function cutPart(src, dst, start, length, buf) {
  const from = openSync(src, 'r');
  const to = openSync(dst, 'w');
  try {
    for (let done = 0; done < length; ) {
      const n = readSync(from, buf, 0, Math.min(buf.length, length - done), start + done);
      if (n === 0) throw new Error(`${src} ended at ${start + done}`);
      writeSync(to, buf, 0, n);
      done += n;
    }
  } finally {
    closeSync(from);
    closeSync(to);
  }
}

/**
 * The standalone fake has no upload part size flag: bundle its in-process API
 * (test/fake-cloud/index.ts) into the temp dir and import it.
 */
export async function loadFakeCloud(root, tmp) {
  const { build } = await import('esbuild');
  const outfile = path.join(tmp, 'fake-cloud-lib.mjs');
  await build({
    entryPoints: [path.join(root, 'test/fake-cloud/index.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    banner: { js: "import { createRequire as __c2cCreateRequire } from 'node:module'; const require = __c2cCreateRequire(import.meta.url);" },
    logLevel: 'warning',
  });
  return import(pathToFileURL(outfile).href);
}

/** An environment with none of the developer's C2C_* settings leaking in. */
function cleanEnv(extra) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('C2C_') && k !== 'NOTIFY_SOCKET' && !k.startsWith('WATCHDOG_') && k !== 'NODE_OPTIONS') env[k] = v;
  }
  return { ...env, ...extra };
}

/**
 * `c2c-agent run --time-scale 1` paired as `device` (its tokens in
 * <state-dir>/credentials.json, 0600, as `pair` writes them), watching a
 * media dir with no settle time and deleting each file once uploaded.
 * `apiUrl` (default the fake's) may be a proxy in front of it; `nodeOptions`
 * go on node's command line (V8 flags too, which NODE_OPTIONS refuses);
 * `extraArgs` after run's own (bench-realtime.mjs: --realtime-uploads true);
 * `env`: more of its environment (the unit's Environment= lines, a CA to trust).
 */
export function startAgent({ bundle, cloud, device, dir, children, onEarlyExit, apiUrl = cloud.url, nodeOptions = '', extraArgs = [], env = {} }) {
  const stateDir = path.join(dir, 'state');
  const mediaDir = path.join(dir, 'media');
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  mkdirSync(mediaDir, { recursive: true });
  // An explicit empty config keeps the machine's /etc/c2c-agent out of it.
  writeFileSync(path.join(dir, 'config.json'), '{}\n');
  const now = Date.now();
  const lifetime = 8 * 3600;
  const creds = path.join(stateDir, 'credentials.json');
  writeFileSync(
    creds,
    `${JSON.stringify({
      access_token: device.accessToken,
      refresh_token: device.refreshToken,
      token_type: 'bearer',
      expires_in: lifetime,
      obtained_at: new Date(now).toISOString(),
      expires_at: new Date(now + lifetime * 1000).toISOString(),
      clock: 'local',
    }, null, 2)}\n`,
    { mode: 0o600 },
  );
  chmodSync(creds, 0o600);
  const child = spawn(
    process.execPath,
    [...nodeOptions.split(/\s+/).filter(Boolean), bundle, 'run', '--api-url', apiUrl, '--time-scale', '1', '--state-dir', stateDir, '--runtime-dir', path.join(dir, 'run'),
      '--media-dir', mediaDir, '--media-settle-seconds', '0', '--delete-after-upload', 'true', ...extraArgs],
    { env: cleanEnv({ ...env, C2C_CONFIG: path.join(dir, 'config.json'), C2C_LOG_LEVEL: 'info' }), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.add(child);
  // Logs go to a pipe we drain: pino writing JSON is the agent's cost, a terminal's is not.
  let out = '';
  const keep = (d) => (out = (out + d).slice(-4000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let stopping = false;
  const exited = new Promise((resolve) => {
    child.once('exit', (code, sig) => {
      children.delete(child);
      if (!stopping) onEarlyExit(`the agent exited early (${code ?? sig}): ${out.trim().split('\n').slice(-5).join('\n')}`);
      resolve();
    });
  });
  return {
    pid: child.pid,
    mediaDir,
    output: () => out,
    async stop() {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Reads the live journal of the in-process fake. Entries are recorded when a
 * request arrives (t: fake ms since start, performance.now() based at scale 1).
 */
export class JournalWatch {
  constructor(cloud) {
    this.cloud = cloud;
    this.seen = 0;
    /** assetId -> t of its first storage request */
    this.firstPut = new Map();
  }

  scan() {
    const j = this.cloud.journal;
    for (; this.seen < j.length; this.seen++) {
      const e = j[this.seen];
      if (e.path.startsWith('/_storage/')) {
        const assetId = e.path.split('/')[2];
        if (assetId && !this.firstPut.has(assetId)) this.firstPut.set(assetId, { t: e.t, deviceId: e.deviceId });
      }
    }
  }

  /** Resolves once `deviceId` has been answered 200 on GET /v2/devices/me. */
  async ready(deviceId, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      // Recorded on arrival, answered later: look at the status each time.
      if (this.cloud.journal.some((e) => e.path === '/v2/devices/me' && e.status === 200 && e.deviceId === deviceId)) return;
      if (Date.now() > deadline) throw new Error(`the agent did not reach GET /v2/devices/me within ${timeoutMs / 1000} s`);
      await sleep(50);
    }
  }

  /**
   * Watches one upload: `assetId`, or the first asset of `deviceId` not in
   * `exclude`. Calls onFirstPut() when its first storage PUT is seen (polled
   * every few ms) and resolves with { assetId, firstPutMs, completeMs } (fake ms)
   * once the fake holds every byte of it.
   */
  async upload({ assetId, deviceId, exclude = new Set(), onFirstPut = () => undefined, timeoutMs, failed = () => undefined }) {
    const deadline = Date.now() + timeoutMs;
    let id = assetId;
    let first;
    for (;;) {
      this.scan();
      if (id === undefined) {
        for (const [a, v] of this.firstPut) if (v.deviceId === deviceId && !exclude.has(a)) id = a;
      }
      if (id !== undefined && first === undefined && this.firstPut.has(id)) {
        first = this.firstPut.get(id).t;
        onFirstPut();
      }
      if (first !== undefined && this.cloud.asset(id)?.complete) return { assetId: id, firstPutMs: first, completeMs: this.cloud.now() };
      const why = failed();
      if (why) throw new Error(why);
      if (Date.now() > deadline) {
        const a = id && this.cloud.asset(id);
        throw new Error(`upload not complete within ${timeoutMs / 1000} s (${a ? `${a.bytesReceived} of ${a.filesize} bytes` : 'no storage PUT seen'})`);
      }
      await sleep(first === undefined ? 2 : 5);
    }
  }
}

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * The node flags the systemd unit runs the agent with (its NODE_OPTIONS
 * line), so the bench measures the agent as a camera runs it.
 */
export function unitNodeOptions(root) {
  return unitEnvironment(root).NODE_OPTIONS ?? missingNodeOptions();
}

function missingNodeOptions() {
  throw new Error('systemd/c2c-agent.service sets no NODE_OPTIONS: the bench cannot run the agent as installed');
}

/**
 * Every variable the systemd unit sets (its Environment= lines: NODE_OPTIONS,
 * glibc's malloc tuning), for the agents and the bare node they are compared with.
 */
export function unitEnvironment(root) {
  const unit = readFileSync(path.join(root, 'systemd/c2c-agent.service'), 'utf8');
  const env = {};
  for (const m of unit.matchAll(/^Environment="([A-Za-z_][A-Za-z0-9_]*)=([^"]*)"$/gm)) env[m[1]] = m[2].trim();
  if (env.NODE_OPTIONS === undefined) missingNodeOptions();
  return env;
}

export function freeBytes(dir) {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
}

/** rss(pid) every 100 ms until the returned stop(), which gives the samples. */
export function sampleRss(pid) {
  const samples = [rss(pid)];
  const timer = setInterval(() => {
    try {
      samples.push(rss(pid));
    } catch {
      // the process is gone; the caller notices
    }
  }, 100);
  return () => (clearInterval(timer), samples);
}

/** Resolves once `file` is gone; `failed()` returning a reason ends it early. */
export async function waitGone(file, timeoutMs, failed) {
  const deadline = Date.now() + timeoutMs;
  while (existsSync(file)) {
    const why = failed();
    if (why) throw new Error(why);
    if (Date.now() > deadline) throw new Error(`the agent did not delete ${path.basename(file)} after uploading it`);
    await sleep(5);
  }
}
