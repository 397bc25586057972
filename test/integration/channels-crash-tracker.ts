// Bookkeeping for the channel crash suites: after each SIGKILL (the daemon
// dead, nothing moving) the queue directory is read with the test's own
// parser, and every channel-sync put found there is followed until a record
// ends it. A put once seen must stay on disk until its end is seen: a
// SIGKILL keeps whatever write() handed the kernel, so anything the daemon
// could have acknowledged is visible to the next scan, and since every
// daemon appends to a segment of its own, which survives at least until the
// next one has written, no end record can come and go unseen between two scans.
import { expect } from '@jest/globals';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor, type AgentDirs } from './agent-process.js';
import { sleepReal, type RefreshingAgent } from './refresh-harness.js';
import {
  KEYS,
  channelCalls,
  cli,
  dirBytes,
  expectedIndexes,
  indexesAtService,
  plug,
  pluggedNow,
  quarantined,
  scanQueueDir,
  serviceChannels,
  syncCounts,
  tempFiles,
  unplug,
  type ChannelKey,
  type Rig,
} from './channels-harness.js';

/** The outbox's default cap (queueMaxBytes). */
export const CAP = 4 * 1024 * 1024;

/**
 * The temp files conf (through `atomically`) makes when it writes the channel
 * record: `channels.json.tmp-<10 digits><6 hex>`. A SIGKILL between their
 * creation and the rename leaves one until the next start removes it
 * (channels-crash-online.test.ts checks that); the crash audits count these
 * apart so the rest of their checks stay exact.
 */
export const CONF_TEMP = /(^|\/)channels\.json\.tmp-\d{10}[0-9a-f]{6}$/;

export const SYNC_KIND = 'channel-sync';

export interface TrackerStats {
  scans: number;
  puts: number;
  /** Ends seen, by how: 'done' (a sync that went through), 'done: superseded', 'dead: ...', 'drop'. */
  ends: Record<string, number>;
  /** Scans whose newest segment ended in a partial record, and scans with a bad record in an older one. */
  tornTails: number;
  corruptOlder: number;
  maxPendingOnDisk: number;
  maxQueueBytes: number;
  maxSegments: number;
  maxTemps: number;
  /** The most temp files at one scan, conf's channel-record temps (a known bug) left out. */
  maxOtherTemps: number;
  tempNames: string[];
}

export class QueueTracker {
  /** put id -> how it ended ('' while pending on disk). */
  readonly seen = new Map<string, string>();
  readonly stats: TrackerStats = { scans: 0, puts: 0, ends: {}, tornTails: 0, corruptOlder: 0, maxPendingOnDisk: 0, maxQueueBytes: 0, maxSegments: 0, maxTemps: 0, maxOtherTemps: 0, tempNames: [] };
  readonly problems: string[] = [];
  kills = 0;
  /** Kills that landed after the daemon had logged 'daemon started'. */
  startedBeforeKill = 0;
  private readonly queueDir: string;

  constructor(private readonly dirs: AgentDirs) {
    this.queueDir = join(dirs.stateDir, 'queue');
  }

  /** One look at the state after a kill; `when` names the moment in problems. */
  scan(when: string): void {
    const segs = scanQueueDir(this.queueDir);
    const s = this.stats;
    s.scans++;
    const onDisk = new Set<string>();
    segs.forEach((seg, i) => {
      if (seg.tail > 0) {
        if (i === segs.length - 1) s.tornTails++;
        else {
          s.corruptOlder++;
          this.problems.push(`${when}: ${seg.name} (not the newest) has ${seg.tail} unreadable bytes at its end`);
        }
      }
      for (const rec of seg.records) {
        if (rec.id === undefined) continue;
        if (rec.t === 'put') {
          if (rec.k !== SYNC_KIND) this.problems.push(`${when}: a put of kind ${rec.k}`);
          onDisk.add(rec.id);
          if (!this.seen.has(rec.id)) {
            this.seen.set(rec.id, '');
            s.puts++;
          }
        } else if (rec.t === 'done' || rec.t === 'dead' || rec.t === 'drop') {
          onDisk.add(rec.id);
          const how = rec.t === 'drop' ? 'drop' : rec.r === undefined ? rec.t : `${rec.t}: ${rec.r}`;
          const before = this.seen.get(rec.id);
          if (before === undefined) {
            // Its put was written and deleted between two scans: cannot happen when each daemon has its own segment.
            this.problems.push(`${when}: an end (${how}) for ${rec.id} whose put was never seen`);
            this.seen.set(rec.id, how);
            s.ends[how] = (s.ends[how] ?? 0) + 1;
          } else if (before === '') {
            this.seen.set(rec.id, how);
            s.ends[how] = (s.ends[how] ?? 0) + 1;
          }
        }
      }
    });
    let pending = 0;
    for (const [id, how] of this.seen) {
      if (how !== '') continue;
      pending++;
      if (!onDisk.has(id)) this.problems.push(`${when}: LOST: ${id} was pending on disk and is gone with no end record`);
    }
    s.maxPendingOnDisk = Math.max(s.maxPendingOnDisk, pending);
    s.maxQueueBytes = Math.max(s.maxQueueBytes, dirBytes(this.queueDir));
    s.maxSegments = Math.max(s.maxSegments, segs.length);
    const temps = [...tempFiles(this.dirs.stateDir).map((n) => `state/${n}`), ...tempFiles(this.dirs.runtimeDir).map((n) => `run/${n}`)];
    s.maxTemps = Math.max(s.maxTemps, temps.length);
    s.maxOtherTemps = Math.max(s.maxOtherTemps, temps.filter((n) => !CONF_TEMP.test(n)).length);
    for (const t of temps) if (!s.tempNames.includes(t)) s.tempNames.push(t);
  }

  /** Puts not ended, and puts that ended other than done or superseded. */
  unfinished(): { pending: string[]; badEnds: Array<[string, string]> } {
    const pending: string[] = [];
    const badEnds: Array<[string, string]> = [];
    for (const [id, how] of this.seen) {
      if (how === '') pending.push(id);
      else if (how !== 'done' && how !== 'done: superseded') badEnds.push([id, how]);
    }
    return { pending, badEnds };
  }

  /** SIGKILLs a daemon (which must still be running), then scans. */
  async kill9(agent: RefreshingAgent, when: string): Promise<void> {
    agent.child.kill('SIGKILL');
    const how = await agent.exited;
    if (how.signal !== 'SIGKILL') throw new Error(`${when}: the daemon had exited by itself (${JSON.stringify(how)}):\n${agent.all().slice(-6000)}`);
    this.kills++;
    if (agent.all().includes('daemon started')) this.startedBeforeKill++;
    this.scan(when);
  }

  quarantineFiles(): string[] {
    return quarantined(this.queueDir);
  }

  segmentNames(): string[] {
    return existsSync(this.queueDir) ? readdirSync(this.queueDir).filter((n) => n.startsWith('seg-')) : [];
  }
}

/** Bytes in the queue dir: what changes when the daemon writes to the outbox. */
export function queueShape(rig: Rig): number {
  return dirBytes(join(rig.dirs.stateDir, 'queue'));
}

/** Files toggled at random (`random`: the soak's seeded PRNG) under the host root until stop() (every 3 to 60 real ms). */
export function hardwareChaos(rig: Rig, random: () => number): { stop(): Promise<number> } {
  let running = true;
  let toggles = 0;
  const loop = (async () => {
    while (running) {
      const key = KEYS[Math.floor(random() * KEYS.length)]!;
      if (pluggedNow(rig).includes(key)) unplug(rig, key);
      else plug(rig, key);
      toggles++;
      await sleepReal(3 + random() * 57);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return toggles;
    },
  };
}

/**
 * The end of a crash run: with the service answering and the hardware fixed
 * at `final`, the running daemon `last` must bring the service to exactly one
 * channel per plugged key (by external_index), keep it there, agree with its
 * record, stop cleanly, and leave a queue in which every put the tracker ever
 * saw has ended done or superseded. Returns the figures for the report.
 */
export async function convergeAndAudit(rig: Rig, tracker: QueueTracker, final: ChannelKey[], last: RefreshingAgent): Promise<Record<string, unknown>> {
  const t0 = Date.now();
  const want = JSON.stringify(expectedIndexes(final));
  try {
    await waitFor('one channel per plugged device', () => JSON.stringify(indexesAtService(rig)) === want, 20_000, 20);
    const convergeMs = Date.now() - t0;
    await waitFor('no sync pending', async () => {
      const st = await cli(rig, ['status']).catch(() => undefined);
      const ch = st?.json.channels as { pendingSyncs?: number; known?: string[] } | undefined;
      return ch?.pendingSyncs === 0 && JSON.stringify(ch.known) === JSON.stringify([...final].sort());
    }, 20_000, 100);
    await sleepReal(1_500); // hundreds of agent s more: nothing else may move
    expect(JSON.stringify(indexesAtService(rig))).toBe(want);
    const atService = serviceChannels(rig);
    expect(new Set(atService.map((c) => c.id)).size).toBe(atService.length);

    // The record (channels --json, its own process) agrees with the service. The command asks the
    // service once, at scale 1: at the rig's scale its request has 100 real ms, which a loaded
    // machine's fresh process and TLS handshake outlast. Asked again if it still says "service: unknown".
    const ch = await waitFor('channels --json with the service reachable', async () => {
      const r = await cli(rig, ['channels'], 1).catch(() => undefined);
      return (r?.json.service as { reachable?: boolean } | undefined)?.reachable === true ? r : undefined;
    }, 20_000, 200);
    const rows = ch.json.channels as Array<{ key: string; detected: boolean; recordedId: string | null; service: { id: string } | null }>;
    for (const r of rows) {
      const on = final.includes(r.key as ChannelKey);
      expect([r.key, r.detected, r.recordedId !== null, r.service !== null]).toEqual([r.key, on, on, on]);
      if (on) expect(r.recordedId).toBe(r.service!.id);
    }
    expect(ch.json.strays).toEqual([]);

    last.child.kill('SIGTERM');
    expect(await last.exited).toEqual({ code: 0, signal: null });
    tracker.scan('after the last daemon stopped');

    // The queue as the command reports it, the daemon stopped.
    const q = await cli(rig, ['queue']);
    const counts = syncCounts(q.json);
    const { pending, badEnds } = tracker.unfinished();
    const quarantinedCount = Number(q.json.quarantined);
    const s = tracker.stats;
    const report = {
      convergeMs,
      syncsPut: s.puts,
      ends: s.ends,
      queueCounts: counts,
      quarantined: quarantinedCount,
      tornTails: s.tornTails,
      corruptOlder: s.corruptOlder,
      maxPendingOnDisk: s.maxPendingOnDisk,
      maxQueueBytes: s.maxQueueBytes,
      maxSegments: s.maxSegments,
      finalSegments: tracker.segmentNames().length,
      maxTemps: s.maxTemps,
      maxOtherTemps: s.maxOtherTemps,
      tempsSeen: s.tempNames.length,
      tempsSeenNames: s.tempNames.map((n) => n.replace(/[0-9a-f]{12}\.tmp$/, '<hex>.tmp').replace(/tmp-\d{10}[0-9a-f]{6}$/, 'tmp-<n>')).filter((n, i, a) => a.indexOf(n) === i),
      final,
      finalChannels: serviceChannels(rig).map((c) => [c.external_index, c.device_model_id]),
      calls: channelCalls(rig),
    };
    expect(tracker.problems).toEqual([]);
    expect(pending).toEqual([]);
    expect(badEnds).toEqual([]);
    expect(counts).toMatchObject({ pending: 0, dead: 0, dropped: 0 });
    // Whole records go out in one write each: a kill cuts none in half, so nothing is quarantined.
    if (s.corruptOlder === 0) expect(quarantinedCount).toBe(0);
    expect(tracker.quarantineFiles().length).toBe(quarantinedCount);
    // Bounded: far under the cap, and no temp file left anywhere.
    expect(s.maxQueueBytes).toBeLessThan(CAP);
    expect(dirBytes(join(rig.dirs.stateDir, 'queue'))).toBeLessThan(64 * 1024);
    // A kill leaves at most the runtime dir's status and heartbeat temps, which the next start sweeps.
    expect(s.maxOtherTemps).toBeLessThanOrEqual(4);
    const stateTemps = tempFiles(rig.dirs.stateDir);
    expect(stateTemps.filter((n) => !CONF_TEMP.test(n))).toEqual([]);
    expect(tempFiles(rig.dirs.runtimeDir)).toEqual([]);
    return { ...report, channelRecordTempsLeft: stateTemps.filter((n) => CONF_TEMP.test(n)).length };
  } catch (err) {
    throw new Error(
      `${(err as Error).message}\ntracker: ${JSON.stringify(tracker.stats)} problems: ${JSON.stringify(tracker.problems.slice(0, 10))}\nlast daemon (tail):\n${last.all().slice(-6000)}`,
      { cause: err },
    );
  }
}
