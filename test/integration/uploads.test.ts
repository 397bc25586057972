// Media uploads end to end: the built bundle as a real daemon with a media
// dir, against the fake cloud at scale 60 with 256 KiB parts. Files of every
// size and type (and one in a channel's sub-folder) arrive once, complete,
// byte-identical part by part, with the right filetype; writers' scratch
// names never go; storage never sees an Authorization header; a restart
// sends nothing again; `upload FILE` works with and without a daemon;
// --delete-after-upload removes a file only once it is complete. A process
// because what is judged is the bundle's: its storage client on real sockets,
// `upload` as a command, a restart. When a clip is taken (the settle time,
// a clip still growing) is judged in agent time: test/e2e/uploads.test.ts.
import { describe, expect, it } from '@jest/globals';
import { existsSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { readStatus } from '../../agent/daemon/runtime/status-file.js';
import { status, waitFor } from './agent-process.js';
import { cli, plug } from './channels-harness.js';
import { agentTimeMark } from './agent-time.js';
import { type RefreshingAgent } from './refresh-harness.js';
import { agentWarnings, assetCreates, assetsNamed, completeNamed, describeAssets, recordedChannel, startUploadAgent, storagePuts, storedProblems, typeOf, uploadQueue, waitForUploads, writeMedia, type UploadRig, useUploadRigs } from './uploads-harness.js';

const SCALE = 60;
const HOUR = 3600_000;
const { rigUp, online } = useUploadRigs(SCALE);

async function stop(agent: RefreshingAgent): Promise<void> {
  agent.child.kill('SIGTERM');
  await agent.exited;
}

/** Waits until every file is stored exactly once and byte-identical; the failure lists what the fake holds and the agent's warnings. */
async function allStored(rig: UploadRig, agent: RefreshingAgent, files: Map<string, Buffer>, timeoutMs = 30_000): Promise<void> {
  let problems: string[] = [];
  await waitFor('every file stored', () => {
    problems = [...files].flatMap(([name, data]) => storedProblems(rig.cloud, name, data, typeOf(name)));
    return problems.length === 0;
  }, timeoutMs, 50).catch((err: Error) => {
    throw new Error(`${err.message}\n${problems.join('\n')}\nassets:\n${describeAssets(rig.cloud)}\nwarnings:\n${agentWarnings(agent)}`);
  });
}

describe('media uploads', () => {
  it('uploads every file of the media dir once, byte-identical, with its type and channel; never scratch names; nothing again after a restart', async () => {
    const rig = await rigUp();
    plug(rig, 'video');
    let agent = startUploadAgent(rig);
    await online(rig, agent);
    const videoChannel = await waitFor('the video channel recorded', () => recordedChannel(rig, 'video'), 15_000);

    const files = new Map<string, Buffer>();
    const add = (rel: string, size: number, old?: number): void => void files.set(rel.split('/').pop()!, writeMedia(join(rig.media, rel), size, old));
    add('empty.mov', 0, HOUR);
    add('note.txt', 5);
    add('photo.jpg', 300_000, HOUR);
    add('clip.mp4', 3 * 1024 * 1024 + 123); // 13 parts
    add('sound.wav', 700_000);
    add('raw.r3d', 1000, HOUR);
    add('README', 10);
    add('video/take1.mxf', 600_000);
    const scratch = ['.hidden.mp4', 'clip2.mp4.part', 'render.tmp', 'video/.x', 'video/y.part', 'video/z.TMP', 'other/inside.mp4'];
    for (const s of scratch) writeMedia(join(rig.media, s), 2000, HOUR);
    // Written under a scratch name, then renamed into place: taken once, as the final name.
    const scratchAt = agentTimeMark(rig.cloud);
    files.set('late.mp4', writeMedia(join(rig.media, 'late.mp4.part'), 400_000));
    // Two heartbeats later (a minute and more of the daemon's looks at its media dir) the scratch name has been seen.
    await scratchAt.passed('late.mp4.part written');
    renameSync(join(rig.media, 'late.mp4.part'), join(rig.media, 'late.mp4'));

    await allStored(rig, agent, files);
    const names = rig.cloud.assets().map((a) => a.name);
    expect(names.sort()).toEqual([...files.keys()].sort());
    expect(assetCreates(rig.cloud)).toHaveLength(files.size);
    expect(completeNamed(rig.cloud, 'take1.mxf')[0]!.channel).toBe(videoChannel);
    // offset: how many (real) seconds ago the media was made.
    expect(completeNamed(rig.cloud, 'photo.jpg')[0]!.offset).toBeGreaterThanOrEqual(3599);
    expect(completeNamed(rig.cloud, 'photo.jpg')[0]!.offset).toBeLessThan(3700);
    for (const a of rig.cloud.assets()) if (a.name !== 'take1.mxf') expect({ name: a.name, channel: a.channel }).toEqual({ name: a.name, channel: null });
    const puts = storagePuts(rig.cloud);
    expect(puts.length).toBeGreaterThanOrEqual(1 + 1 + 2 + 13 + 3 + 1 + 1 + 3 + 2);
    expect(puts.filter((e) => e.authorization !== false)).toEqual([]);
    expect(puts.filter((e) => e.method !== 'PUT' || !e.authValid || e.status !== 200)).toEqual([]);

    // The queue and the status file say so.
    await waitForUploads(rig, 'no upload pending', (c) => c.pending === 0, 10_000);
    const q = await uploadQueue(rig);
    // With the items that are not done (their reasons and errors), should one be: a count alone said nothing in a CI run.
    expect({ ...q.counts, notDone: q.items.filter((i) => i.state !== 'done') }).toMatchObject({ pending: 0, dead: 0, dropped: 0, notDone: [] });
    expect(q.counts.done).toBe(files.size);
    // Each file by name, every byte of it done.
    expect(q.items.map((i) => i.upload as { name: string }).sort((a, b) => a.name.localeCompare(b.name))).toEqual(
      [...files].sort(([a], [b]) => a.localeCompare(b)).map(([name, data]) => ({ name, path: expect.stringContaining(name), bytesDone: data.length, bytesTotal: data.length, state: 'done' })),
    );
    // status.json is rewritten at most once a real second: read in this process until it says so, then
    // `status --json` (a command every 100 ms within 5 real s failed a loaded three-worker run).
    await waitFor('status.json shows no upload left', () => {
      const r = readStatus(rig.dirs.runtimeDir);
      return r.kind === 'ok' && (r.doc as { uploads?: { files?: number } }).uploads?.files === 0;
    }, 30_000, 10);
    const st = await waitFor('status shows no upload left', async () => {
      const s = await status(rig.dirs, rig.cloud.url, SCALE);
      return (s.json.uploads as { files?: number } | undefined)?.files === 0 ? s : undefined;
    }, 30_000, 100);
    // other/ is no channel's folder: not uploaded, and said so, the clip in it by its own name.
    expect(st.json.uploads).toEqual({
      files: 0,
      bytesLeft: 0,
      bytesPerSecond: expect.any(Number),
      skipped: { entries: [{ name: 'other', reason: expect.stringMatching(/not a channel's/) }, { name: 'other/inside.mp4', reason: expect.stringMatching(/^in 'other', a folder that is not a channel's/) }], more: 0 },
    });

    // A restart sends nothing again: no asset, no PUT, in 3 agent minutes of rescans.
    await stop(agent);
    const [creates, putCount] = [assetCreates(rig.cloud).length, storagePuts(rig.cloud).length];
    agent = startUploadAgent(rig);
    const restartedAt = agentTimeMark(rig.cloud);
    await online(rig, agent);
    // Four heartbeats after the start: three agent minutes and more of rescans, however slow the machine.
    await restartedAt.passed('the restart', 4);
    expect({ creates: assetCreates(rig.cloud).length, puts: storagePuts(rig.cloud).length }).toEqual({ creates, puts: putCount });
    expect((await uploadQueue(rig)).counts).toMatchObject({ pending: 0, dead: 0 });
  }, 90_000);

  it('upload FILE: handed to a running daemon; without one, queued and sent by the next run', async () => {
    const rig = await rigUp();
    const outside = join(rig.dirs.root, 'outside');
    const a = writeMedia(join(outside, 'handed.mp4'), 700_000);
    const b = writeMedia(join(outside, 'queued.jpg'), 400_000);
    let agent = startUploadAgent(rig);
    await online(rig, agent);

    const handed = await cli(rig, ['upload', join(outside, 'handed.mp4')]);
    expect(handed).toMatchObject({ exitCode: 0, json: { ok: true, via: 'daemon' } });
    await allStored(rig, agent, new Map([['handed.mp4', a]]));
    // Stopped once its end is on flash (an end that races the stop is dropped and the next run ends it from the index).
    await waitForUploads(rig, 'the hand-over done', (c) => c.pending === 0, 10_000);
    await stop(agent);
    const queued = await cli(rig, ['upload', join(outside, 'queued.jpg')]);
    expect(queued).toMatchObject({ exitCode: 0, json: { ok: true, via: 'queue' } });
    expect((await uploadQueue(rig)).counts.pending).toBe(1);
    // No daemon runs: the command queued it and sent nothing itself.
    expect(assetsNamed(rig.cloud, 'queued.jpg')).toEqual([]);
    agent = startUploadAgent(rig);
    await allStored(rig, agent, new Map([['queued.jpg', b]]));
    await waitForUploads(rig, 'the queue empty', (c) => c.pending === 0, 10_000);
    expect(assetCreates(rig.cloud)).toHaveLength(2);
    expect(existsSync(join(outside, 'queued.jpg'))).toBe(true);
  }, 60_000);

  it('--delete-after-upload true removes a file once its upload is complete, never before', async () => {
    const rig = await rigUp();
    const fault = rig.cloud.control.addFault({ kind: 'status', status: 500, path: '/_storage/*' });
    const agent = startUploadAgent(rig, { deleteAfterUpload: true });
    await online(rig, agent);
    const file = join(rig.media, 'gone.mp4');
    const data = writeMedia(file, 600_000, HOUR);
    // Storage fails for a while: the file stays.
    await waitFor('three refused PUTs', () => storagePuts(rig.cloud).filter((e) => e.status === 500).length >= 3, 20_000, 20);
    expect(existsSync(file)).toBe(true);
    expect(completeNamed(rig.cloud, 'gone.mp4')).toEqual([]);
    fault.remove();
    // Whenever the file is seen gone, the asset must already be complete.
    let goneEarly = false;
    await waitFor('the file removed', () => {
      const gone = !existsSync(file);
      if (gone && completeNamed(rig.cloud, 'gone.mp4').length === 0) goneEarly = true;
      return gone;
    }, 30_000, 5);
    expect(goneEarly).toBe(false);
    expect(storedProblems(rig.cloud, 'gone.mp4', data, 'video/mp4')).toEqual([]);
  }, 60_000);
});
