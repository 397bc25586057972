// Uploads through kill -9s, in agent time (rig.ts): 15 files of 0.2-3 MB
// (256 KiB parts) in the media dir (old mtimes: every daemon's first scan
// reports them all), storage answering each PUT 24 agent s late, and the
// daemon killed at moments drawn from the soak's seed (test/support/soak.ts:
// 12 kills in `npm test`, 100 in `npm run test:soak`), started again at once
// with the same dirs: in its first 18 agent s (the outbox replaying, the first
// device check), 0-1.8 agent s after its first asset create (before the record
// of it is on flash: the outbox's group commit waits half an agent second),
// and 0-36 agent s after its first PUT (chunks on the wire, answers and
// progress records in flight). The last daemon runs until the queue is empty.
// Every file must then be stored exactly once, complete and byte-identical
// part by part; the queue holds nothing pending or dead and no daemon ever
// dead-lettered an upload. An asset created just before a kill, before its
// creation was on flash, is an expected orphan; it must hold no bytes (PUTs
// start only once the asset is recorded). The same seed replays the run to the
// agent ms. (A kill in the middle of a write, and what it leaves on flash,
// needs a process: integration/kill9.test.ts.)
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { JournalEntry } from '../fake-cloud/index.js';
import { ASSETS_PATH, PART, STORAGE, assetCreates, assetsNamed, completeNamed, describeAssets, storagePuts, storedProblems, typeOf } from '../support/assets.js';
import { soak } from '../support/soak.js';
import { tempFiles } from '../support/state-files.js';
import { MINUTE, Rig, SECOND } from './rig.js';

const FILES = 15;
const { figure, random, seed } = soak('uploads through kills', ['uploadKills']);
const KILLS = figure('uploadKills');

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const deadLettered = (r: Rig): string[] => r.lines.filter((l) => /dead-lettered/.test(l.msg)).map((l) => `[${l.gen}] ${l.msg}`);

describe('uploads through kill -9s in agent time', () => {
  it(`stores every file exactly once, byte-identical, through ${KILLS} kills at drawn moments`, async () => {
    const r = (rig = await Rig.up({ seed, cloud: { uploadPartBytes: PART } }));
    const files = new Map<string, Buffer>();
    for (let i = 0; i < FILES; i++) {
      const name = `crash-${String(i).padStart(2, '0')}${['.mp4', '.mov', '.wav', '.jpg', '.r3d'][i % 5]}`;
      files.set(name, r.writeMedia(name, 200_000 + Math.floor(random() * 2_800_000), 3600_000 + i * 1000));
    }
    // A slow uplink: storage takes each part at once but answers 24 agent s later (a kill loses the answer).
    r.cloud.control.addFault({ kind: 'delay', path: '/_storage/*', delayMs: 24_000 });

    const stats = { kills: 0, early: 0, atCreate: 0, atPut: 0, aimedHit: 0, allCompleteAtKill: 0, completeAtLastKill: 0, putsBeforeLast: 0 };
    const isCreate = (e: JournalEntry): boolean => e.method === 'POST' && e.path === ASSETS_PATH;
    const isPut = (e: JournalEntry): boolean => e.path.startsWith(STORAGE);
    for (let i = 1; i <= KILLS; i++) {
      const mark = r.cloud.journal.length;
      r.start(r.mediaEnv());
      const seen = (want: (e: JournalEntry) => boolean, ms: number): Promise<boolean> =>
        r.vc.advanceUntil('upload traffic', () => r.cloud.journal.slice(mark).some(want), ms).then(() => true, () => false);
      const mode = i % 3;
      if (mode === 0) {
        stats.early++; // the outbox replaying, the first device check
        await r.advance(Math.round(random() * 18 * SECOND));
      } else if (mode === 1) {
        stats.atCreate++; // an asset created, its record not yet on flash (the group commit waits half an agent second)
        if (await seen(isCreate, MINUTE)) stats.aimedHit++;
        await r.advance(Math.round(random() * 1_800));
      } else {
        stats.atPut++; // parts on the wire, progress records in their windows
        if (await seen(isPut, 2 * MINUTE)) stats.aimedHit++;
        await r.advance(Math.round(random() * 36 * SECOND));
      }
      r.kill();
      stats.kills++;
      if (!stats.allCompleteAtKill && [...files.keys()].every((n) => completeNamed(r.cloud, n).length > 0)) stats.allCompleteAtKill = i;
    }
    stats.putsBeforeLast = storagePuts(r.cloud).filter((e) => e.status === 200).length;
    stats.completeAtLastKill = [...files.keys()].filter((n) => completeNamed(r.cloud, n).length > 0).length;

    // The last daemon runs until the queue is empty.
    r.start(r.mediaEnv());
    let problems: string[] = [];
    await r
      .until('every file stored and the queue empty', () => {
        // The bytes are hashed only once every file has its complete asset: this is looked at after every timer.
        if (![...files.keys()].every((n) => completeNamed(r.cloud, n).length > 0)) return false;
        problems = [...files].flatMap(([n, d]) => storedProblems(r.cloud, n, d, typeOf(n)));
        return problems.length === 0 && r.status()?.pid === r.daemonPid() && r.uploadCounts().pending === 0;
      }, 2 * 60 * MINUTE)
      .catch((err: Error) => {
        throw new Error(`${err.message}\n${problems.join('\n')}\n${describeAssets(r.cloud)}\n${JSON.stringify(stats)}`);
      });
    const rows = await r.uploads();

    const total = [...files.values()].reduce((n, d) => n + d.length, 0);
    const puts = storagePuts(r.cloud);
    const sent = puts.reduce((n, e) => n + (e.bodyBytes ?? 0), 0);
    const orphans = r.cloud.assets().filter((a) => !a.complete);
    const report = {
      ...stats,
      seed,
      agentSeconds: Math.round(r.now() / 1000),
      files: FILES,
      bytes: total,
      bytesSent: sent,
      bytesResent: sent - total,
      resentParts: +((sent - total) / PART).toFixed(1),
      creates: assetCreates(r.cloud).length,
      orphans: orphans.length,
      puts: puts.length,
      tempFilesLeft: tempFiles(r.stateDir),
    };
    console.info(`uploads crash: ${JSON.stringify(report)}`);

    for (const n of files.keys()) expect({ n, complete: completeNamed(r.cloud, n).length }).toEqual({ n, complete: 1 });
    expect(deadLettered(r)).toEqual([]);
    expect(r.uploadCounts()).toMatchObject({ pending: 0, dead: 0 });
    // Listed as done while the queue holds them (the oldest segments may be gone already), every byte counted.
    expect(rows.filter((u) => u.state !== 'done' || u.bytesDone !== u.bytesTotal)).toEqual([]);
    // An orphan is a create whose answer was never recorded: nothing was ever PUT to it.
    expect(orphans.filter((a) => a.bytesReceived > 0).map((a) => `${a.name} ${a.bytesReceived}`)).toEqual([]);
    expect(report.creates).toBe(FILES + orphans.length);
    expect(puts.filter((e) => e.authorization !== false)).toEqual([]);
    expect(stats.kills).toBe(KILLS);
  });

  // With --delete-after-upload the worker adds the file to the index, deletes it, and ends the item;
  // a kill before that end is on flash leaves the item pending with its file gone. The next daemon must
  // end it as uploaded (it used to stat the file before asking the index, and dead-lettered a completed
  // upload: "the file is gone (ENOENT)"). Killed the moment the file is seen gone, its end waiting for
  // the group commit.
  it('a completed upload whose file was deleted is not dead-lettered after a kill right after the delete', async () => {
    const r = (rig = await Rig.up({ cloud: { uploadPartBytes: PART } }));
    const env = { ...r.mediaEnv(), C2C_DELETE_AFTER_UPLOAD: 'true' };
    for (let round = 0; round < 3; round++) {
      r.start(env);
      await r.until('online', () => r.status()?.pid === r.daemonPid() && r.state() === 'online', MINUTE);
      const name = `deleted-${round}.mp4`;
      r.writeMedia(name, 300_000, 3600_000);
      await r.until('the file deleted after its upload', () => !existsSync(join(r.media, name)), 5 * MINUTE);
      r.kill();
      expect(completeNamed(r.cloud, name)).toHaveLength(1);
    }
    r.start(env);
    await r.until('the queue empty', () => r.status()?.pid === r.daemonPid() && r.uploadCounts().pending === 0, 5 * MINUTE);
    for (let round = 0; round < 3; round++) expect(assetsNamed(r.cloud, `deleted-${round}.mp4`)).toHaveLength(1);
    expect(deadLettered(r)).toEqual([]);
  });
});
