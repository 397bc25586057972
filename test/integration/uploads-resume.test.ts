// Uploads that are interrupted: a 20-part file cut by SIGKILLs and by an
// outage resumes at the first chunk not recorded (each interruption costs
// at most the two chunks in flight: bytes of PUTs it cut plus PUTs of parts
// stored before it, from the fake's journal), into
// the one asset, byte-identical. A paused device's refusal (409 Channel
// Paused) is final: one create, dead-lettered as paused-refused, while a
// later file uploads once unpaused. A file deleted after it was queued is
// dead-lettered with a reason and holds nothing up.
import { describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { type JournalEntry } from '../fake-cloud/index.js';
import { daemonState, waitFor } from './agent-process.js';
import { journalQuiet, sleepReal, type RefreshingAgent } from './refresh-harness.js';
import { PART, agentWarnings, assetCreates, assetProblems, assetsNamed, bytesReceived, describeAssets, startUploadAgent, storagePuts, storedProblems, typeOf, uploadQueue, waitForUploads, writeMedia, type UploadRig, useUploadRigs } from './uploads-harness.js';

const SCALE = 60;
const HOUR = 3600_000;
const BIG = 20 * PART;
const { rigUp, online } = useUploadRigs(SCALE);

const partsIn = (rig: UploadRig, name: string): number => assetsNamed(rig.cloud, name)[0]?.parts.filter((p) => p.receivedBytes !== undefined).length ?? 0;

async function stored(rig: UploadRig, agent: RefreshingAgent, name: string, data: Buffer, timeoutMs = 30_000): Promise<void> {
  let problems: string[] = [];
  await waitFor(`${name} stored`, () => (problems = storedProblems(rig.cloud, name, data, typeOf(name))).length === 0, timeoutMs, 20).catch((err: Error) => {
    throw new Error(`${err.message}\n${problems.join('\n')}\nassets:\n${describeAssets(rig.cloud)}\nwarnings:\n${agentWarnings(agent)}`);
  });
}

/** One asset for the file, and no more than two chunks' worth of bytes sent twice. */
function expectResumed(rig: UploadRig, name: string, data: Buffer): number {
  const all = assetsNamed(rig.cloud, name);
  expect(all).toHaveLength(1);
  const resent = bytesReceived(rig.cloud, all[0]!.id) - data.length;
  expect(resent).toBeGreaterThanOrEqual(0);
  expect(resent).toBeLessThanOrEqual(2 * PART);
  return resent;
}

describe('interrupted uploads', () => {
  /** A 20-part file, the daemon SIGKILLed once six or more parts are in, a new daemon started at once. */
  async function killMidFile(name: string) {
    const rig = await rigUp();
    const first = startUploadAgent(rig);
    await online(rig, first);
    const data = writeMedia(join(rig.media, name), BIG, HOUR);
    await waitFor('six parts in', () => partsIn(rig, name) >= 6, 20_000, 1);
    first.child.kill('SIGKILL');
    await first.exited;
    const asset = assetsNamed(rig.cloud, name)[0]!;
    const partsAtKill = partsIn(rig, name);
    expect(partsAtKill).toBeLessThan(20);
    return { rig, data, assetId: asset.id, partsAtKill, second: startUploadAgent(rig) };
  }

  // Fails on 639c991 (most runs): UploadWorker.sendChunks (agent/uploads/upload-worker.ts:161-164) does
  // not wait for a chunk's progress record to be flushed (`void this.d.outbox.flush()`) before its lane
  // takes the next chunk, so a kill can find per lane one finished chunk not yet on flash plus one on the
  // wire: up to four chunks re-sent, not the two in flight. Eight kills make a miss unlikely.
  it('resumes a 20-part file after each of eight SIGKILLs at the first chunk not recorded, into the same asset', async () => {
    const rig = await rigUp();
    let agent = startUploadAgent(rig);
    await online(rig, agent);
    const data = writeMedia(join(rig.media, 'long-take.mp4'), BIG, HOUR);
    const keyOf = (e: JournalEntry): string => e.path.split('/').pop()!;
    const marks: number[] = []; // the asset's PUT count at each kill
    let assetId = '';
    for (const at of [2, 4, 6, 8, 10, 12, 14, 16]) {
      await waitFor(`${at} parts in`, () => partsIn(rig, 'long-take.mp4') >= at, 30_000, 1);
      agent.child.kill('SIGKILL');
      await agent.exited;
      await journalQuiet(rig.cloud);
      assetId = assetsNamed(rig.cloud, 'long-take.mp4')[0]!.id;
      marks.push(storagePuts(rig.cloud, assetId).length);
      agent = startUploadAgent(rig);
    }
    let problems: string[] = [];
    await waitFor('the asset complete', () => (problems = assetProblems(rig.cloud.asset(assetId)!, data, 'video/mp4')).length === 0, 30_000, 20).catch((err: Error) => {
      throw new Error(`${err.message}\n${problems.join('\n')}\n${describeAssets(rig.cloud)}\n${agentWarnings(agent)}`);
    });
    await waitForUploads(rig, 'the queue empty', (c) => c.pending === 0, 30_000);
    // What each kill cost: the bytes of PUTs it cut, plus the PUTs after it of parts already stored before it.
    const puts = storagePuts(rig.cloud, assetId);
    const wasted = marks.map((m, k) => {
      const cut = puts.slice(k === 0 ? 0 : marks[k - 1], m).filter((e) => e.status !== 200).reduce((n, e) => n + (e.bodyBytes ?? 0), 0);
      const stored = new Set(puts.slice(0, m).filter((e) => e.status === 200).map(keyOf));
      const again = puts.slice(m, marks[k + 1] ?? puts.length).filter((e) => stored.has(keyOf(e))).reduce((n, e) => n + (e.bodyBytes ?? 0), 0);
      return cut + again;
    });
    const resent = bytesReceived(rig.cloud, assetId) - data.length;
    console.info(`SIGKILL resume: ${marks.length} kills, re-sent per kill ${wasted.map((w) => (w / PART).toFixed(2)).join(', ')} parts; ${resent} bytes in all`);
    expect(assetsNamed(rig.cloud, 'long-take.mp4')).toHaveLength(1);
    expect(wasted.reduce((a, b) => a + b, 0)).toBe(resent);
    // Each kill re-sends at most the two chunks in flight.
    for (const [k, w] of wasted.entries()) expect({ kill: k + 1, resentParts: w / PART, atMostTwo: w <= 2 * PART }).toEqual({ kill: k + 1, resentParts: w / PART, atMostTwo: true });
    expect((await uploadQueue(rig)).counts).toMatchObject({ pending: 0, dead: 0 });
  }, 90_000);

  // Guards the fix of a0c57fa: the watcher's first scan after a restart (every clip is older than the
  // settle time by then) used to run before the outbox's replay, miss the item already pending for the
  // file and queue a second one, which created a second asset and sent the whole file again.
  it('a restart does not queue again a file whose upload was pending (one asset only)', async () => {
    const { rig, data } = await killMidFile('dup-take.mp4');
    await waitForUploads(rig, 'the queue empty', (c) => c.pending === 0, 30_000);
    expect(assetsNamed(rig.cloud, 'dup-take.mp4').map((a) => a.complete)).toEqual([true]);
    expect(storedProblems(rig.cloud, 'dup-take.mp4', data, 'video/mp4')).toEqual([]);
  }, 60_000);

  it('resumes a 20-part file after an outage mid-file (connections refused, then accepted)', async () => {
    const rig = await rigUp();
    const agent = startUploadAgent(rig);
    await online(rig, agent);
    const data = writeMedia(join(rig.media, 'outage-take.mov'), BIG, HOUR);
    await waitFor('six parts in', () => partsIn(rig, 'outage-take.mov') >= 6, 20_000, 1);
    rig.cloud.control.refuseConnections();
    const partsAtCut = partsIn(rig, 'outage-take.mov');
    await sleepReal(1500); // 90 agent s without the service
    expect(partsIn(rig, 'outage-take.mov')).toBe(partsAtCut);
    await rig.cloud.control.acceptConnections();
    await stored(rig, agent, 'outage-take.mov', data, 45_000);
    const resent = expectResumed(rig, 'outage-take.mov', data);
    console.info(`outage resume: ${partsAtCut}/20 parts in at the cut, ${resent} bytes re-sent (${(resent / PART).toFixed(2)} parts)`);
    expect(storagePuts(rig.cloud).filter((e) => e.authorization !== false)).toEqual([]);
  }, 90_000);

  it('a paused device: the create is refused once and never retried (paused-refused); a later file uploads after unpause', async () => {
    const rig = await rigUp();
    const agent = startUploadAgent(rig);
    await online(rig, agent);
    rig.cloud.control.pause(rig.device.id);
    const before = assetCreates(rig.cloud).length;
    writeMedia(join(rig.media, 'while-paused.mp4'), 300_000, HOUR);
    const dead = await waitFor('the file dead-lettered', async () => {
      const q = await uploadQueue(rig);
      return q.counts.dead === 1 ? q : undefined;
    }, 20_000, 100);
    expect(dead.counts.pending).toBe(0);
    expect(dead.items).toEqual([expect.objectContaining({ kind: 'upload', state: 'dead', reason: expect.stringMatching(/^paused-refused/) })]);
    expect(dead.items[0]!.upload).toEqual({ name: 'while-paused.mp4', path: join(rig.media, 'while-paused.mp4'), bytesDone: 0, bytesTotal: 300_000, state: 'paused-refused' });
    // Five agent minutes later: still the one create, answered 409.
    await sleepReal(5000);
    const creates = assetCreates(rig.cloud).slice(before);
    expect(creates.map((e) => e.status)).toEqual([409]);
    expect(assetsNamed(rig.cloud, 'while-paused.mp4')).toEqual([]);

    rig.cloud.control.unpause(rig.device.id);
    const later = writeMedia(join(rig.media, 'after-unpause.mp4'), 600_000, HOUR);
    await stored(rig, agent, 'after-unpause.mp4', later);
    expect(assetsNamed(rig.cloud, 'while-paused.mp4')).toEqual([]);
    expect(assetCreates(rig.cloud).slice(before).map((e) => e.status)).toEqual([409, 200]);
    const q = await uploadQueue(rig);
    expect(q.counts).toMatchObject({ dead: 1 });
  }, 60_000);

  // A file refused with 409 Channel Paused is never retried (the service spec: "that file must not be
  // retried"): not by this run, and not by the next daemon's first scan either.
  it('a paused-refused file is not retried after a restart either', async () => {
    const rig = await rigUp();
    let agent = startUploadAgent(rig);
    await online(rig, agent);
    rig.cloud.control.pause(rig.device.id);
    const before = assetCreates(rig.cloud).length;
    writeMedia(join(rig.media, 'refused.mp4'), 100_000, HOUR);
    await waitForUploads(rig, 'the file dead-lettered', (c) => c.dead === 1, 20_000);
    agent.child.kill('SIGTERM');
    await agent.exited;
    agent = startUploadAgent(rig);
    await waitFor('the daemon up (paused)', () => ['paused', 'online'].includes(String(daemonState(rig.dirs, agent.pid))), 20_000, 100);
    await sleepReal(3000); // 3 agent minutes: rescans, the dispatcher, a retry if there is one
    expect(assetCreates(rig.cloud).slice(before).map((e) => e.status)).toEqual([409]);
  }, 60_000);

  it('a file deleted after it was queued is dead-lettered with a reason and does not block the next one', async () => {
    const rig = await rigUp();
    const agent = startUploadAgent(rig);
    await online(rig, agent);
    // Offline: both files are queued, neither can start.
    rig.cloud.control.refuseConnections();
    await sleepReal(200);
    writeMedia(join(rig.media, 'a-deleted.mp4'), 500_000, 2 * HOUR);
    const next = writeMedia(join(rig.media, 'b-next.mp4'), 500_000, HOUR);
    await waitForUploads(rig, 'both queued', (c) => c.pending === 2, 10_000);
    rmSync(join(rig.media, 'a-deleted.mp4'));
    await rig.cloud.control.acceptConnections();
    await stored(rig, agent, 'b-next.mp4', next, 45_000);
    const q = await waitFor('the deleted file dead-lettered', async () => {
      const r = await uploadQueue(rig);
      return r.counts.dead === 1 && r.counts.pending === 0 ? r : undefined;
    }, 10_000, 100);
    expect(q.items.filter((i) => i.state !== 'done')).toEqual([expect.objectContaining({ state: 'dead', reason: expect.stringMatching(/gone.*a-deleted\.mp4/) })]);
    expect(q.items.map((i) => i.upload)).toEqual([
      { name: 'a-deleted.mp4', path: join(rig.media, 'a-deleted.mp4'), bytesDone: 0, bytesTotal: 500_000, state: 'dead-lettered' },
      { name: 'b-next.mp4', path: join(rig.media, 'b-next.mp4'), bytesDone: 500_000, bytesTotal: 500_000, state: 'done' },
    ]);
    expect(assetsNamed(rig.cloud, 'a-deleted.mp4')).toEqual([]);
  }, 90_000);
});
