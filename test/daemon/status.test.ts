import { EventBus } from '../../agent/core/event-bus.js';
import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { FakeClock } from '../support/fake-clock.js';
import { createLogger } from '../../agent/lib/logger.js';
import { Controller } from '../../agent/daemon/controller.js';
import { boundsOf } from '../../agent/daemon/heartbeat/policy.js';
import { createStatusSink, statusFile } from '../../agent/daemon/runtime/status-file.js';
import { attemptToStartFrom, createAttemptStore, readLastAttempt } from '../../agent/daemon/runtime/attempt-record.js';
import { procStartOf } from '../../agent/daemon/runtime/proc.js';
import { earliestNext, lastEndOf } from '../../agent/daemon/heartbeat/policy.js';
import { MIN_SPACING_MS, SPACING_MARGIN_MS } from '../../agent/lib/timing.js';
import { DAEMON_STATES, type DaemonSnapshot, type DaemonState } from '../../agent/core/state.js';
import { run as statusCommand } from '../../agent/cli/status.js';
import { statusDocument } from '../../agent/core/status-document.js';
import type { CommandContext } from '../../agent/cli/command.js';
import { FakeApi, seeded } from './fake-api.js';
import { DEFAULT_TEST_BOUNDS } from '../support/bounds.js';

let dir: string;
let out: string[];
let err: string[];

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'c2c-status-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => {
  jest.restoreAllMocks();
});

async function status(json: boolean, runtimeDir = dir): Promise<{ code: number; out: string; err: string; obj?: Record<string, unknown> }> {
  out = [];
  err = [];
  jest.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => (out.push(String(s)), true));
  jest.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => (err.push(String(s)), true));
  const ctx: CommandContext = { name: 'status', values: { json }, positionals: [], settingsOptions: { runtimeDir }, json, env: {} };
  const code = await statusCommand(ctx);
  jest.restoreAllMocks();
  const text = out.join('');
  return { code, out: text, err: err.join(''), ...(json && { obj: JSON.parse(text) as Record<string, unknown> }) };
}

/** A status file as the daemon writes it, via a real Controller and sink. */
async function writeLive(state: DaemonState, pid = process.pid): Promise<DaemonSnapshot> {
  const clock = new FakeClock();
  const api = new FakeApi(clock);
  const sink = createStatusSink(dir);
  let last: DaemonSnapshot | undefined;
  const bus = new EventBus();
  bus.on('stateChanged', bus, ({ snapshot: snap }) => {
    last = { ...snap, state, pid, ...(procStartOf(pid) !== undefined && { procStart: procStartOf(pid) as string }) };
    sink.write(statusDocument(last, {}));
  });
  const controller = new Controller({
    clock,
    random: seeded(1),
    logger: createLogger('silent'),
    api,
    tokens: { reload: () => {}, refresh: async () => 'unavailable' },
    bounds: boundsOf(DEFAULT_TEST_BOUNDS),
    persistAttempt: async () => {},
    bus,
    info: { firmwareVersion: '1.2.3', profile: 'generic', agentVersion: '0.1.0', timeScale: 1, pid },
  });
  controller.start();
  await clock.advance(5_000);
  await sink.flush();
  await controller.stop();
  await sink.flush();
  return last as DaemonSnapshot;
}

describe('c2c-agent status', () => {
  it('no status file: exit 69, daemon not running', async () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'c2c-empty-'));
    const r = await status(true, empty);
    expect(r.code).toBe(69);
    expect(r.obj).toMatchObject({ ok: false, exitCode: 69, running: false });
    expect(r.err).toMatch(/daemon not running \(no status file/);
    expect((await status(false, empty)).code).toBe(69);
    rmSync(empty, { recursive: true });
  });

  it.each(DAEMON_STATES.filter((s) => s !== 'stopped' && s !== 'needs-pairing'))('reflects state %s of a live daemon (exit 0)', async (state) => {
    await writeLive(state);
    const j = await status(true);
    expect(j.code).toBe(0);
    expect(j.obj).toMatchObject({ ok: true, exitCode: 0, running: true, state, pid: process.pid, device: { id: 'dev-1', name: 'cam-07' }, project: { name: 'Testbed' } });
    expect(j.obj?.lastHeartbeat).toMatchObject({ result: 'ok', status: 204 });
    expect(j.out.trim().split('\n')).toHaveLength(1);
    const h = await status(false);
    expect(h.code).toBe(0);
    expect(h.out).toMatch(new RegExp(`^state: +${state}`));
    expect(h.out).toMatch(/device: +cam-07 \(dev-1\) in project Testbed/);
  });

  it('a live daemon in needs-pairing: exit 77, the one piece of advice in the one line on stderr', async () => {
    const { device: _device, project: _project, ...snap } = await writeLive('needs-pairing');
    // The reason as the daemon words it, its own advice at the end; no device known, as in needs-pairing.
    writeFileSync(statusFile(dir), JSON.stringify({ ...snap, reason: 'needs pairing: the service refused the refresh token (invalid_grant); run `c2c-agent pair`' }));
    const j = await status(true);
    expect(j.code).toBe(77);
    expect(j.obj).toMatchObject({ ok: false, exitCode: 77, running: true, state: 'needs-pairing', pid: process.pid, device: null });
    expect(j.out.trim().split('\n')).toHaveLength(1);
    expect(j.err).toBe('c2c-agent: needs pairing: run `c2c-agent pair` (needs pairing: the service refused the refresh token (invalid_grant))\n');
    const h = await status(false);
    expect(h.code).toBe(77);
    expect(h.out).toMatch(/^state: +needs-pairing \(needs pairing: the service refused the refresh token \(invalid_grant\)\), since /m);
    expect(h.err).toBe('c2c-agent: needs pairing: run `c2c-agent pair`\n');
    expect(h.out).not.toMatch(/device:/);
    // Said once across all a person sees, not three times.
    expect((h.out + h.err).split('c2c-agent pair').length - 1).toBe(1);
  });

  it('needs-pairing with C2C_TOKEN set: the advice fits (pairing cannot help while the token in the environment wins)', async () => {
    await writeLive('needs-pairing');
    out = [];
    err = [];
    jest.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => (out.push(String(s)), true));
    jest.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => (err.push(String(s)), true));
    const ctx: CommandContext = { name: 'status', values: { json: false }, positionals: [], settingsOptions: { runtimeDir: dir }, json: false, env: { C2C_TOKEN: 'fca_given_directly' } };
    const code = await statusCommand(ctx);
    jest.restoreAllMocks();
    expect(code).toBe(77);
    expect(err.join('')).toBe('c2c-agent: needs pairing: C2C_TOKEN is set and wins over pairing: give a valid token in C2C_TOKEN, or unset it and run `c2c-agent pair`\n');
    expect(out.join('') + err.join('')).not.toContain('fca_given_directly');
  });

  it('human output: upload progress as `status --json` has it, in binary units; idle, none waiting', async () => {
    const snap = await writeLive('online');
    writeFileSync(statusFile(dir), JSON.stringify({ ...snap, uploads: { files: 3, bytesLeft: Math.round(1.2 * 1024 ** 3), bytesPerSecond: Math.round(4.5 * 1024 ** 2) } }));
    expect((await status(false)).out).toMatch(/^uploads: +uploading 3 files, 1\.2 GiB left, 4\.5 MiB\/s$/m);
    writeFileSync(statusFile(dir), JSON.stringify({ ...snap, uploads: { files: 1, bytesLeft: 800 * 1024 ** 2, bytesPerSecond: 0 } }));
    expect((await status(false)).out).toMatch(/^uploads: +uploading 1 file, 800 MiB left$/m);
    writeFileSync(statusFile(dir), JSON.stringify({ ...snap, uploads: { files: 0, bytesLeft: 0, bytesPerSecond: 0 } }));
    expect((await status(false)).out).toMatch(/^uploads: +none waiting$/m);
  });

  it('human output: each recording uploading in real time, and one left unwritten with when it is finished as it is', async () => {
    const snap = await writeLive('online');
    const recording = [
      { name: 'take.mov', bytesOnDisk: 300 * 1024 ** 2, bytesSent: 256 * 1024 ** 2, idleSeconds: 0, finishedInSeconds: 1800 },
      { name: 'dead.mov', bytesOnDisk: 16 * 1024 ** 2, bytesSent: 8 * 1024 ** 2, idleSeconds: 600, finishedInSeconds: 1200 },
    ];
    writeFileSync(statusFile(dir), JSON.stringify({ ...snap, uploads: { files: 2, bytesLeft: 52 * 1024 ** 2, bytesPerSecond: 0, recording } }));
    const h = (await status(false)).out;
    expect(h).toMatch(/^uploads: +uploading 2 files, 52 MiB left; 2 recording$/m);
    expect(h).toMatch(/^recording: +take\.mov: 256 MiB of 300 MiB on disk sent$/m);
    expect(h).toMatch(/^recording: +dead\.mov: 8\.0 MiB of 16 MiB on disk sent, nothing written for 10m00s \(finished as it is in 20m00s\)$/m);
    expect((await status(true)).obj).toMatchObject({ uploads: { recording } });
  });

  it('human output and the document: a media dir that does not exist is said', async () => {
    const snap = await writeLive('online');
    writeFileSync(statusFile(dir), JSON.stringify({ ...snap, uploads: { files: 0, bytesLeft: 0, bytesPerSecond: 0, mediaDirMissing: '/no/such/dir' } }));
    expect((await status(false)).out).toMatch(/^media dir: +'\/no\/such\/dir' does not exist: nothing is uploaded from it until it does$/m);
    expect((await status(true)).obj).toMatchObject({ uploads: { mediaDirMissing: '/no/such/dir' } });
  });

  it('a status file left by a dead daemon: exit 69, reported as such with its last state', async () => {
    const child = spawnSync(process.execPath, ['-e', 'process.exit(0)']);
    const deadPid = child.pid as number;
    await writeLive('online', deadPid);
    const r = await status(true);
    expect(r.code).toBe(69);
    expect(r.obj).toMatchObject({ ok: false, running: false, last: { state: 'online', pid: deadPid } });
    expect(r.err).toMatch(new RegExp(`daemon not running \\(pid ${deadPid} gone; last state online at `));
  });

  it('a reused pid (same number, another process) is not mistaken for the daemon', async () => {
    const snap = await writeLive('online');
    writeFileSync(statusFile(dir), JSON.stringify({ ...snap, procStart: '1' }));
    expect((await status(true)).code).toBe(69);
  });

  it('a cleanly stopped daemon: exit 69, "stopped"', async () => {
    const snap = await writeLive('online');
    writeFileSync(statusFile(dir), JSON.stringify({ ...snap, state: 'stopped' }));
    const r = await status(false);
    expect(r.code).toBe(69);
    expect(r.err).toMatch(/daemon not running \(stopped at /);
  });

  it('human output: a service clock behind is "behind" (never a negative "ahead"), one ahead is "ahead"', async () => {
    const snap = await writeLive('online');
    writeFileSync(statusFile(dir), JSON.stringify({ ...snap, clockOffsetMs: -100 }));
    const behind = await status(false);
    expect(behind.out).toMatch(/clock: +service clock 0\.1 s behind this unit/);
    expect(behind.out).not.toMatch(/-0\.1/);
    writeFileSync(statusFile(dir), JSON.stringify({ ...snap, clockOffsetMs: 2500 }));
    expect((await status(false)).out).toMatch(/clock: +service clock 2\.5 s ahead of this unit/);
  });

  it('human output names the pending check for what it is: a device check while starting or offline, a credentials check in needs-pairing', async () => {
    const snap = await writeLive('offline');
    const nextCheck = { at: snap.updated.at, monotonic: snap.updated.monotonic + 60_000 };
    const { nextHeartbeat: _drop, ...rest } = snap;
    writeFileSync(statusFile(dir), JSON.stringify({ ...rest, state: 'offline', nextCheck }));
    expect((await status(false)).out).toMatch(/next: +device check \(GET \/v2\/devices\/me\)/);
    writeFileSync(statusFile(dir), JSON.stringify({ ...rest, state: 'needs-pairing', nextCheck }));
    expect((await status(false)).out).toMatch(/next: +credentials check/);
  });

  it('the units\' sections are shown; one of the wrong shape is left out, never cast, and the rest still shown', async () => {
    const snap = await writeLive('online');
    const queue = { byKind: { upload: { pending: { items: 2, bytes: 20 }, done: { items: 0, bytes: 0 }, dead: { items: 1, bytes: 10 }, dropped: { items: 0, bytes: 0 } } }, oldestPending: null, dropped: {}, quarantined: 0, diskBytes: 30, unwritten: 0, liveBytes: 20, inFlight: [], attempts: {} };
    const channels = { detected: ['audio', 'video'], known: ['audio'], pendingSyncs: 1 };
    writeFileSync(statusFile(dir), JSON.stringify({ ...snap, queue, channels }));
    const h = await status(false);
    expect(h.out).toMatch(/channels: +audio, video detected; 1 known to the service; 1 sync pending/);
    expect(h.out).toMatch(/queue: +2 pending, 1 dead-lettered/);
    // An older agent's file names the queue `outbox`: shown as `queue` all the same.
    writeFileSync(statusFile(dir), JSON.stringify({ ...snap, outbox: queue, channels: { ...channels, detected: 'audio' }, uploads: { files: 'many' } }));
    const j = await status(true);
    expect(j.code).toBe(0);
    expect(j.obj).toMatchObject({ running: true, state: 'online', queue });
    expect(j.obj).not.toHaveProperty('outbox');
    expect(j.obj).not.toHaveProperty('channels');
    expect(j.obj).not.toHaveProperty('uploads');
    const h2 = await status(false);
    expect(h2.out).not.toMatch(/channels:/);
    expect(h2.out).toMatch(/queue: +2 pending/);
  });

  it('the status file is readable non-secret JSON, and the attempt record round-trips', async () => {
    await writeLive('online');
    expect(statSync(statusFile(dir)).mode & 0o777).toBe(0o644);
    expect(JSON.parse(readFileSync(statusFile(dir), 'utf8'))).toMatchObject({ state: 'online', firmwareVersion: '1.2.3', profile: 'generic', timeScale: 1 });
    const store = createAttemptStore(dir, 60);
    await store.save({ startedAt: 6000 });
    await store.save({ startedAt: 6000, endedAt: 9000 });
    expect(readLastAttempt(dir, 60)).toEqual({ kind: 'ok', record: { startedAt: 6000, endedAt: 9000 } });
    // Another time scale: the same boot-origin instant, rescaled.
    expect(readLastAttempt(dir, 1)).toEqual({ kind: 'ok', record: { startedAt: 100, endedAt: 150 } });
    // On disk when save() returns, before its promise is awaited: the heartbeat's request follows it at once,
    // with no loop turn in between for other work. Its runtime dir made again if it went.
    const gone = path.join(dir, 'gone-runtime');
    void createAttemptStore(gone, 60).save({ startedAt: 12_000 });
    expect(readLastAttempt(gone, 60)).toEqual({ kind: 'ok', record: { startedAt: 12_000 } });
  });

  it('an attempt record that exists but cannot be read counts as an attempt just now: the first heartbeat waits a full spacing', async () => {
    const rt = mkdtempSync(path.join(dir, 'rt-'));
    const file = path.join(rt, 'last-heartbeat.json');
    expect(readLastAttempt(rt, 60)).toEqual({ kind: 'missing' });
    expect(attemptToStartFrom(readLastAttempt(rt, 60), 5_000)).toBeUndefined();
    const now = 10_000_000;
    // Root-owned 0600 cannot be staged as root; a directory in its place fails to read for root too.
    mkdirSync(file);
    expect(readLastAttempt(rt, 60)).toEqual({ kind: 'unreadable', error: 'EISDIR' });
    rmdirSync(file);
    for (const text of ['garbage', '{"endedAt": 5}', 'null']) {
      writeFileSync(file, text);
      const read = readLastAttempt(rt, 60);
      expect(read.kind).toBe('unreadable');
      const rec = attemptToStartFrom(read, now);
      expect(earliestNext(lastEndOf(rec, now))).toBe(now + MIN_SPACING_MS + SPACING_MARGIN_MS);
    }
  });
});
