// Issue 29, the daemon's side, on the built bundle against the fake cloud
// (scale 60): what the person running the camera is told.
//
// - `status` (human and --json), STATUS= and the log never hide a camera
//   that will not upload: no media dir; auto-upload off with the clips that
//   wait; storage refusing every part (the fake's fault hooks), with the
//   last reason and since when, "waiting", never "uploading"; an `upload`
//   line on /v1/events that goes back from uploading to queued says why.
// - A cancelled upload is counted as cancelled, never as dead-lettered.
// - One daemon per state dir: a second `run` with the same state dir and
//   another runtime dir exits 75 naming the first's pid, and the first's
//   upload URL files are untouched.
// - `upload`: the same path rules and exit codes with and without a daemon
//   (a path outside the media dir and the upload roots is 78, not 77 with a
//   daemon nor queued without one).
// - `unpair` through the daemon: `status` shows no device at once.
import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiEvents } from '../../agent/localapi/client.js';
import { readStatus } from '../../agent/daemon/runtime/status-file.js';
import { listenNotify, type NotifyListener } from '../daemon/notify-socket.js';
import { BUNDLE, cleanEnv, waitFor } from './agent-process.js';
import { cli, FIRMWARE, startChannelAgent, type Rig } from './channels-harness.js';
import { entriesOf, HEARTBEAT_PATH, type RefreshingAgent } from './refresh-harness.js';
import { agentWarnings, assetsNamed, describeAssets, startUploadAgent, storedProblems, typeOf, useUploadRigs, writeMedia, type UploadRig } from './uploads-harness.js';

const SCALE = 60;
const HOUR = 3600_000;
const { rigUp, online } = useUploadRigs(SCALE);

/** A command without --json, as a person runs it: exit code and the lines on stdout and stderr. */
function plain(rig: Rig, args: string[], env: Record<string, string> = {}): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  return new Promise((res, reject) => {
    const child = spawn(process.execPath, [BUNDLE, ...args], {
      env: cleanEnv({
        C2C_API_URL: rig.cloud.url,
        C2C_STATE_DIR: rig.dirs.stateDir,
        C2C_RUNTIME_DIR: rig.dirs.runtimeDir,
        C2C_TIME_SCALE: String(rig.scale),
        C2C_HOST_ROOT: rig.host,
        C2C_FIRMWARE_VERSION: FIRMWARE,
        C2C_CLIENT_ID: rig.device.clientId,
        C2C_CONFIG: join(rig.dirs.root, 'config.json'),
        ...env,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => res({ exitCode: code ?? -1, stdout, stderr }));
  });
}

/** The daemon's warnings about what keeps uploads from going, by block kind. */
const blockWarnings = (agent: RefreshingAgent, kind: string): unknown[] => agent.lines().filter((l) => l.level === 40 && l.block === kind);

/** Waits until the daemon sent `n` more heartbeats (the service's journal): time passed in the daemon's own terms, no fixed sleep. */
async function heartbeats(rig: Rig, n: number): Promise<void> {
  const before = entriesOf(rig.cloud, rig.device.id, 'POST', HEARTBEAT_PATH).length;
  await waitFor(`${n} more heartbeats`, () => entriesOf(rig.cloud, rig.device.id, 'POST', HEARTBEAT_PATH).length >= before + n, 30_000, 50);
}

/** The uploads section's blocks in `status --json`. */
async function blocked(rig: Rig): Promise<Array<Record<string, unknown>>> {
  const u = (await cli(rig, ['status'])).json.uploads as { blocked?: Array<Record<string, unknown>> } | undefined;
  return u?.blocked ?? [];
}

/** The same blocks in the daemon's status document (status.json), read in this process: what a wait polls. */
function blockedNow(rig: Rig): Array<Record<string, unknown>> {
  const r = readStatus(rig.dirs.runtimeDir);
  return r.kind === 'ok' ? (((r.doc as { uploads?: { blocked?: Array<Record<string, unknown>> } }).uploads?.blocked) ?? []) : [];
}

/**
 * Waits until `holds` is true of the blocks `status --json` prints, and returns them: status.json
 * polled in this process, the command run once it agrees (a `status --json` every 100 ms kept a
 * core busy starting processes for the whole wait), and again every 100 ms should it not yet.
 */
async function blockedWhen<T>(rig: Rig, what: string, holds: (b: Array<Record<string, unknown>>) => T | undefined | false, timeoutMs: number): Promise<T> {
  await waitFor(what, () => holds(blockedNow(rig)), timeoutMs, 10);
  return waitFor(`${what} (status --json)`, async () => holds(await blocked(rig)), timeoutMs, 100);
}

const STATUS_LINES = (l: NotifyListener): string[] => l.messages.flatMap((m) => m.split('\n')).filter((v) => v.startsWith('STATUS='));

async function notifyFor(rig: Rig): Promise<{ sock: string; listener: NotifyListener }> {
  const sock = join(rig.dirs.root, 'notify.sock');
  return { sock, listener: await listenNotify(sock) };
}

describe('a unit without a media dir', () => {
  /** A unit with upload roots in its config file (as on a camera: the daemon and the commands read the same settings) and no media dir. */
  async function rootsRig(): Promise<{ rig: UploadRig; roots: string; elsewhere: string }> {
    const rig = await rigUp();
    const roots = join(rig.dirs.root, 'outside');
    const elsewhere = join(rig.dirs.root, 'elsewhere', 'clip.mp4');
    writeMedia(elsewhere, 1000, HOUR);
    writeMedia(join(roots, 'a.mp4'), 1000, HOUR);
    writeMedia(join(roots, 'b.mp4'), 1000, HOUR);
    writeFileSync(join(rig.dirs.root, 'config.json'), `${JSON.stringify({ uploadRoots: roots })}\n`);
    return { rig, roots, elsewhere };
  }

  it('says so in status, STATUS= and the log (once)', async () => {
    const { rig } = await rootsRig();
    const { sock, listener } = await notifyFor(rig);
    try {
      const agent = startChannelAgent(rig, { NOTIFY_SOCKET: sock });
      await online(rig, agent);
      expect(await blocked(rig)).toEqual([{ kind: 'no-media-dir' }]);
      const human = await plain(rig, ['status']);
      expect(human.stdout).toMatch(/^media dir: +none set: clips are not uploaded by themselves, only files given to c2c-agent upload \(set mediaDir\)$/m);
      await waitFor('STATUS= saying so', () => STATUS_LINES(listener).some((l) => /^STATUS=online; .*; no media dir$/.test(l)), 20_000, 50);
      await heartbeats(rig, 3);
      expect(blockWarnings(agent, 'no-media-dir')).toHaveLength(1);
    } finally {
      listener.close();
    }
  }, 60_000);

  it('`upload` takes the same paths with and without a daemon: 78 outside the media dir and the upload roots, 64 for no file, sizes in binary units', async () => {
    const { rig, roots, elsewhere } = await rootsRig();
    const agent = startChannelAgent(rig);
    await online(rig, agent);
    // With a daemon: outside the roots is 78 with the settings to change; inside, queued.
    const out = await cli(rig, ['upload', elsewhere]);
    expect({ exitCode: out.exitCode, ok: out.json.ok }).toEqual({ exitCode: 78, ok: false });
    expect(out.stderr).toMatch(/outside the media dir and the upload roots/);
    expect(out.stderr).toMatch(/uploadRoots/);
    expect(out.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(await cli(rig, ['upload', join(roots, 'a.mp4')])).toMatchObject({ exitCode: 0, json: { via: 'daemon' } });
    expect((await cli(rig, ['upload', join(roots, 'none.mp4')])).exitCode).toBe(64);

    agent.child.kill('SIGTERM');
    await agent.exited;
    // Without a daemon: the same answers.
    const out2 = await cli(rig, ['upload', elsewhere]);
    expect({ exitCode: out2.exitCode, ok: out2.json.ok }).toEqual({ exitCode: 78, ok: false });
    expect(out2.stderr).toMatch(/outside the media dir and the upload roots/);
    expect(out2.stderr).toMatch(/uploadRoots/);
    expect(await cli(rig, ['upload', join(roots, 'b.mp4')])).toMatchObject({ exitCode: 0, json: { via: 'queue' } });
    expect((await cli(rig, ['upload', join(roots, 'none.mp4')])).exitCode).toBe(64);
    // Sizes in binary units, as everywhere.
    const said = await plain(rig, ['upload', join(roots, 'b.mp4')]);
    expect(said.stdout).toMatch(/\(1000 B, /);
    expect(said.stdout).not.toMatch(/bytes/);
  }, 60_000);
});

describe('auto-upload off', () => {
  it('status says so with the clips that wait for it; logged once', async () => {
    const rig = await rigUp();
    const agent = startUploadAgent(rig);
    await online(rig, agent);
    expect((await cli(rig, ['prefs', 'autoUpload=off'])).exitCode).toBe(0);
    writeMedia(join(rig.media, 'held.mp4'), 2000, HOUR);
    await blockedWhen(rig, 'one clip held back', (bs) => bs.some((b) => b.kind === 'auto-upload-off' && b.waiting === 1), 20_000);
    const human = await plain(rig, ['status']);
    expect(human.stdout).toMatch(/^auto-upload: off: 1 clip found is not queued until it is on \(c2c-agent prefs autoUpload=on\)$/m);
    await heartbeats(rig, 2);
    expect(blockWarnings(agent, 'auto-upload-off')).toHaveLength(1);
    expect(assetsNamed(rig.cloud, 'held.mp4')).toHaveLength(0);
  }, 60_000);
});

describe('storage refusing every part', () => {
  it('status says "waiting" with the reason and since when; STATUS= too; the events line back to queued says why; logged once; over once storage takes it', async () => {
    const rig = await rigUp();
    const { sock, listener } = await notifyFor(rig);
    const ac = new AbortController();
    try {
      const agent = startUploadAgent(rig, { env: { NOTIFY_SOCKET: sock } });
      await online(rig, agent);
      const events: Array<Record<string, unknown>> = [];
      void apiEvents(join(rig.dirs.runtimeDir, 'api.sock'), (e) => events.push(e), { signal: ac.signal }).catch(() => undefined);
      // Every part answered 503, each after a while: the upload is seen in flight, then back in the queue.
      const refuse = rig.cloud.control.addFault({ kind: 'status', status: 503, method: 'PUT', path: '/_storage/*' });
      const slow = rig.cloud.control.addFault({ kind: 'delay', delayMs: 20_000, method: 'PUT', path: '/_storage/*' });
      const data = writeMedia(join(rig.media, 'refused.mp4'), 1_000_000, HOUR);

      const refused = await blockedWhen(rig, 'uploads shown refused', (bs) => bs.find((b) => b.kind === 'refused'), 30_000);
      expect(refused).toMatchObject({ since: { at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), monotonic: expect.any(Number) }, reason: expect.stringMatching(/503/) });
      const human = await plain(rig, ['status']);
      expect(human.stdout).toMatch(/^uploads: +1 file waiting, 977 KiB left$/m);
      expect(human.stdout).not.toMatch(/uploading/);
      expect(human.stdout).toMatch(/^not sent: +refused: \d+ attempts in a row failed since \d{4}-\d\d-\d\dT\S+ \(\d+\S* ago\); last: .*503/m);
      await waitFor('STATUS= saying so', () => STATUS_LINES(listener).some((l) => l.includes('; 1 file waiting, 977 KiB left; refused: ') && l.includes('503')), 30_000, 50);
      const back = await waitFor(
        'an upload line back to queued',
        () => events.find((e, i) => e.type === 'upload' && e.state === 'queued' && events.slice(0, i).some((p) => p.type === 'upload' && p.id === e.id && p.state === 'uploading')),
        30_000,
        50,
      );
      expect(back.reason).toMatch(/503/);
      // Every line that goes back says why.
      const lines = events.filter((e) => e.type === 'upload');
      lines.forEach((e, i) => {
        const prev = lines.slice(0, i).filter((p) => p.id === e.id).at(-1);
        if (prev?.state === 'uploading' && e.state === 'queued') expect(e.reason).toEqual(expect.any(String));
      });
      await blockedWhen(rig, 'more attempts refused', (bs) => (bs.find((b) => b.kind === 'refused')?.attempts as number) >= 4, 30_000);
      expect(blockWarnings(agent, 'refused')).toHaveLength(1);

      refuse.remove();
      slow.remove();
      await waitFor('stored', () => storedProblems(rig.cloud, 'refused.mp4', data, typeOf('refused.mp4')).length === 0, 60_000, 100).catch((err: Error) => {
        throw new Error(`${err.message}\n${describeAssets(rig.cloud)}\n${agentWarnings(agent)}`);
      });
      await blockedWhen(rig, 'nothing blocked', (bs) => bs.length === 0, 20_000);
    } finally {
      ac.abort();
      listener.close();
    }
  }, 120_000);
});

describe('a cancelled upload', () => {
  it('is counted as cancelled by status and queue, never as dead-lettered', async () => {
    const rig = await rigUp();
    const agent = startUploadAgent(rig);
    await online(rig, agent);
    rig.cloud.control.addFault({ kind: 'delay', delayMs: 600_000, method: 'PUT', path: '/_storage/*' });
    writeMedia(join(rig.media, 'cancel-me.mp4'), 1_000_000, HOUR);
    await waitFor('the upload started', () => assetsNamed(rig.cloud, 'cancel-me.mp4').length > 0, 30_000, 50);
    expect((await cli(rig, ['cancel', '--all'])).exitCode).toBe(0);
    await waitFor('one upload cancelled in status.json', () => {
      const r = readStatus(rig.dirs.runtimeDir);
      const by = r.kind === 'ok' ? r.doc.queue?.byKind.upload : undefined;
      return by?.cancelled?.items === 1 && (by.pending?.items ?? 0) === 0;
    }, 20_000, 10);
    const st = await waitFor('the status says cancelled', async () => {
      const s = await plain(rig, ['status']);
      return /^queue: +0 pending, 1 cancelled$/m.test(s.stdout) ? s : undefined;
    }, 20_000, 100);
    expect(st.stdout).not.toMatch(/dead-lettered/);
    const q = await plain(rig, ['queue']);
    expect(q.stdout).toMatch(/^ {2}upload: 0 pending \(0 B\), 0 done, 0 dead-lettered, 1 cancelled, 0 dropped$/m);
    expect(q.stdout).toMatch(/cancelled +cancel-me\.mp4/);
  }, 60_000);
});

describe('one daemon per state dir', () => {
  it('a second run on the same state dir with another runtime dir exits 75 naming the first; the first\'s files are untouched and it goes on', async () => {
    const rig = await rigUp();
    const first = startUploadAgent(rig);
    await online(rig, first);
    // An upload held in flight: its presigned URLs are on flash (queue/uploads/), the files a second daemon's start-up swept.
    const slow = rig.cloud.control.addFault({ kind: 'delay', delayMs: 600_000, method: 'PUT', path: '/_storage/*' });
    const data = writeMedia(join(rig.media, 'held.mp4'), 1_000_000, HOUR);
    const urlDir = join(rig.dirs.stateDir, 'queue', 'uploads');
    // Written whole (its temp renamed), and nothing else being written there: the snapshot below is of files at rest.
    await waitFor('the URL file written', () => existsSync(urlDir) && readdirSync(urlDir).length > 0 && readdirSync(urlDir).every((n) => !n.startsWith('.')), 30_000, 50);
    const urlFiles = (): Record<string, string> => Object.fromEntries(readdirSync(urlDir).map((n) => [n, readFileSync(join(urlDir, n), 'utf8')]));
    const before = urlFiles();

    const otherRuntime = join(rig.dirs.root, 'run-2');
    mkdirSync(otherRuntime);
    const second = startUploadAgent({ ...rig, dirs: { ...rig.dirs, runtimeDir: otherRuntime } } as UploadRig);
    expect(await second.exited).toEqual({ code: 75, signal: null });
    expect(second.output().trimEnd().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`another c2c-agent run is active \\(pid ${first.pid}, runtime dir ${rig.dirs.runtimeDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\) on the state dir `)),
    ]);
    expect(urlFiles()).toEqual(before);
    // It never served an API or wrote a status in its own runtime dir.
    expect(readdirSync(otherRuntime).filter((n) => n !== 'run.lock')).toEqual([]);
    expect(first.child.exitCode).toBeNull();

    // `upload` without a daemon on that runtime dir may not write the first one's queue either.
    writeMedia(join(rig.dirs.root, 'outside', 'late.mp4'), 1000, HOUR);
    const up = await plain(rig, ['upload', join(rig.dirs.root, 'outside', 'late.mp4')], { C2C_RUNTIME_DIR: otherRuntime, C2C_UPLOAD_ROOTS: join(rig.dirs.root, 'outside'), C2C_MEDIA_DIR: rig.media });
    expect(up.exitCode).toBe(69);
    expect(up.stderr).toMatch(new RegExp(`a daemon \\(pid ${first.pid}\\) runs on the state dir`));

    slow.remove();
    await waitFor('the first stores its clip', () => storedProblems(rig.cloud, 'held.mp4', data, typeOf('held.mp4')).length === 0, 60_000, 100).catch((err: Error) => {
      throw new Error(`${err.message}\n${describeAssets(rig.cloud)}\n${agentWarnings(first)}`);
    });
  }, 120_000);
});

describe('unpair through the daemon', () => {
  it('status shows no device at once', async () => {
    const rig = await rigUp();
    const agent = startChannelAgent(rig);
    await online(rig, agent);
    expect((await cli(rig, ['status'])).json.device).toMatchObject({ id: rig.device.id, status: 'online' });
    expect((await cli(rig, ['unpair'])).exitCode).toBe(0);
    const st = await cli(rig, ['status']);
    expect({ exitCode: st.exitCode, running: st.json.running, state: st.json.state, device: st.json.device }).toEqual({ exitCode: 77, running: true, state: 'needs-pairing', device: null });
    // `status --json` prints the local API's status document: the keys the contract names (docs/local-api.md), the network section's too.
    for (const key of ['state', 'device', 'uploads', 'channels', 'queue', 'network']) expect({ key, has: key in st.json }).toEqual({ key, has: true });
    for (const key of ['interface', 'type', 'serviceRttMs', 'uploadBytesPerSecond', 'lastContactAt']) expect({ key, has: key in (st.json.network as object) }).toEqual({ key, has: true });
    expect((await plain(rig, ['status'])).stdout).not.toMatch(/^device:/m);
  }, 60_000);
});
