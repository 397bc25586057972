// The daemon in-process, in agent time: the rig the end-to-end suites that
// judge time use (docs/testing.md, "In-process or a process").
//
// One virtual clock (test/support/virtual-clock.ts) carries everything: the
// daemon `run` builds (buildDaemon, agent/daemon/daemon.ts: the core and every
// unit, started in order, stopped in reverse), over the transport's and the
// storage client's `wire` (test/fleet/wire.ts) into the fake cloud's
// inject(), and the fake cloud itself (its clock seam). Files are real, in a
// temp dir on tmpfs: credentials, the queue, status.json, the attempt record,
// a hardware tree under the host root, a media dir; the local API listens on
// its socket. Time moves only in advance() and until(): a timer fires, everything
// it started settles (its promise chains and file I/O, settle()), then the
// next one. So a spacing, a debounce, a backoff or a refresh time is an exact
// number of agent ms, the same on a loaded machine as on a quiet one.
//
// What the rig leaves to the process suites: the bundle, signals and exit
// codes, the locks, the attempt record read by another process, the socket
// seen from another process, systemd-notify and the watchdog's real-time
// pings, the CLI's output, kills and power cuts with what they leave on disk.
import { jest } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { loadProfiles, selectProfile } from '../../agent/config/profiles.js';
import { loadSettings } from '../../agent/config/settings.js';
import type { Settings } from '../../agent/config/types.js';
import type { StatusDocument } from '../../agent/core/status-document.js';
import { agentVersion } from '../../agent/cli/version.js';
import { buildDaemon, type Daemon } from '../../agent/daemon/daemon.js';
import { readStatus } from '../../agent/daemon/runtime/status-file.js';
import { createSystemdNotifier } from '../../agent/daemon/systemd/notify.js';
import { createLogger } from '../../agent/lib/logger.js';
import { apiRequest, type ApiReply } from '../../agent/localapi/client.js';
import { apiSocketOf } from '../../agent/localapi/local-api-unit.js';
import type { UploadRow } from '../../agent/uploads/upload-rows.js';
import { startFakeCloud, type FakeCloud, type FakeCloudOptions, type InjectRequest, type JournalEntry, type SeededDevice } from '../fake-cloud/index.js';
import { fleetWire, type WireStats } from '../fleet/wire.js';
import { DeviceClock, derive, seeded, settle, VirtualClock, type Machine } from '../support/virtual-clock.js';

// A bound against a hang, not a speed test: an agent hour here costs about a real second alone, several
// beside two workers and a busy machine (a CI run saw a start-up case pass jest's 30 s default).
jest.setTimeout(120_000);

/** Wall time at virtual 0, for the fake's ISO times and the agent's wall clock. */
export const WALL_START = Date.UTC(2026, 0, 1);
/** With a wire the URL is only a name: nothing resolves it. */
const API_URL = 'https://fake-cloud.invalid';
/** The machine had been up a day when the rig started: no boot spread on the first heartbeat (policy.ts). */
const UPTIME_MS = 24 * 3_600_000;

export const SECOND = 1_000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;

export interface RigOptions {
  /** The daemons' randomness (jitter, backoff): seeded per start, the same run for the same seed (default 1). */
  seed?: number;
  /** The fake cloud's options (its clock is the rig's). */
  cloud?: Omit<FakeCloudOptions, 'clock' | 'listen' | 'wallStart' | 'random'>;
  /**
   * Where the daemon's tokens come from: 'file' (default), credentials.json
   * as `pair` leaves it plus the client id and a client secret file, so it
   * refreshes; 'env', the seeded access token as C2C_TOKEN (no refresh);
   * 'none', a unit never paired: no token, its own client id (kept with
   * conf), the client secret file, so it pairs through its local API.
   */
  credentials?: 'file' | 'env' | 'none';
}

/** One log line of a daemon, with the agent time it was written at and which start wrote it. */
export type LogLine = Record<string, unknown> & { msg: string; level: number; at: number; gen: number };

interface Running {
  gen: number;
  pid: number;
  daemon: Daemon;
  clock: DeviceClock;
  settings: Settings;
}

export class Rig {
  /** The unit's machine: agent time is virtual time minus its boot. */
  readonly machine: Machine = { bootAt: -UPTIME_MS, wallErrorMs: 0 };
  readonly stats: WireStats = { answers: new Map() };
  /** The firmware version every start is given unless its env names one; undefined: none (the agent sends 0.0.0 and warns). */
  firmware: string | undefined = '0.9.3';
  /** Every daemon's log lines, in order. */
  readonly lines: LogLine[] = [];
  /** Every request the daemons put on the wire, answered or not (a refused one never reaches the journal). */
  readonly sent: Array<{ t: number; method: string; path: string }> = [];
  /** What each daemon told systemd (READY=1, STATUS=..., STOPPING=1), in order, with the agent time it was sent at. */
  readonly notes: Array<{ at: number; gen: number; text: string }> = [];
  readonly root: string;
  readonly stateDir: string;
  readonly runtimeDir: string;
  /** The hardware tree (--host-root): dev/ and proc/asound/ exist. */
  readonly host: string;
  readonly media: string;
  private current: Running | undefined;
  private gen = 0;
  private taps: Array<{ match: (r: InjectRequest) => boolean; then: () => void }> = [];
  /** The fake as the daemon's wire reaches it: each request journaled, then the taps looked at. */
  private readonly tapped: Pick<FakeCloud, 'inject'> = {
    inject: (req) => {
      this.sent.push({ t: this.vc.now(), method: req.method, path: req.path });
      const answer = this.cloud.inject(req);
      const hit = this.taps.filter((t) => t.match(req));
      this.taps = this.taps.filter((t) => !hit.includes(t));
      for (const t of hit) t.then();
      return answer;
    },
  };
  private networkDownUntil = -Infinity;

  private constructor(
    /** The one clock: the fake cloud's time and every daemon's. */
    readonly vc: VirtualClock,
    readonly cloud: FakeCloud,
    readonly seed: number,
    private readonly credentials: 'file' | 'env' | 'none',
    lifetimeS: number,
  ) {
    // tmpfs where there is one: the daemon fsyncs its records, and a rig waits for each (settle).
    this.root = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'c2c-e2e-'));
    this.stateDir = join(this.root, 'state');
    this.runtimeDir = join(this.root, 'run');
    this.host = join(this.root, 'host');
    this.media = join(this.root, 'media');
    for (const d of [this.runtimeDir, join(this.host, 'dev'), join(this.host, 'proc/asound'), this.media]) mkdirSync(d, { recursive: true });
    mkdirSync(this.stateDir, { recursive: true, mode: 0o700 });
    writeFileSync(join(this.root, 'config.json'), '{}\n');
    writeFileSync(this.secretFile, `${cloud.clientSecret}\n`, { mode: 0o600 });
    chmodSync(this.secretFile, 0o600);
    if (credentials === 'file') this.writeCredentials(this.device, lifetimeS);
  }

  static async up(o: RigOptions = {}): Promise<Rig> {
    const seed = o.seed ?? 1;
    const vc = new VirtualClock();
    const cloud = await startFakeCloud({ ...o.cloud, listen: false, clock: vc, wallStart: WALL_START, random: seeded(derive(seed, 0xc10d)) });
    return new Rig(vc, cloud, seed, o.credentials ?? 'file', o.cloud?.tokenLifetimeSeconds ?? 28_800);
  }

  /** The fake's first device: the seeded one, or (credentials 'none') the one the unit paired as. */
  get device(): SeededDevice {
    const d = this.cloud.devices[0];
    if (d === undefined) throw new Error('the fake holds no device (credentials: none, not paired yet)');
    return d;
  }

  get secretFile(): string {
    return join(this.root, 'client-secret');
  }

  /** Virtual ms since the rig started: the fake cloud's time, its journal's `t`. */
  now(): number {
    return this.vc.now();
  }

  /** credentials.json as `pair` writes it: the pair, obtained now (the unit's wall clock), lasting `lifetimeS`. */
  writeCredentials(pair: { accessToken: string; refreshToken: string }, lifetimeS: number): void {
    const now = WALL_START + this.vc.now() + this.machine.wallErrorMs;
    const file = join(this.stateDir, 'credentials.json');
    const body = {
      access_token: pair.accessToken,
      refresh_token: pair.refreshToken,
      token_type: 'bearer',
      expires_in: lifetimeS,
      obtained_at: new Date(now).toISOString(),
      expires_at: new Date(now + lifetimeS * 1000).toISOString(),
      clock: 'local',
    };
    writeFileSync(file, `${JSON.stringify(body, null, 2)}\n`, { mode: 0o600 });
  }

  /**
   * The person pairs the unit again (device code, approve, one poll), over inject: the fake revokes
   * the device's old tokens and issues a fresh pair. Write it with writeCredentials() as `pair` would.
   */
  async repair(): Promise<{ accessToken: string; refreshToken: string }> {
    const form = async (path: string, rest: Record<string, string>): Promise<{ status: number; json: Record<string, string> }> => {
      const body = new URLSearchParams({ client_id: this.device.clientId, client_secret: this.cloud.clientSecret, ...rest }).toString();
      const res = await this.cloud.inject({ method: 'POST', path, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(Buffer.byteLength(body)), 'x-client-version': '1.0.0' }, body });
      return { status: res.status, json: JSON.parse(res.body.toString('utf8')) as Record<string, string> };
    };
    const asked = await form('/v2/auth/device/code', { scope: 'asset_create offline' });
    const code = asked.json;
    if (asked.status !== 200 || code.user_code === undefined) throw new Error(`no code to approve: HTTP ${asked.status} ${JSON.stringify(code)}`);
    if (!this.cloud.control.approve(code.user_code)) throw new Error('the fake did not know the user code it just issued');
    const res = await form('/v2/auth/token', { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: code.device_code! });
    if (res.status !== 200 || !res.json.access_token || !res.json.refresh_token) throw new Error(`re-pairing failed: HTTP ${res.status}`);
    return { accessToken: res.json.access_token, refreshToken: res.json.refresh_token };
  }

  /** The environment `run` would be given (C2C_* only: nothing of the test process's own leaks in). */
  private env(extra: Record<string, string>): NodeJS.ProcessEnv {
    return {
      // A camera names its firmware (below 1.0.0: the generic profile); firmware: undefined leaves it unset.
      ...(this.firmware !== undefined && { C2C_FIRMWARE_VERSION: this.firmware }),
      C2C_CONFIG: join(this.root, 'config.json'),
      C2C_HOST_ROOT: this.host,
      ...(this.credentials === 'env' ? { C2C_TOKEN: this.device.accessToken } : this.credentials === 'none' ? { C2C_CLIENT_SECRET_FILE: this.secretFile } : { C2C_CLIENT_ID: this.device.clientId, C2C_CLIENT_SECRET_FILE: this.secretFile }),
      ...extra,
    };
  }

  /**
   * Starts the daemon as `run --api-url … --state-dir … --runtime-dir …` with
   * these C2C_* variables would: settings loaded by the agent's loader,
   * the profile it selects, buildDaemon(), start(). One at a time.
   */
  start(env: Record<string, string> = {}): Daemon {
    if (this.current !== undefined) throw new Error('a daemon is running: stop() or kill() it first');
    const gen = this.gen++;
    const settings = loadSettings({ apiUrl: API_URL, stateDir: this.stateDir, runtimeDir: this.runtimeDir }, this.env(env));
    const profile = selectProfile(loadProfiles(settings.profilesDir, settings.sources.profilesDir), settings.firmwareVersion, settings.sources.firmwareVersion ?? 'default');
    const clock = new DeviceClock(this.vc, this.machine, WALL_START);
    const logger = createLogger(settings.logLevel, {
      write: (line: string) => void this.lines.push({ ...(JSON.parse(line) as { msg: string; level: number }), at: this.vc.now(), gen }),
    });
    // The real notifier's queue and collapsing, with systemd-notify replaced by a list.
    const notifier = createSystemdNotifier({ NOTIFY_SOCKET: join(this.root, 'notify.sock') }, async (args) => {
      // systemd-notify's arguments as the variables it sends: --ready is READY=1, --status=X is STATUS=X.
      const vars = args.map((a) => (a === '--ready' ? 'READY=1' : a.startsWith('--status=') ? `STATUS=${a.slice(9)}` : a));
      if (clock.alive) for (const text of vars) this.notes.push({ at: this.vc.now(), gen, text });
    });
    const daemon = buildDaemon({
      settings,
      agentVersion: agentVersion(),
      profile,
      clock,
      random: seeded(derive(this.seed, gen)),
      logger,
      notifier,
      bootId: `rig-boot-${this.seed}`,
      pid: 100_000 + gen,
      wire: fleetWire(this.tapped, clock, () => this.vc.now() < this.networkDownUntil, this.stats),
    });
    this.current = { gen, pid: 100_000 + gen, daemon, clock, settings };
    daemon.start();
    return daemon;
  }

  /**
   * Runs `then` once, the moment a request `match` takes has reached the fake
   * (journaled, its answer not yet on its way back): kill() there, and the
   * daemon never hears the answer.
   */
  onRequest(match: (r: InjectRequest) => boolean, then: () => void): void {
    this.taps.push({ match, then });
  }

  get daemon(): Daemon | undefined {
    return this.current?.daemon;
  }

  /** The running daemon's pid as it writes it in status.json (each start its own), or undefined. */
  daemonPid(): number | undefined {
    return this.current?.pid;
  }

  /**
   * kill -9: from now on the daemon's timers never fire and its wire neither
   * sends nor hears (a request in flight reaches the fake, its answer is
   * lost). Nothing is flushed. Its local API socket is closed, as the kernel
   * closes a dead process's sockets (the socket file is removed too, which a
   * kill would leave for the next daemon to remove).
   */
  kill(): void {
    const r = this.current;
    if (r === undefined) return;
    this.current = undefined;
    r.clock.kill();
    Rig.closeApiSocket(r.daemon);
  }

  /**
   * The local API's socket as the kernel ends it with its process: the listening socket closed at
   * once (node removes its file then, synchronously) and every connection reset. Not the unit's
   * stop(): that removes the file when its close completes, which can be after the next daemon
   * listened at the same path, and so removed the new daemon's socket.
   */
  private static closeApiSocket(daemon: Daemon): void {
    const unit = daemon.units.find((u) => u.name === 'local-api');
    const api = (unit as unknown as { server?: { server?: Server; conns?: Map<Socket, unknown> } } | undefined)?.server;
    if (api?.server === undefined) {
      void unit?.stop();
      return;
    }
    api.server.close();
    for (const s of api.conns?.keys() ?? []) s.destroy();
  }

  /** SIGTERM: the daemon stops (units in reverse, the record flushed), the clock moving as it waits. */
  async stop(limitMs = 10 * SECOND): Promise<void> {
    const r = this.current;
    if (r === undefined) return;
    this.current = undefined;
    let done = false;
    let failed: unknown;
    r.daemon.stop().then(
      () => void (done = true),
      (err: unknown) => {
        failed = err;
        done = true;
      },
    );
    await this.vc.advanceUntil('the daemon stopped', () => done, limitMs);
    r.clock.kill();
    if (failed !== undefined) throw failed;
  }

  /** The unit's own network is down for `ms` (its requests fail with EHOSTUNREACH). */
  loseNetwork(ms: number): void {
    this.networkDownUntil = this.vc.now() + ms;
  }

  /** Moves agent time by `ms`, timer by timer, settling after each. */
  async advance(ms: number): Promise<void> {
    await this.vc.advance(ms);
  }

  /** Moves agent time to `t` (virtual ms since the rig started). */
  async runTo(t: number): Promise<void> {
    if (t > this.vc.now()) await this.vc.runUntil(t);
  }

  /**
   * Moves agent time until `done()` holds, timer by timer (VirtualClock.advanceUntil: no real time,
   * no step size; test/support/until.ts is the wait for real I/O); the time it first held. Fails with
   * the daemon's last lines after `limitMs` of agent time.
   */
  async until(what: string, done: () => boolean, limitMs: number): Promise<number> {
    try {
      return await this.vc.advanceUntil(what, done, limitMs);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${this.tail()}`, { cause: err });
    }
  }

  /** Everything that is under way settles, time standing still (after the test changed a file, say). */
  settle(): Promise<void> {
    return settle();
  }

  /** status.json as the daemon last wrote it, or undefined. */
  status(): StatusDocument | undefined {
    const r = readStatus(this.runtimeDir);
    return r.kind === 'ok' ? r.doc : undefined;
  }

  /** The daemon's state as status.json says. */
  state(): string | undefined {
    return this.status()?.state;
  }

  /** The upload kind's items by state, as status.json counts them (`queue` prints the same counts). */
  uploadCounts(): { pending: number; done: number; dead: number; dropped: number; cancelled: number } {
    const by = this.status()?.queue?.byKind.upload;
    return { pending: by?.pending?.items ?? 0, done: by?.done?.items ?? 0, dead: by?.dead?.items ?? 0, dropped: by?.dropped?.items ?? 0, cancelled: by?.cancelled?.items ?? 0 };
  }

  /** Every upload as the local API lists it (GET /v1/uploads): the rows `queue` and a UI show, in queue order. */
  async uploads(): Promise<UploadRow[]> {
    const r = await this.api<{ uploads: UploadRow[] }>('GET', '/v1/uploads');
    if (r.status !== 200) throw new Error(`GET /v1/uploads: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.uploads;
  }

  /** The fake's journal, of the rig's device (and storage requests), optionally one method and path. */
  entries(method?: string, path?: string): JournalEntry[] {
    return this.cloud.journal.filter((e) => (e.deviceId === this.device.id || e.deviceId === undefined) && (method === undefined || e.method === method) && (path === undefined || e.path === path));
  }

  /** The settings `run` is given for uploads from the rig's media dir (a clip holds still for `settleSeconds`). */
  mediaEnv(settleSeconds = 1): Record<string, string> {
    return {
      C2C_MEDIA_DIR: this.media,
      C2C_MEDIA_SETTLE_SECONDS: String(settleSeconds),
      C2C_DELETE_AFTER_UPLOAD: 'false',
      C2C_UPLOAD_ROOTS: join(this.root, 'outside'),
    };
  }

  /**
   * `size` random bytes at `rel` under the media dir, dated `ageMs` before
   * the unit's wall clock (0: written now): a clip older than the settle time
   * is taken at first sight. Written under another name and renamed, as a
   * recorder does.
   */
  writeMedia(rel: string, size: number, ageMs = 0): Buffer {
    const file = join(this.media, rel);
    mkdirSync(dirname(file), { recursive: true });
    const data = randomBytes(size);
    const temp = join(dirname(file), `.${basename(file)}.writing`);
    writeFileSync(temp, data);
    const t = (WALL_START + this.vc.now() + this.machine.wallErrorMs - ageMs) / 1000;
    utimesSync(temp, t, t);
    renameSync(temp, file);
    return data;
  }

  /** One request to the daemon's local API (its unix socket), as the CLI or a UI sends it (answered(): time moves only if its handler waits on it). */
  async api<T = unknown>(method: string, path: string, body?: unknown): Promise<ApiReply<T>> {
    return this.answered(`${method} ${path}`, apiRequest<T>(apiSocketOf(this.runtimeDir), method, path, body));
  }

  /**
   * `exchange` (a request over a real socket, say) once it is over. Time stands still while the
   * answer can come without it; when everything has settled and a few turns of the event loop
   * brought no answer, the handler waits on the daemon's clock (a group commit before a batch is
   * acknowledged): the clock moves to its next timer, and so on, for `limitMs` of agent time at most.
   */
  async answered<T>(what: string, exchange: Promise<T>, limitMs = 5 * MINUTE): Promise<T> {
    let done = false;
    const watched = exchange.finally(() => void (done = true));
    watched.catch(() => undefined);
    const end = this.vc.now() + limitMs;
    for (;;) {
      await settle();
      for (let turn = 0; turn < 50 && !done; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
      if (done) break;
      const next = this.vc.nextAt();
      if (next === undefined || next > end) throw new Error(`${what}: no answer within ${limitMs} agent ms\n${this.tail()}`);
      await this.vc.runUntil(next);
    }
    const out = await watched;
    await settle();
    return out;
  }

  /** Makes `rel` exist under the host root (a device plugged in). */
  plug(rel: string): void {
    const file = join(this.host, rel);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, '');
  }

  unplug(rel: string): void {
    rmSync(join(this.host, rel), { force: true });
  }

  /** The last daemon lines, for failure messages. */
  tail(n = 30): string {
    return `agent time ${this.vc.now()} ms; last lines:\n${this.lines
      .slice(-n)
      .map((l) => `${l.at} [${l.gen}] ${l.level} ${l.msg}`)
      .join('\n')}`;
  }

  /** Stops the daemon (or forgets a killed one), closes the fake and removes the dirs. */
  async close(): Promise<void> {
    try {
      await this.stop().catch(() => this.kill());
    } finally {
      await this.cloud.close();
      rmSync(this.root, { recursive: true, force: true });
    }
  }
}
