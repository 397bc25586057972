// One simulated camera: its own state dir ("flash"), runtime dir ("tmpfs"),
// media dir (where the camera writes clips) and fake hardware tree under
// --host-root, and the real agent from the bundle run against them: `pair`,
// `check --json`, `run`, `queue --json`, exactly as an installer would.
import { execFileSync } from 'node:child_process';
import { createCipheriv, createHash } from 'node:crypto';
import { closeSync, constants, createWriteStream, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { execFileTracked, spawnTracked } from './children.mjs';

/** The firmware profile cam-4k (firmware 2.x) has two channels: the sensor at dev/video0 and the proxy stream at dev/video1. */
export const FIRMWARE_VERSION = '2.1.0';
export const CHANNELS = Object.freeze({
  sensor: { path: 'dev/video0', deviceModelId: 'c2c-cam-4k-sensor' },
  proxy: { path: 'dev/video1', deviceModelId: 'c2c-cam-4k-proxy' },
});

/**
 * The camera's buttons (real-time logging, docs/real-time-logging.md): the
 * shipped cam-4k profile with two inputs on its sensor channel, "Good take"
 * on KEY_ENTER of a gpio-keys input device (here a FIFO under the host root)
 * and "Slate" with no key, and time-of-day timecode at 23.976.
 */
export const BUTTONS = Object.freeze({
  inputDevice: 'dev/input/by-path/platform-gpio-keys-event',
  goodTake: { channel: 'sensor', index: 0, name: 'Good take', code: 28 },
  slate: { channel: 'sensor', index: 1, name: 'Slate' },
  rate: '24000/1001',
});

/** struct input_event as the kernel writes it on this machine: 16 bytes on 32-bit ARM and x86, 24 elsewhere (little-endian hosts). */
function inputEvent(timeMs, type, code, value) {
  const wide = !['arm', 'ia32'].includes(process.arch);
  const b = Buffer.alloc(wide ? 24 : 16);
  const sec = Math.floor(timeMs / 1000);
  const usec = (timeMs - sec * 1000) * 1000;
  if (wide) {
    b.writeBigInt64LE(BigInt(sec), 0);
    b.writeBigInt64LE(BigInt(usec), 8);
  } else {
    b.writeInt32LE(sec, 0);
    b.writeInt32LE(usec, 4);
  }
  b.writeUInt16LE(type, b.length - 8);
  b.writeUInt16LE(code, b.length - 6);
  b.writeInt32LE(value, b.length - 4);
  return b;
}

/** An environment without the person's own C2C_* settings, which would win over the config file. */
function cleanEnv(extra) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('C2C_') && k !== 'NOTIFY_SOCKET' && !k.startsWith('WATCHDOG_') && k !== 'NODE_OPTIONS') env[k] = v;
  }
  return { ...env, ...extra };
}

export class SimDevice {
  constructor({ index, work, bundle, cloud, timeScale, webPort }) {
    this.index = index;
    this.label = `cam${index + 1}`;
    this.bundle = bundle;
    this.cloud = cloud;
    this.root = path.join(work, this.label);
    this.dirs = {
      state: path.join(this.root, 'state'),
      run: path.join(this.root, 'run'),
      host: path.join(this.root, 'host'),
      media: path.join(this.root, 'media'),
    };
    this.logFile = path.join(this.root, 'agent.log');
    this.env = cleanEnv({ C2C_CONFIG: path.join(this.root, 'config.json'), C2C_TIME_SCALE: String(timeScale) });
    this.daemon = undefined;
    this.deviceId = undefined;
    this.name = undefined;
    /** Clips written to the media dir: { name, bytes, path }. */
    this.clips = [];
    this.plugged = new Set();
    /** The port of this camera's web page on loopback (--web), else undefined. */
    this.webPort = webPort;
    /** Buttons pressed: { name, channel, index, at } (story ms, set by the story). */
    this.presses = [];
  }

  /** The profile with the buttons, in a profiles dir of its own (profilesDir), and the gpio-keys device as a FIFO. */
  writeProfile() {
    const dir = path.join(this.root, 'profiles');
    mkdirSync(dir, { recursive: true });
    const shipped = JSON.parse(readFileSync(fileURLToPath(new URL('../../firmware-profiles/cam-4k.json', import.meta.url)), 'utf8'));
    const { goodTake, slate } = BUTTONS;
    const channels = shipped.channels.map((c) => (c.key === goodTake.channel ? { ...c, inputs: [{ index: goodTake.index, name: goodTake.name, key: 'KEY_ENTER' }, { index: slate.index, name: slate.name }] } : c));
    writeFileSync(path.join(dir, 'cam-4k.json'), `${JSON.stringify({ ...shipped, channels, inputDevice: BUTTONS.inputDevice, timecode: { rate: BUTTONS.rate } }, null, 2)}\n`);
    const fifo = path.join(this.dirs.host, BUTTONS.inputDevice);
    mkdirSync(path.dirname(fifo), { recursive: true });
    execFileSync('mkfifo', [fifo]);
    return dir;
  }

  /** The director presses "Good take": a key-down and a key-up on the camera's input device, as the gpio-keys driver writes them. */
  pressGoodTake(storyMs) {
    const { goodTake } = BUTTONS;
    const now = Date.now();
    // Non-blocking: the agent holds the FIFO open for reading (ENXIO, no reader, would be a failure to report).
    const fd = openSync(path.join(this.dirs.host, BUTTONS.inputDevice), constants.O_WRONLY | constants.O_NONBLOCK);
    try {
      writeSync(fd, Buffer.concat([inputEvent(now, 1, goodTake.code, 1), inputEvent(now, 0, 0, 0), inputEvent(now + 120, 1, goodTake.code, 0), inputEvent(now + 120, 0, 0, 0)]));
    } finally {
      closeSync(fd);
    }
    this.presses.push({ name: goodTake.name, channel: goodTake.channel, index: goodTake.index, at: storyMs });
  }

  prepare() {
    for (const d of Object.values(this.dirs)) mkdirSync(d, { recursive: true, mode: 0o700 });
    const secretFile = path.join(this.root, 'client-secret');
    writeFileSync(secretFile, this.cloud.clientSecret, { mode: 0o600 });
    // The same config file an administrator writes to /etc/c2c-agent/config.json.
    const config = {
      apiUrl: this.cloud.url,
      stateDir: this.dirs.state,
      runtimeDir: this.dirs.run,
      hostRoot: this.dirs.host,
      mediaDir: this.dirs.media,
      clientSecretFile: secretFile,
      firmwareVersion: FIRMWARE_VERSION,
      // The shipped cam-4k profile with the camera's buttons (writeProfile).
      profilesDir: this.writeProfile(),
      // Advice the agent gives while its daemon is not running fits the simulator, which starts each agent itself (no systemd here).
      startAdvice: "the simulator starts this camera's agent itself once it is paired",
      // The fake's throwaway CA, as a private deployment's would be given.
      ...(this.cloud.caFile && { caFile: this.cloud.caFile }),
      // --web: the camera's own page, on loopback here (a camera would listen on its LAN address).
      ...(this.webPort !== undefined && { webListen: `127.0.0.1:${this.webPort}` }),
    };
    writeFileSync(path.join(this.root, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  }

  /** `c2c-agent pair`: its screen on this terminal when `inherit`, else each plain line to `onLine`. Resolves to the exit code. */
  pair({ inherit, onLine }) {
    const child = spawnTracked(process.execPath, [this.bundle, 'pair', '--timeout', '300'], {
      env: this.env,
      stdio: inherit ? ['ignore', 'inherit', 'inherit'] : ['ignore', 'pipe', 'pipe'],
    });
    if (!inherit) {
      readline.createInterface({ input: child.stdout }).on('line', onLine);
      readline.createInterface({ input: child.stderr }).on('line', onLine);
    }
    return new Promise((resolve) => child.once('close', (code) => resolve(code ?? 1)));
  }

  /** `c2c-agent check --json`: learns the device's id and name. */
  async check() {
    const out = await this.command(['check', '--json']);
    const device = out.json?.device;
    if (out.code === 0 && device?.id) {
      this.deviceId = device.id;
      this.name = device.name ?? device.id;
    }
    return out;
  }

  /** --web: the page's address, and its PIN once the daemon made it (`c2c-agent web-pin`, asked until it answers or `ms` real ms passed). */
  async webPage(ms = 10_000) {
    const url = `http://127.0.0.1:${this.webPort}/`;
    const until = Date.now() + ms;
    for (;;) {
      const out = await this.command(['web-pin']);
      if (out.code === 0) return { url, pin: out.stdout.trim() };
      if (Date.now() > until) return { url, pin: undefined, why: out.stderr.trim() };
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** `c2c-agent queue --json`, read from the state dir. */
  queue() {
    return this.command(['queue', '--json']);
  }

  command(args) {
    return new Promise((resolve) => {
      execFileTracked(process.execPath, [this.bundle, ...args], { env: this.env, encoding: 'utf8', maxBuffer: 8 * 1024 * 1024 }, (err, stdout, stderr) => {
        let json;
        try {
          json = JSON.parse(stdout);
        } catch {
          json = undefined;
        }
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, json, stdout, stderr });
      });
    });
  }

  /** `c2c-agent run`: its log goes to agent.log; each state change to `onTransition({ from, to, reason })`. */
  start(onTransition) {
    const log = createWriteStream(this.logFile, { flags: 'a' });
    // Its own process group: a Ctrl-C at the terminal ends the story, and the simulator stops the agents itself (children.mjs).
    const child = spawnTracked(process.execPath, [this.bundle, 'run'], { env: this.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    child.stderr.pipe(log, { end: false });
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      log.write(`${line}\n`);
      let rec;
      try {
        rec = JSON.parse(line);
      } catch {
        return;
      }
      if (typeof rec.from === 'string' && typeof rec.to === 'string') onTransition({ from: rec.from, to: rec.to, reason: rec.reason ?? '' });
    });
    const exited = new Promise((resolve) => child.once('close', (code, signal) => {
      log.end();
      resolve(code ?? (signal ? `signal ${signal}` : 1));
    }));
    this.daemon = { child, exited };
    return child.pid;
  }

  /** SIGTERM, as systemd stops it; the exit code. */
  async stop() {
    if (!this.daemon) return undefined;
    if (this.daemon.child.exitCode === null && this.daemon.child.signalCode === null) this.daemon.child.kill('SIGTERM');
    return this.daemon.exited;
  }

  kill() {
    this.daemon?.child.kill('SIGKILL');
  }

  /** The daemon's status.json (runtime dir), or undefined between writes and before the first. */
  status() {
    try {
      return JSON.parse(readFileSync(path.join(this.dirs.run, 'status.json'), 'utf8'));
    } catch {
      return undefined;
    }
  }

  plug(key) {
    const p = path.join(this.dirs.host, CHANNELS[key].path);
    mkdirSync(path.dirname(p), { recursive: true });
    writeFileSync(p, '');
    this.plugged.add(key);
  }

  unplug(key) {
    rmSync(path.join(this.dirs.host, CHANNELS[key].path), { force: true });
    this.plugged.delete(key);
  }

  /** A finished clip as a camera writes it: `name.part` first, renamed into place when complete. */
  dropClip(name, bytes, random) {
    // A keystream seeded from `random`: incompressible bytes, the same for the same seed, and fast.
    const seed = Buffer.from(Array.from({ length: 48 }, () => Math.floor(random() * 256)));
    const data = createCipheriv('aes-256-ctr', seed.subarray(0, 32), seed.subarray(32)).update(Buffer.alloc(bytes));
    const file = path.join(this.dirs.media, name);
    writeFileSync(`${file}.part`, data);
    renameSync(`${file}.part`, file);
    this.clips.push({ name, bytes, path: file });
  }
}

/**
 * Whether the fake stored `clip` byte for byte: the asset's parts split the
 * file as the service defines it (chunk = ceil(size / n), the last to EOF),
 * and each part's sha256 must be that slice's.
 */
export function sameBytes(clip, asset) {
  const data = readFileSync(clip.path);
  if (asset.filesize !== data.length || asset.parts.length === 0) return false;
  const chunk = Math.ceil(data.length / asset.parts.length);
  return asset.parts.every((part, i) => {
    const slice = data.subarray(i * chunk, i === asset.parts.length - 1 ? data.length : (i + 1) * chunk);
    return part.receivedBytes === slice.length && part.sha256 === createHash('sha256').update(slice).digest('hex');
  });
}
