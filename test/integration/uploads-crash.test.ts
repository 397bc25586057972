// Uploads through SIGKILLs: 15 files of 0.2-3 MB (256 KiB parts) in the media
// dir (old mtimes: every daemon's first scan reports them all), storage
// answering each PUT 150 real ms late, and the daemon SIGKILLed at random
// moments (a soak, test/support/soak.ts: 30 kills in `npm test`, 100 in
// `npm run test:soak`), restarted at once with the same dirs: while node starts
// (0-300 ms), 0-30 ms after its first asset create (before the record of it
// is on flash: the outbox's group commit waits up to half a real second), and
// 0-0.6 s after its first PUT (chunks on the wire, answers and progress
// records in flight). The last daemon runs until the queue is empty. Every
// file must then be stored exactly once, complete and byte-identical part by
// part; the queue holds nothing pending or dead and no daemon ever
// dead-lettered an upload. An asset created just before a kill, before its
// creation was on flash, is an expected orphan; it must hold no bytes (PUTs
// start only once the asset is recorded). Reported: kills, real time, bytes
// re-sent, orphans, temp files left.
import { describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readdirSync, watch } from 'node:fs';
import { join } from 'node:path';
import { type JournalEntry } from '../fake-cloud/index.js';
import { waitFor } from './agent-process.js';
import { tempFiles } from './channels-harness.js';
import { soak } from '../support/soak.js';
import { notHung } from '../support/until.js';
import { sleepReal, type RefreshingAgent } from './refresh-harness.js';
import { ASSETS_PATH, PART, STORAGE, agentWarnings, assetCreates, assetsNamed, completeNamed, describeAssets, startUploadAgent, storagePuts, storedProblems, typeOf, uploadQueue, waitForUploads, writeMedia, useUploadRigs } from './uploads-harness.js';

const SCALE = 60;
const FILES = 15;
const { figure, random } = soak('uploads through kills', ['uploadKills']);
const KILLS = figure('uploadKills');
/** About 1.1 real s a kill on a quiet machine: a kill's step still going after a minute hung (a bound against a hang, not a speed test). */
const STEP_HANG_MS = 60_000;
// The test's own timeout, 20 real s a kill on average and the last phase's bounds: a hang's last resort.
const { rigUp, online } = useUploadRigs(SCALE);

const deadLettered = (a: RefreshingAgent): string[] => a.lines().filter((l) => /dead-lettered/.test(String(l.msg))).map((l) => String(l.msg));

async function kill9(a: RefreshingAgent): Promise<void> {
  a.child.kill('SIGKILL');
  await a.exited;
}

describe('uploads through SIGKILLs', () => {
  it(`stores every file exactly once, byte-identical, through ${KILLS}+ kills at random moments`, async () => {
    const t0 = Date.now();
    const rig = await rigUp();
    const files = new Map<string, Buffer>();
    for (let i = 0; i < FILES; i++) {
      const name = `crash-${String(i).padStart(2, '0')}${['.mp4', '.mov', '.wav', '.jpg', '.r3d'][i % 5]}`;
      files.set(name, writeMedia(join(rig.media, name), 200_000 + Math.floor(random() * 2_800_000), 3600_000 + i * 1000));
    }
    // A slow uplink: storage takes each part at once but answers 400 real ms later (a kill loses the answer).
    rig.cloud.control.addFault({ kind: 'delay', path: '/_storage/*', delayMs: 24_000 });

    const stats = { kills: 0, early: 0, atCreate: 0, atPut: 0, aimedHit: 0, allCompleteAtKill: 0, completeAtLastKill: 0, putsBeforeLast: 0 };
    const dead: string[] = [];
    const isCreate = (e: JournalEntry): boolean => e.method === 'POST' && e.path === ASSETS_PATH;
    const isPut = (e: JournalEntry): boolean => e.path.startsWith(STORAGE);
    for (let i = 1; i <= KILLS; i++) await notHung(`kill ${i}`, STEP_HANG_MS, async () => {
      const mark = rig.cloud.journal.length;
      const agent = startUploadAgent(rig);
      const seen = (want: (e: JournalEntry) => boolean, ms: number) => waitFor('upload traffic', () => rig.cloud.journal.slice(mark).some(want), ms, 1).then(() => true, () => false);
      const mode = i % 3;
      if (mode === 0) {
        stats.early++; // node starting, the outbox replaying, the first device check
        await sleepReal(random() * 300);
      } else if (mode === 1) {
        stats.atCreate++; // an asset created, its record not yet on flash (the group commit waits up to 0.5 real s)
        if (await seen(isCreate, 1000)) stats.aimedHit++;
        await sleepReal(random() * 30);
      } else {
        stats.atPut++; // parts on the wire, progress records in their windows
        if (await seen(isPut, 2000)) stats.aimedHit++;
        await sleepReal(random() * 600);
      }
      await kill9(agent);
      stats.kills++;
      dead.push(...deadLettered(agent));
      if (!stats.allCompleteAtKill && [...files.keys()].every((n) => completeNamed(rig.cloud, n).length > 0)) stats.allCompleteAtKill = i;
    }, () => JSON.stringify(stats));
    stats.putsBeforeLast = storagePuts(rig.cloud).filter((e) => e.status === 200).length;
    stats.completeAtLastKill = [...files.keys()].filter((n) => completeNamed(rig.cloud, n).length > 0).length;

    // The last daemon runs until the queue is empty.
    const last = startUploadAgent(rig);
    let problems: string[] = [];
    await waitFor('every file stored and the queue empty', async () => {
      problems = [...files].flatMap(([n, d]) => storedProblems(rig.cloud, n, d, typeOf(n)));
      return problems.length === 0 && (await uploadQueue(rig)).counts.pending === 0;
    }, 90_000, 200).catch((err: Error) => {
      throw new Error(`${err.message}\n${problems.join('\n')}\n${describeAssets(rig.cloud)}\n${agentWarnings(last)}\n${JSON.stringify(stats)}`);
    });
    const q = await uploadQueue(rig);
    dead.push(...deadLettered(last));

    const total = [...files.values()].reduce((n, d) => n + d.length, 0);
    const puts = storagePuts(rig.cloud);
    const sent = puts.reduce((n, e) => n + (e.bodyBytes ?? 0), 0);
    const orphans = rig.cloud.assets().filter((a) => !a.complete);
    const report = {
      ...stats,
      realSeconds: Math.round((Date.now() - t0) / 1000),
      files: FILES,
      bytes: total,
      bytesSent: sent,
      bytesResent: sent - total,
      resentParts: +((sent - total) / PART).toFixed(1),
      creates: assetCreates(rig.cloud).length,
      orphans: orphans.length,
      puts: puts.length,
      tempFilesLeft: tempFiles(rig.dirs.stateDir),
    };
    console.info(`uploads crash: ${JSON.stringify(report)}`);

    for (const n of files.keys()) expect({ n, complete: completeNamed(rig.cloud, n).length }).toEqual({ n, complete: 1 });
    expect(dead).toEqual([]);
    expect(q.counts).toMatchObject({ pending: 0, dead: 0 });
    // Listed as done while the queue holds them (the oldest segments may be gone already), every byte counted.
    expect(q.items.filter((i) => (i.upload as { state?: string }).state !== 'done' || (i.upload as { bytesDone?: number }).bytesDone !== (i.upload as { bytesTotal?: number }).bytesTotal)).toEqual([]);
    // An orphan is a create whose answer was never recorded: nothing was ever PUT to it.
    expect(orphans.filter((a) => a.bytesReceived > 0).map((a) => `${a.name} ${a.bytesReceived}`)).toEqual([]);
    expect(report.creates).toBe(FILES + orphans.length);
    expect(puts.filter((e) => e.authorization !== false)).toEqual([]);
    expect(stats.kills).toBeGreaterThanOrEqual(KILLS);
  }, KILLS * 20_000 + 240_000);

  // A kill while the upload index is being written leaves `<state-dir>/.uploaded.json.<hex>.tmp`
  // behind; the next start must remove it (it used to stay on flash for good, one file per such crash).
  it('no temp file of the upload index is left on flash after a kill during its write', async () => {
    const rig = await rigUp();
    mkdirSync(rig.dirs.stateDir, { recursive: true });
    for (let round = 0; round < 3; round++) {
      const agent = startUploadAgent(rig);
      await online(rig, agent);
      // SIGKILL the moment the index's temp file appears (inotify), before its rename.
      const w = watch(rig.dirs.stateDir, (_t, name) => {
        if (typeof name === 'string' && /^\.uploaded\.json\..+\.tmp$/.test(name)) agent.child.kill('SIGKILL');
      });
      writeMedia(join(rig.media, `indexed-${round}.mp4`), 1000, 3600_000);
      await Promise.race([agent.exited, sleepReal(5000)]);
      w.close();
      await kill9(agent);
    }
    const last = startUploadAgent(rig);
    await online(rig, last);
    await waitForUploads(rig, 'the queue empty', (c) => c.pending === 0, 20_000);
    expect(readdirSync(rig.dirs.stateDir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  }, 60_000);

  // With --delete-after-upload the worker adds the file to the index, deletes it, and ends the item;
  // a kill before that end is on flash leaves the item pending with its file gone. The next daemon must
  // end it as uploaded (it used to stat the file before asking the index, and dead-lettered a completed
  // upload: "the file is gone (ENOENT)").
  it('a completed upload whose file was deleted is not dead-lettered after a kill right after the delete', async () => {
    const rig = await rigUp();
    const dead: string[] = [];
    for (let round = 0; round < 3; round++) {
      const agent = startUploadAgent(rig, { deleteAfterUpload: true });
      await online(rig, agent);
      const file = join(rig.media, `deleted-${round}.mp4`);
      writeMedia(file, 300_000, 3600_000);
      await waitFor('the file deleted after its upload', () => !existsSync(file), 20_000, 1);
      await kill9(agent);
      dead.push(...deadLettered(agent));
      expect(completeNamed(rig.cloud, `deleted-${round}.mp4`)).toHaveLength(1);
    }
    const last = startUploadAgent(rig, { deleteAfterUpload: true });
    await waitForUploads(rig, 'the queue empty', (c) => c.pending === 0, 20_000);
    dead.push(...deadLettered(last));
    for (let round = 0; round < 3; round++) expect(assetsNamed(rig.cloud, `deleted-${round}.mp4`)).toHaveLength(1);
    expect(dead).toEqual([]);
  }, 90_000);
});
