// Uploads that are interrupted, in agent time (rig.ts): a 20-part file cut by
// kill -9s and by an outage resumes at the first chunk not recorded (each
// interruption costs at most the two chunks in flight: bytes of PUTs it cut
// plus PUTs of parts stored before it, from the fake's journal), into the one
// asset, byte-identical. A paused device's refusal (409 Channel Paused) is
// final: one create, dead-lettered as paused-refused, not retried by this run
// nor the next, while a later file uploads once unpaused. A file deleted after
// it was queued is dead-lettered with a reason and holds nothing up.
//
// Storage answers each part 200 agent ms after its bytes arrived (a delay
// fault), so a kill lands with parts on the wire: the rig's kill -9 is the
// moment the condition first holds, with no real-time window around it. (What
// a kill in the middle of a write leaves on flash needs a process:
// integration/kill9.test.ts.)
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { JournalEntry } from '../fake-cloud/index.js';
import { PART, assetCreates, assetProblems, assetsNamed, bytesReceived, describeAssets, storagePuts, storedProblems, typeOf } from '../support/assets.js';
import { HOUR, MINUTE, Rig, SECOND } from './rig.js';

const BIG = 20 * PART;
/** Agent ms from a part's bytes at storage to its answer. */
const PUT_MS = 200;

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

async function up(): Promise<Rig> {
  const r = (rig = await Rig.up({ cloud: { uploadPartBytes: PART } }));
  r.cloud.control.addFault({ kind: 'delay', path: '/_storage/*', delayMs: PUT_MS });
  r.start(r.mediaEnv());
  await r.until('online', () => r.state() === 'online', MINUTE);
  return r;
}

const partsIn = (r: Rig, name: string): number => assetsNamed(r.cloud, name)[0]?.parts.filter((p) => p.receivedBytes !== undefined).length ?? 0;

async function stored(r: Rig, name: string, data: Buffer, limitMs = 10 * MINUTE): Promise<void> {
  let problems: string[] = [];
  await r.until(`${name} stored`, () => (problems = storedProblems(r.cloud, name, data, typeOf(name))).length === 0, limitMs).catch((err: Error) => {
    throw new Error(`${err.message}\n${problems.join('\n')}\nassets:\n${describeAssets(r.cloud)}`);
  });
}

/** One asset for the file, and no more than two chunks' worth of bytes sent twice. */
function expectResumed(r: Rig, name: string, data: Buffer): number {
  const all = assetsNamed(r.cloud, name);
  expect(all).toHaveLength(1);
  const resent = bytesReceived(r.cloud, all[0]!.id) - data.length;
  expect(resent).toBeGreaterThanOrEqual(0);
  expect(resent).toBeLessThanOrEqual(2 * PART);
  return resent;
}

/** An upload row as `queue` lists it: the file, its bytes, its state. */
const view = (u: { name: string; path: string; bytesDone: number; bytesTotal: number; state: string }) => ({ name: u.name, path: u.path, bytesDone: u.bytesDone, bytesTotal: u.bytesTotal, state: u.state });

describe('interrupted uploads in agent time', () => {
  // Fails on 639c991: UploadWorker.sendChunks did not wait for a chunk's progress record to be flushed
  // before its lane took the next chunk, so a kill could find per lane one finished chunk not yet on
  // flash plus one on the wire: up to four chunks re-sent, not the two in flight.
  it('resumes a 20-part file after each of eight kill -9s at the first chunk not recorded, into the same asset', async () => {
    const r = await up();
    const data = r.writeMedia('long-take.mp4', BIG, HOUR);
    const keyOf = (e: JournalEntry): string => e.path.split('/').pop()!;
    const marks: number[] = []; // the asset's PUT count at each kill
    let assetId = '';
    for (const at of [2, 4, 6, 8, 10, 12, 14, 16]) {
      await r.until(`${at} parts in`, () => partsIn(r, 'long-take.mp4') >= at, 5 * MINUTE);
      r.kill();
      assetId = assetsNamed(r.cloud, 'long-take.mp4')[0]!.id;
      marks.push(storagePuts(r.cloud, assetId).length);
      r.start(r.mediaEnv());
    }
    let problems: string[] = [];
    await r.until('the asset complete', () => (problems = assetProblems(r.cloud.asset(assetId)!, data, 'video/mp4')).length === 0, 10 * MINUTE).catch((err: Error) => {
      throw new Error(`${err.message}\n${problems.join('\n')}\n${describeAssets(r.cloud)}`);
    });
    await r.until('the queue empty', () => r.uploadCounts().pending === 0 && r.uploadCounts().done === 1, MINUTE);
    // What each kill cost: the bytes of PUTs it cut, plus the PUTs after it of parts already stored before it.
    const puts = storagePuts(r.cloud, assetId);
    const wasted = marks.map((m, k) => {
      const cut = puts.slice(k === 0 ? 0 : marks[k - 1], m).filter((e) => e.status !== 200).reduce((n, e) => n + (e.bodyBytes ?? 0), 0);
      const before = new Set(puts.slice(0, m).filter((e) => e.status === 200).map(keyOf));
      const again = puts.slice(m, marks[k + 1] ?? puts.length).filter((e) => before.has(keyOf(e))).reduce((n, e) => n + (e.bodyBytes ?? 0), 0);
      return cut + again;
    });
    const resent = bytesReceived(r.cloud, assetId) - data.length;
    console.info(`kill -9 resume: ${marks.length} kills, re-sent per kill ${wasted.map((w) => (w / PART).toFixed(2)).join(', ')} parts; ${resent} bytes in all`);
    expect(assetsNamed(r.cloud, 'long-take.mp4')).toHaveLength(1);
    expect(wasted.reduce((a, b) => a + b, 0)).toBe(resent);
    // Each kill re-sends at most the two chunks in flight.
    for (const [k, w] of wasted.entries()) expect({ kill: k + 1, resentParts: w / PART, atMostTwo: w <= 2 * PART }).toEqual({ kill: k + 1, resentParts: w / PART, atMostTwo: true });
    expect(r.uploadCounts()).toMatchObject({ pending: 0, dead: 0 });
  });

  // Guards the fix of a0c57fa: the watcher's first scan after a restart (every clip is older than the
  // settle time by then) used to run before the outbox's replay, miss the item already pending for the
  // file and queue a second one, which created a second asset and sent the whole file again.
  it('a restart does not queue again a file whose upload was pending (one asset only)', async () => {
    const r = await up();
    const data = r.writeMedia('dup-take.mp4', BIG, HOUR);
    await r.until('six parts in', () => partsIn(r, 'dup-take.mp4') >= 6, 5 * MINUTE);
    r.kill();
    expect(partsIn(r, 'dup-take.mp4')).toBeLessThan(20);
    r.start(r.mediaEnv());
    await r.until('the queue empty', () => r.state() === 'online' && r.uploadCounts().pending === 0 && r.uploadCounts().done >= 1, 10 * MINUTE);
    await r.advance(MINUTE);
    expect(assetsNamed(r.cloud, 'dup-take.mp4').map((a) => a.complete)).toEqual([true]);
    expect(storedProblems(r.cloud, 'dup-take.mp4', data, 'video/mp4')).toEqual([]);
  });

  it('resumes a 20-part file after an outage mid-file (connections refused, then accepted)', async () => {
    const r = await up();
    const data = r.writeMedia('outage-take.mov', BIG, HOUR);
    await r.until('six parts in', () => partsIn(r, 'outage-take.mov') >= 6, 5 * MINUTE);
    r.cloud.control.refuseConnections();
    const partsAtCut = partsIn(r, 'outage-take.mov');
    await r.advance(90 * SECOND); // without the service
    expect(partsIn(r, 'outage-take.mov')).toBe(partsAtCut);
    await r.cloud.control.acceptConnections();
    await stored(r, 'outage-take.mov', data);
    const resent = expectResumed(r, 'outage-take.mov', data);
    console.info(`outage resume: ${partsAtCut}/20 parts in at the cut, ${resent} bytes re-sent (${(resent / PART).toFixed(2)} parts)`);
    expect(storagePuts(r.cloud).filter((e) => e.authorization !== false)).toEqual([]);
  });

  it('a paused device: the create is refused once and never retried (paused-refused); a later file uploads after unpause', async () => {
    const r = await up();
    r.cloud.control.pause(r.device.id);
    const before = assetCreates(r.cloud).length;
    r.writeMedia('while-paused.mp4', 300_000, HOUR);
    await r.until('the file dead-lettered', () => r.uploadCounts().dead === 1, 5 * MINUTE);
    expect(r.uploadCounts().pending).toBe(0);
    const dead = (await r.uploads()).filter((u) => u.state !== 'done');
    expect(dead).toEqual([expect.objectContaining({ state: 'paused-refused', reason: expect.stringMatching(/^paused-refused/) })]);
    expect(view(dead[0]!)).toEqual({ name: 'while-paused.mp4', path: join(r.media, 'while-paused.mp4'), bytesDone: 0, bytesTotal: 300_000, state: 'paused-refused' });
    // Five agent minutes later: still the one create, answered 409.
    await r.advance(5 * MINUTE);
    expect(assetCreates(r.cloud).slice(before).map((e) => e.status)).toEqual([409]);
    expect(assetsNamed(r.cloud, 'while-paused.mp4')).toEqual([]);

    r.cloud.control.unpause(r.device.id);
    const later = r.writeMedia('after-unpause.mp4', 600_000, HOUR);
    await stored(r, 'after-unpause.mp4', later);
    expect(assetsNamed(r.cloud, 'while-paused.mp4')).toEqual([]);
    expect(assetCreates(r.cloud).slice(before).map((e) => e.status)).toEqual([409, 200]);
    await r.advance(5 * SECOND);
    expect(r.uploadCounts()).toMatchObject({ dead: 1 });
  });

  // A file refused with 409 Channel Paused is never retried (the service spec: "that file must not be
  // retried"): not by this run, and not by the next daemon's first scan either.
  it('a paused-refused file is not retried after a restart either', async () => {
    const r = await up();
    r.cloud.control.pause(r.device.id);
    const before = assetCreates(r.cloud).length;
    r.writeMedia('refused.mp4', 100_000, HOUR);
    await r.until('the file dead-lettered', () => r.uploadCounts().dead === 1, 5 * MINUTE);
    await r.stop();
    r.start(r.mediaEnv());
    await r.until('the daemon up (paused)', () => ['paused', 'online'].includes(String(r.state())) && r.status()?.pid === r.daemonPid(), MINUTE);
    await r.advance(3 * MINUTE); // rescans, the dispatcher, a retry if there is one
    expect(assetCreates(r.cloud).slice(before).map((e) => e.status)).toEqual([409]);
  });

  it('a file deleted after it was queued is dead-lettered with a reason and does not block the next one', async () => {
    const r = await up();
    // Offline: both files are queued, neither can start.
    r.cloud.control.refuseConnections();
    r.writeMedia('a-deleted.mp4', 500_000, 2 * HOUR);
    const next = r.writeMedia('b-next.mp4', 500_000, HOUR);
    await r.until('both queued', () => r.uploadCounts().pending === 2, 5 * MINUTE);
    rmSync(join(r.media, 'a-deleted.mp4'));
    await r.cloud.control.acceptConnections();
    await stored(r, 'b-next.mp4', next);
    await r.until('the deleted file dead-lettered', () => r.uploadCounts().dead === 1 && r.uploadCounts().pending === 0, 5 * MINUTE);
    const rows = await r.uploads();
    expect(rows.filter((u) => u.state !== 'done')).toEqual([expect.objectContaining({ state: 'dead-lettered', reason: expect.stringMatching(/gone.*a-deleted\.mp4/) })]);
    expect(rows.map(view)).toEqual([
      { name: 'a-deleted.mp4', path: join(r.media, 'a-deleted.mp4'), bytesDone: 0, bytesTotal: 500_000, state: 'dead-lettered' },
      { name: 'b-next.mp4', path: join(r.media, 'b-next.mp4'), bytesDone: 500_000, bytesTotal: 500_000, state: 'done' },
    ]);
    expect(assetsNamed(r.cloud, 'a-deleted.mp4')).toEqual([]);
  });
});
