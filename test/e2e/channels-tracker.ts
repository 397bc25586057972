// Bookkeeping for the channel crash suite (channels-crash.test.ts), the
// daemon in-process (rig.ts): after each kill (the daemon dead, nothing
// moving) the queue directory is read with the test's own parser
// (test/support/state-files.ts), and every channel-sync put found there is
// followed until a record ends it. A put once seen must stay on disk until its
// end is seen: a kill keeps whatever write() handed the kernel, so anything
// the daemon could have acknowledged is visible to the next scan, and since
// every daemon appends to a segment of its own, which survives at least until
// the next one has written, no end record can come and go unseen between two
// scans. Also: the hardware toggled at random on the rig's clock, and the end
// of a run (converge, then audit).
import { expect } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readOutbox } from '../../agent/outbox/reader.js';
import { dirBytes, quarantined, scanQueueDir, tempFiles } from '../support/state-files.js';
import { MINUTE, type Rig } from './rig.js';

/** The multi-av-tc profile's channels, in its order: a key's place here is its external_index. */
export const KEYS = ['video', 'audio', 'timecode'] as const;
export type ChannelKey = (typeof KEYS)[number];
/** One detection path per key (the profile lists more; one is enough to plug a channel in). */
export const PATHS: Record<ChannelKey, string> = { video: 'dev/video0', audio: 'proc/asound/card1', timecode: 'dev/ttyUSB0' };
export const FIRMWARE = '1.6.0';
export const CONNECT_PATH = '/v2/devices/channels';

export const plug = (r: Rig, key: ChannelKey): void => r.plug(PATHS[key]);
export const unplug = (r: Rig, key: ChannelKey): void => r.unplug(PATHS[key]);
export const pluggedNow = (r: Rig): ChannelKey[] => KEYS.filter((k) => existsSync(join(r.host, PATHS[k])));

export interface ServiceChannel {
  id: string;
  external_index: number;
  device_model_id?: string;
}

/** The device's channels as GET /v2/devices/me would list them now. */
export function serviceChannels(r: Rig): ServiceChannel[] {
  const d = r.cloud.device(r.device.id) as { channels?: ServiceChannel[] } | undefined;
  return (d?.channels ?? []).map((c) => ({ id: c.id, external_index: c.external_index, device_model_id: c.device_model_id }));
}

/** Sorted external indexes of the service's channels (duplicates kept). */
export const indexesAtService = (r: Rig): number[] => serviceChannels(r).map((c) => c.external_index).sort((a, b) => a - b);
export const expectedIndexes = (keys: readonly ChannelKey[]): number[] => keys.map((k) => KEYS.indexOf(k)).sort((a, b) => a - b);

/** Channel connects and disconnects the fake has seen from the device. */
export function channelCalls(r: Rig): { connects: number; disconnects: number } {
  let connects = 0;
  let disconnects = 0;
  for (const e of r.cloud.journal) {
    if (e.deviceId !== r.device.id || e.method !== 'POST') continue;
    if (e.path === CONNECT_PATH) connects++;
    else if (e.path.startsWith(`${CONNECT_PATH}/`) && e.path.endsWith('/disconnect')) disconnects++;
  }
  return { connects, disconnects };
}

/** The agent's channel record (<state-dir>/channels.json): profile key -> channel id. */
function recorded(r: Rig): Record<string, string> {
  const file = join(r.stateDir, 'channels.json');
  if (!existsSync(file)) return {};
  return ((JSON.parse(readFileSync(file, 'utf8')) as { channels?: Record<string, string> }).channels ?? {});
}

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

  constructor(private readonly dirs: { stateDir: string; runtimeDir: string }) {
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

  /** Kills the rig's daemon (which must be running), then scans. */
  kill9(r: Rig, when: string): void {
    if (r.daemon === undefined) throw new Error(`${when}: no daemon running`);
    // Started: it had written its status document.
    if (r.status()?.pid === r.daemonPid()) this.startedBeforeKill++;
    r.kill();
    this.kills++;
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
export function queueShape(r: Rig): number {
  return dirBytes(join(r.stateDir, 'queue'));
}

/** Files toggled at random (`random`: the soak's seeded PRNG) under the host root until stop(), every `minMs` to `maxMs` of agent time (on the rig's clock: no daemon owns these timers). */
export function hardwareChaos(r: Rig, random: () => number, minMs: number, maxMs: number): { stop(): number } {
  let toggles = 0;
  let timer: { cancel(): void } | undefined;
  const next = (): void => {
    timer = r.vc.setTimer(() => {
      const key = KEYS[Math.floor(random() * KEYS.length)]!;
      if (pluggedNow(r).includes(key)) unplug(r, key);
      else plug(r, key);
      toggles++;
      next();
    }, minMs + random() * (maxMs - minMs));
  };
  next();
  return {
    stop: () => {
      timer?.cancel();
      return toggles;
    },
  };
}

/**
 * The end of a crash run: with the service answering and the hardware fixed
 * at `final`, the running daemon must bring the service to exactly one
 * channel per plugged key (by external_index), keep it there, agree with its
 * record, stop cleanly, and leave a queue in which every put the tracker ever
 * saw has ended done or superseded. Returns the figures for the report.
 */
export async function convergeAndAudit(r: Rig, tracker: QueueTracker, final: ChannelKey[]): Promise<Record<string, unknown>> {
  const t0 = r.now();
  const want = JSON.stringify(expectedIndexes(final));
  try {
    await r.until('one channel per plugged device', () => JSON.stringify(indexesAtService(r)) === want, 10 * MINUTE);
    const convergeMs = r.now() - t0;
    // status as the running daemon reports it (its document): no sync pending, the plugged keys known.
    await r.until('no sync pending', () => {
      const ch = (r.status() as { channels?: { pendingSyncs?: number; known?: string[] } } | undefined)?.channels;
      return r.status()?.pid === r.daemonPid() && ch?.pendingSyncs === 0 && JSON.stringify(ch.known) === JSON.stringify([...final].sort());
    }, 10 * MINUTE);
    await r.advance(10 * MINUTE); // nothing else may move
    expect(JSON.stringify(indexesAtService(r))).toBe(want);
    const atService = serviceChannels(r);
    expect(new Set(atService.map((c) => c.id)).size).toBe(atService.length);

    // The record agrees with the service, as `channels` shows them: each plugged key recorded with
    // the id of the service's channel at its index, nothing else recorded, no stray at the service.
    const rec = recorded(r);
    for (const k of KEYS) {
      const on = final.includes(k);
      const at = atService.find((c) => c.external_index === KEYS.indexOf(k));
      expect([k, rec[k] !== undefined, at !== undefined]).toEqual([k, on, on]);
      if (on) expect(rec[k]).toBe(at!.id);
    }
    expect(atService.filter((c) => !Object.values(rec).includes(c.id))).toEqual([]);

    await r.stop();
    tracker.scan('after the last daemon stopped');

    // The queue as `queue` reports it, the daemon stopped: the agent's own reader of the files.
    const q = await readOutbox(join(r.stateDir, 'queue'));
    const by = q.stats.byKind[SYNC_KIND];
    const counts = { pending: by?.pending?.items ?? 0, done: by?.done?.items ?? 0, dead: by?.dead?.items ?? 0, dropped: by?.dropped?.items ?? 0 };
    const { pending, badEnds } = tracker.unfinished();
    const quarantinedCount = q.stats.quarantined;
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
      tempsSeen: s.tempNames.length,
      final,
      finalChannels: serviceChannels(r).map((c) => [c.external_index, c.device_model_id]),
      calls: channelCalls(r),
    };
    expect(tracker.problems).toEqual([]);
    expect(pending).toEqual([]);
    expect(badEnds).toEqual([]);
    expect(counts).toMatchObject({ pending: 0, dead: 0, dropped: 0 });
    // In-process a kill lands between two of the daemon's steps: no record is torn, nothing quarantined.
    expect(s.tornTails).toBe(0);
    expect(quarantinedCount).toBe(0);
    expect(tracker.quarantineFiles()).toEqual([]);
    // Bounded: far under the cap, and no temp file left anywhere, ever.
    expect(s.maxQueueBytes).toBeLessThan(CAP);
    expect(dirBytes(join(r.stateDir, 'queue'))).toBeLessThan(64 * 1024);
    expect(s.tempNames).toEqual([]);
    return report;
  } catch (err) {
    throw new Error(`${(err as Error).message}\ntracker: ${JSON.stringify(tracker.stats)} problems: ${JSON.stringify(tracker.problems.slice(0, 10))}\n${r.tail(40)}`, { cause: err });
  }
}
