// A hostile tester's findings (issue 18, causes 1, 3 and 8), end to end: the
// built bundle as a real daemon against the fake cloud at scale 60 with
// 256 KiB parts.
//
// 1. A file rewritten in place (same size) or grown while it uploads ends as
//    ONE complete asset holding the final bytes, never a mix of versions or
//    a finished asset of an old one; the log and `queue` name the change.
// 3. `upload` reports success only for what is on flash: a read-only or full
//    state dir is one line and a non-zero exit; the same file named twice,
//    or `upload` run twice, is one item and one asset.
// 8. Media-dir entries the agent does not take (links that loop, dangle or
//    lead out, FIFOs, sockets, devices, folders that are not channels,
//    names that are not UTF-8) are each said once in the log and listed by
//    `queue`; a clip replaced by a FIFO gets no asset.
import { afterEach, describe, expect, it } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { waitFor } from './agent-process.js';
import { agentTimeMark } from './agent-time.js';
import { cli } from './channels-harness.js';
import type { RefreshingAgent } from './refresh-harness.js';
import {
  agentWarnings, assetCreates, assetsNamed, completeNamed, describeAssets, sha256, startUploadAgent, storagePuts, storedProblems, uploadQueue, waitForUploads, writeMedia, type UploadRig, useUploadRigs,
} from './uploads-harness.js';

const SCALE = 60;
const HOUR = 3600_000;
const { rigUp, online } = useUploadRigs(SCALE);

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/**
 * Runs `fn` with a tmpfs of `size` at `dir` (root only: a real EROFS and
 * ENOSPC), unmounted before the rig's dirs are removed. Where it cannot
 * mount, the test fails and says so rather than passing without checking
 * anything (test/uploads/upload-cli.test.ts covers the same with a refusing fs).
 */
async function withTmpfs(dir: string, size: string, fn: () => Promise<void>): Promise<boolean> {
  mkdirSync(dir, { recursive: true });
  const m = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' });
  if (m.status !== 0) throw new Error(`cannot mount a tmpfs at ${dir} for a real EROFS/ENOSPC (run the suite as root): ${m.stderr ?? ''}`);
  try {
    await fn();
  } finally {
    spawnSync('umount', ['-l', dir]);
  }
  return true;
}

async function allStoredOnce(rig: UploadRig, agent: RefreshingAgent, name: string, data: Buffer, timeoutMs = 30_000): Promise<void> {
  let problems: string[] = [];
  await waitFor(`${name} stored`, () => {
    problems = storedProblems(rig.cloud, name, data);
    return problems.length === 0;
  }, timeoutMs, 20).catch((err: Error) => {
    throw new Error(`${err.message}\n${problems.join('\n')}\nassets:\n${describeAssets(rig.cloud)}\nwarnings:\n${agentWarnings(agent)}`);
  });
}

/** The stored object's bytes equal `data` as a whole (the fake keeps a hash per part: compared part by part, so also as a whole). */
const completeHashes = (rig: UploadRig, name: string): string[][] => completeNamed(rig.cloud, name).map((a) => a.parts.map((p) => p.sha256 ?? ''));

const warnLines = (agent: RefreshingAgent): Array<Record<string, unknown>> => agent.lines().filter((l) => typeof l.level === 'number' && l.level >= 40);

describe('cause 1: a file that changes while it uploads', () => {
  /** Slow storage answers, so the file can be changed once the first part landed and before the last. */
  async function firstPartLanded(rig: UploadRig, name: string): Promise<void> {
    await waitFor('the first part landed', () => assetsNamed(rig.cloud, name).some((a) => a.parts.some((p) => p.receivedBytes !== undefined)), 20_000, 2);
  }

  it('rewritten in place with the same size after the first part landed: one complete asset, of the final bytes; the log and queue name the change', async () => {
    const rig = await rigUp();
    rig.cloud.control.addFault({ kind: 'delay', delayMs: 3_000, path: '/_storage/*' });
    const agent = startUploadAgent(rig);
    await online(rig, agent);
    const file = join(rig.media, 'take.mp4');
    const size = 20 * 256 * 1024;
    writeMedia(file, size, HOUR);
    await firstPartLanded(rig, 'take.mp4');
    const fresh = randomBytes(size);
    const fd = openSync(file, 'r+');
    writeSync(fd, fresh, 0, size, 0);
    closeSync(fd);

    await allStoredOnce(rig, agent, 'take.mp4', fresh);
    await waitForUploads(rig, 'nothing pending', (c) => c.pending === 0, 20_000);
    expect(storedProblems(rig.cloud, 'take.mp4', fresh)).toEqual([]);
    expect(readFileSync(file).equals(fresh)).toBe(true);
    expect(completeHashes(rig, 'take.mp4')).toHaveLength(1);
    // The first asset stays unfinished (the service drops it after 24 h); never a second complete one.
    expect(assetsNamed(rig.cloud, 'take.mp4').filter((a) => !a.complete)).toHaveLength(1);
    const said = warnLines(agent).filter((l) => /changed while it uploaded/.test(String(l.msg)));
    expect(said.length).toBeGreaterThanOrEqual(1);
    expect(agent.lines().filter((l) => /upload finished/.test(String(l.msg)))).toHaveLength(1);
    const q = await uploadQueue(rig);
    expect(q.items.filter((i) => i.state === 'dead')).toEqual([expect.objectContaining({ reason: expect.stringMatching(/changed while it uploaded.*take\.mp4/) })]);
    expect(sha256(readFileSync(file))).toBe(sha256(fresh));
  }, 60_000);

  it('grown after the first part landed: one complete asset, of the final bytes', async () => {
    const rig = await rigUp();
    rig.cloud.control.addFault({ kind: 'delay', delayMs: 3_000, path: '/_storage/*' });
    const agent = startUploadAgent(rig);
    await online(rig, agent);
    const file = join(rig.media, 'grow.mov');
    const first = writeMedia(file, 12 * 256 * 1024, HOUR);
    await firstPartLanded(rig, 'grow.mov');
    const more = randomBytes(300_000);
    appendFileSync(file, more);
    const final = Buffer.concat([first, more]);

    await allStoredOnce(rig, agent, 'grow.mov', final);
    await waitForUploads(rig, 'nothing pending', (c) => c.pending === 0, 20_000);
    expect(storedProblems(rig.cloud, 'grow.mov', final)).toEqual([]);
    expect(completeNamed(rig.cloud, 'grow.mov')).toHaveLength(1);
  }, 60_000);
});

describe('cause 3: upload says ok only for what is on flash; one item per file', () => {
  const outsideFile = (rig: UploadRig, name: string, size = 300_000): { path: string; data: Buffer } => {
    const p = join(rig.dirs.root, 'outside', name);
    return { path: p, data: writeMedia(p, size, HOUR) };
  };

  it('a read-only state dir: one line, exit 78, nothing claimed queued; queue --json agrees', async () => {
    const rig = await rigUp();
    const { path } = outsideFile(rig, 'ro.mp4');
    const state = join(rig.dirs.root, 'ro-state');
    await withTmpfs(state, '1m', async () => {
      mkdirSync(join(state, 'queue'));
      execFileSync('mount', ['-o', 'remount,ro', state]);
      const r = await cli({ ...rig, dirs: { ...rig.dirs, stateDir: state } }, ['upload', path]);
      expect(r.exitCode).toBe(78);
      expect(r.json).toMatchObject({ ok: false, exitCode: 78, error: { code: 'EROFS' } });
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/read-only/);
      const q = await cli({ ...rig, dirs: { ...rig.dirs, stateDir: state } }, ['queue']);
      expect(q.json.items).toEqual([]);
    });
  }, 30_000);

  it('a full state dir: one line, exit 75, nothing claimed queued', async () => {
    const rig = await rigUp();
    const { path } = outsideFile(rig, 'full.mp4');
    const state = join(rig.dirs.root, 'full-state');
    await withTmpfs(state, '16k', async () => {
      mkdirSync(join(state, 'queue'));
      // Fill it: the write of the filler itself fails once the file system is full.
      try {
        writeFileSync(join(state, 'filler'), Buffer.alloc(64 * 1024));
      } catch {
        /* full */
      }
      const r = await cli({ ...rig, dirs: { ...rig.dirs, stateDir: state } }, ['upload', path]);
      expect(r.json).toMatchObject({ ok: false, exitCode: 75, error: { code: 'ENOSPC' } });
      expect(r.exitCode).toBe(75);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      const q = await cli({ ...rig, dirs: { ...rig.dirs, stateDir: state } }, ['queue']);
      expect(q.json.items).toEqual([]);
    });
  }, 30_000);

  it('a state dir whose queue/ cannot be made (a file stands there): non-zero, one line', async () => {
    const rig = await rigUp();
    const { path } = outsideFile(rig, 'nodir.mp4');
    const state = join(rig.dirs.root, 'state-file');
    writeFileSync(state, 'not a directory');
    const r = await cli({ ...rig, dirs: { ...rig.dirs, stateDir: state } }, ['upload', path]);
    expect(r.exitCode).toBe(78);
    expect(r.json).toMatchObject({ ok: false });
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  }, 30_000);

  it('without a daemon: upload f f, then upload f again, is one item and one asset', async () => {
    const rig = await rigUp();
    const { path, data } = outsideFile(rig, 'twice.mp4');
    const first = await cli(rig, ['upload', path, path]);
    expect(first).toMatchObject({ exitCode: 0, json: { ok: true, via: 'queue' } });
    const files = first.json.files as Array<Record<string, unknown>>;
    expect(files).toHaveLength(1);
    expect(files[0]).toMatchObject({ path, queued: true, id: expect.any(String) });
    const again = await cli(rig, ['upload', path]);
    expect(again).toMatchObject({ exitCode: 0, json: { ok: true } });
    expect((again.json.files as Array<Record<string, unknown>>)[0]).toMatchObject({ path, queued: false, id: files[0]!.id });
    expect((await uploadQueue(rig)).counts.pending).toBe(1);

    const agent = startUploadAgent(rig);
    await allStoredOnce(rig, agent, 'twice.mp4', data);
    await waitForUploads(rig, 'nothing pending', (c) => c.pending === 0, 20_000);
    expect(assetCreates(rig.cloud)).toHaveLength(1);
  }, 60_000);

  it('with a daemon: upload f f, then upload f again, is one item and one asset', async () => {
    const rig = await rigUp();
    // Storage is slow, so the second request comes while the first upload still runs.
    rig.cloud.control.addFault({ kind: 'delay', delayMs: 3_000, path: '/_storage/*' });
    const { path, data } = outsideFile(rig, 'handed-twice.mp4', 2_000_000);
    const agent = startUploadAgent(rig);
    await online(rig, agent);
    expect(await cli(rig, ['upload', path, path])).toMatchObject({ exitCode: 0, json: { ok: true, via: 'daemon' } });
    await waitFor('the upload started', () => assetsNamed(rig.cloud, 'handed-twice.mp4').length > 0, 20_000, 10);
    expect(await cli(rig, ['upload', path])).toMatchObject({ exitCode: 0, json: { ok: true } });
    await allStoredOnce(rig, agent, 'handed-twice.mp4', data);
    await waitForUploads(rig, 'nothing pending', (c) => c.pending === 0, 20_000);
    expect(assetCreates(rig.cloud)).toHaveLength(1);
    const q = await uploadQueue(rig);
    expect(q.counts.pending + q.counts.done + q.counts.dead).toBe(1);
  }, 60_000);
});

describe('cause 8: media-dir entries the agent does not take are said once and listed', () => {
  it('each hostile entry: one warning with its reason, listed as skipped by queue --json; a good file still goes', async () => {
    const rig = await rigUp();
    const m = rig.media;
    const expected: Array<{ name: string; reason: RegExp }> = [];
    symlinkSync(join(m, 'loop-b.mp4'), join(m, 'loop-a.mp4'));
    symlinkSync(join(m, 'loop-a.mp4'), join(m, 'loop-b.mp4'));
    expected.push({ name: 'loop-a.mp4', reason: /loop/ }, { name: 'loop-b.mp4', reason: /loop/ });
    symlinkSync(join(m, 'nowhere.mp4'), join(m, 'dangling.mp4'));
    expected.push({ name: 'dangling.mp4', reason: /does not exist|nothing/ });
    const outside = join(rig.dirs.root, 'secret.mp4');
    writeMedia(outside, 1000, HOUR);
    symlinkSync(outside, join(m, 'out.mp4'));
    expected.push({ name: 'out.mp4', reason: /outside the media dir/ });
    symlinkSync('/dev/zero', join(m, 'zero.mp4'));
    expected.push({ name: 'zero.mp4', reason: /outside the media dir|device/ });
    execFileSync('mkfifo', [join(m, 'pipe.mp4')]);
    expected.push({ name: 'pipe.mp4', reason: /FIFO/ });
    const server = createServer();
    servers.push(server);
    await new Promise<void>((res) => server.listen(join(m, 'sock.mp4'), res));
    expected.push({ name: 'sock.mp4', reason: /socket/ });
    if (spawnSync('mknod', [join(m, 'dev.mp4'), 'c', '1', '3']).status === 0) expected.push({ name: 'dev.mp4', reason: /character device/ });
    writeMedia(join(m, 'other', 'inside.mp4'), 1000, HOUR);
    expected.push({ name: 'other', reason: /not a channel/ }, { name: 'other/inside.mp4', reason: /^in 'other', a folder that is not a channel's/ });
    const bad = Buffer.concat([Buffer.from(m), Buffer.from('/bad-'), Buffer.from([0xff, 0xfe]), Buffer.from('.mp4')]);
    writeFileSync(bad, 'x');
    expected.push({ name: 'bad-\\xff\\xfe.mp4', reason: /UTF-8/ });
    const good = writeMedia(join(m, 'good.mp4'), 300_000, HOUR);

    const agent = startUploadAgent(rig);
    await online(rig, agent);
    await allStoredOnce(rig, agent, 'good.mp4', good);
    type Skipped = { name: string; reason: string };
    const listed = await waitFor('every entry listed as skipped', async () => {
      const r = await cli(rig, ['queue']);
      const s = (r.json.skipped as { entries?: Skipped[] } | undefined)?.entries ?? [];
      return expected.every((e) => s.some((x) => x.name === e.name)) ? s : undefined;
    }, 20_000, 100);
    for (const e of expected) expect({ name: e.name, reason: listed.find((x) => x.name === e.name)?.reason }).toEqual({ name: e.name, reason: expect.stringMatching(e.reason) });
    // Several rescans (every 5 agent s) later, a minute and more of the daemon's time, each is still said once.
    await agentTimeMark(rig.cloud).passed('every entry listed');
    const skippedLines = warnLines(agent).filter((l) => /will not upload/.test(String(l.msg)));
    for (const e of expected) {
      const mine = skippedLines.filter((l) => String(l.msg).includes(`will not upload '${JSON.stringify(e.name).slice(1, -1)}'`));
      expect({ name: e.name, lines: mine.length }).toEqual({ name: e.name, lines: 1 });
    }
    expect(assetCreates(rig.cloud)).toHaveLength(1);
    const text = spawnSync(process.execPath, [join(process.cwd(), 'dist/c2c-agent.mjs'), 'queue'], {
      env: { PATH: process.env.PATH ?? '', C2C_STATE_DIR: rig.dirs.stateDir, C2C_RUNTIME_DIR: rig.dirs.runtimeDir, C2C_CONFIG: join(rig.dirs.root, 'config.json') },
      encoding: 'utf8',
    });
    expect(text.stdout).toMatch(/skipped in the media dir/);
    expect(text.stdout).toMatch(/pipe\.mp4.*FIFO/);
  }, 60_000);

  it('a clip replaced by a FIFO after it was queued gets no asset and is dead-lettered with the reason', async () => {
    const rig = await rigUp();
    // The create fails until the FIFO is in place, so the item waits in the queue.
    const refuse = rig.cloud.control.addFault({ kind: 'status', status: 503, path: '/v2/devices/assets' });
    const agent = startUploadAgent(rig);
    await online(rig, agent);
    const clip = join(rig.media, 'clip.mp4');
    writeMedia(clip, 300_000, HOUR);
    await waitForUploads(rig, 'the clip queued', (c) => c.pending === 1, 20_000);
    const fifo = join(rig.dirs.root, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const createsBefore = assetCreates(rig.cloud).length;
    renameSync(fifo, clip);
    // An attempt that opened the clip just before the swap may still be on its way to the (refused) create:
    // the fault goes once that one is answered, or the swap is already seen, so the next attempt meets the FIFO.
    await waitFor('an attempt after the swap', async () => assetCreates(rig.cloud).length > createsBefore || (await uploadQueue(rig)).counts.dead === 1, 30_000, 20);
    refuse.remove();
    const q = await waitFor('the clip dead-lettered', async () => {
      const r = await uploadQueue(rig);
      return r.counts.dead === 1 ? r : undefined;
    }, 30_000, 50);
    expect(q.items.find((i) => i.state === 'dead')).toMatchObject({ reason: expect.stringMatching(/FIFO/) });
    expect(assetsNamed(rig.cloud, 'clip.mp4')).toEqual([]);
    expect(storagePuts(rig.cloud)).toEqual([]);
    rmSync(clip);
  }, 60_000);
});
