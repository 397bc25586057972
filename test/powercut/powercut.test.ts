// Power cuts (issue 28). A camera on set is usually shut down by pulling its
// battery; kill -9 keeps the page cache, a power cut loses it. Here the state
// dir and the media dir live on an ext4 card image on a loop device
// (card.ts); a cut is a SIGKILL of the agent (and of a `pair` running beside
// it) followed at once by a copy of the image file, which lacks whatever the
// mounted filesystem had not written back. The copy is checked with
// `e2fsck -fy` and mounted as the next boot's card. A recorder (recorder.ts)
// records clips the durable way all along.
//
// The cuts are a soak (test/support/soak.ts: 12 in `npm test`, 60 with C2C_SOAK=full;
// C2C_SOAK_POWER_CUTS sets the count, C2C_SOAK_SEED replays the moments). The
// first boots pair the unit through the daemon (a person approves the code),
// cut aimed at the grant (and, when that cut lost the pair, at the code shown
// the next time); then each boot is cut in turn
// while node starts, just after a token refresh reaches the service, just
// after an asset create, while parts are on the wire, just after a clip
// became durable (the agent queueing it), or at any moment once online. The
// last boot runs until the queue is empty.
//
// Held: every card a cut leaves boots (e2fsck leaves no error, the daemon
// reaches online, never exits by itself, and the last one ends with exit 0 on
// SIGTERM); no re-pairing; every durable clip stored once, byte-identical
// (and every other clip the card kept, too); nothing quarantined. A cut
// between the service rotating a refresh token and the new pair reaching
// flash leaves the card with a spent token: the unit then needs pairing.
// Those cuts are counted apart (refresh-window cuts), re-paired by the test,
// and the window is measured on every refresh (the service's answer to the
// agent's "access token refreshed", logged once the pair is on flash).
// Real-time logging's presses go the same way (issue 31): at every boot, once
// online, a `c2c-agent press` through the daemon, each with a timecode of its
// own; every press the daemon acknowledged reaches the service, none refused,
// across the cuts. (A cut between the service taking a press and the agent
// hearing so sends it again: at least once, the duplicates counted.)
// Needs root and loop devices; without them the suite fails in one line.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { readStatus } from '../../agent/daemon/runtime/status-file.js';
import { type FakeCloud, type JournalEntry } from '../fake-cloud/index.js';
import { daemonState, ensureBuilt, killAll, makeDirs, removeDirs, startAgent, startTestCloud, waitFor, type AgentDirs, type AgentProcess } from '../integration/agent-process.js';
import { killCommands, settingsArgs, startCommand, writeSecretFile, type CommandProcess, type JsonEvent } from '../integration/pair-process.js';
import { journalQuiet, sleepReal, TOKEN_PATH } from '../integration/refresh-harness.js';
import { tempFiles } from '../integration/channels-harness.js';
import { ASSETS_PATH, PART, STORAGE, completeNamed, describeAssets, storedProblems, typeOf } from '../integration/uploads-harness.js';
import { Card, MOUNT_OPTIONS, leftovers, prerequisites, releaseAll, sweepStale } from './card.js';
import { soak } from '../support/soak.js';
import { notHung } from '../support/until.js';
import { Recorder } from './recorder.js';

const SCALE = 60;
/** 60 agent-s tokens: a refresh 30-45 agent s after each (0.5-0.75 real s at scale 60), so most boots refresh. */
const LIFETIME_S = 60;
/** Storage answers each part 6 agent s (100 real ms) late: parts are on the wire when a cut comes. */
const PUT_DELAY_MS = 6_000;
const cutSoak = soak('power cuts', ['powerCuts']);
const { seed, random } = cutSoak;
const CUTS = cutSoak.figure('powerCuts');
/**
 * Bounds against a hang, not speed tests (about 2.5 real s a cut on a quiet machine): a boot still going
 * after two minutes hung; ten boots a cut asked for and still short, the cuts are not landing. The test's
 * own timeout, 30 real s a cut on average, is the last resort.
 */
const BOOT_HANG_MS = 120_000;
const MAX_BOOTS = CUTS * 10;
/** About 0.5 MiB of clips a cut: the card holds them all, with room for the state dir (a copy of 128 MiB on tmpfs takes tens of ms). */
const CARD_MIB = CUTS > 20 ? 128 : 64;
const MODES = ['start', 'refresh', 'create', 'put', 'clip', 'any'] as const;
type Mode = (typeof MODES)[number] | 'pair-grant' | 'pair-code';

let cloud: FakeCloud | undefined;
let dirs: AgentDirs | undefined;

beforeAll(async () => {
  const why = prerequisites();
  if (why !== undefined) throw new Error(why);
  sweepStale();
  await ensureBuilt();
}, 120_000);

afterAll(async () => {
  await killCommands();
  await killAll();
  releaseAll();
  await cloud?.close();
  if (dirs !== undefined) removeDirs(dirs);
});

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function writeSynced(file: string, data: Buffer): void {
  const fd = openSync(file, 'w');
  try {
    writeSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

const sizeOf = (file: string): number | undefined => statSync(file, { throwIfNoEntry: false })?.size;

describe('power cuts', () => {
  it('the rig: a copy of the card image taken at once keeps what was synced and lacks what was not', () => {
    const card = Card.create(16);
    try {
      const d = card.mnt;
      const durable = randomBytes(64 * 1024);
      const renamed = randomBytes(64 * 1024);
      const unsynced = randomBytes(256 * 1024);
      // Synced the durable way: data, then the directory entry.
      writeSynced(join(d, 'durable.bin'), durable);
      fsyncDir(d);
      // Data synced, renamed, the directory not synced: the rename is in no committed transaction.
      writeSynced(join(d, 'renamed.bin.part'), renamed);
      renameSync(join(d, 'renamed.bin.part'), join(d, 'renamed.bin'));
      // Never synced.
      writeFileSync(join(d, 'unsynced.bin'), unsynced);
      expect([sizeOf(join(d, 'renamed.bin')), sizeOf(join(d, 'unsynced.bin'))]).toEqual([renamed.length, unsynced.length]);

      const fsck = card.bootFrom(card.cut());
      const after = { durable: sizeOf(join(d, 'durable.bin')), renamedPart: sizeOf(join(d, 'renamed.bin.part')), renamed: sizeOf(join(d, 'renamed.bin')), unsynced: sizeOf(join(d, 'unsynced.bin')) };
      console.log(`power-cut rig self-test (ext4 -o ${MOUNT_OPTIONS}): after the cut, e2fsck exit ${fsck.code}; ${JSON.stringify(after)} (before: durable ${durable.length}, renamed ${renamed.length}, unsynced ${unsynced.length})`);
      expect(readFileSync(join(d, 'durable.bin')).equals(durable)).toBe(true);
      // The unsynced file is gone, or there with fewer bytes than were written (ext4's delayed allocation).
      expect(after.unsynced === undefined || after.unsynced < unsynced.length).toBe(true);
      // The rename is lost with the page cache: the file is still under its old name, whole.
      expect(after.renamed).toBeUndefined();
      expect(readFileSync(join(d, 'renamed.bin.part')).equals(renamed)).toBe(true);
    } finally {
      card.detach();
    }
  });

  it(`the agent boots on every card ${CUTS} power cuts leave: no re-pairing, every durable clip stored once, nothing quarantined`, async () => {
    const t0 = Date.now();
    cloud = await startTestCloud({ timeScale: SCALE, devices: 0, tokenLifetimeSeconds: LIFETIME_S, uploadPartBytes: PART });
    const c = cloud;
    // The fake's agent ms to this process's wall ms (the agent's pino times are wall ms).
    const [a0, w0] = [c.now(), Date.now()];
    const wallOf = (t: number): number => w0 + (t - a0) / SCALE;
    c.control.addFault({ kind: 'delay', path: `${STORAGE}*`, delayMs: PUT_DELAY_MS });
    dirs = makeDirs();
    const secretFile = writeSecretFile(dirs, c.clientSecret);
    const card = Card.create(CARD_MIB);
    const unit: AgentDirs = { root: dirs.root, stateDir: join(card.mnt, 'state'), runtimeDir: dirs.runtimeDir };
    const media = join(card.mnt, 'media');
    const recorder = new Recorder(media, random, {
      minBytes: 100 * 1024,
      maxBytes: 900 * 1024,
      chunkBytes: 128 * 1024,
      chunkEveryMs: 8,
      minPauseMs: 200,
      maxPauseMs: 1000,
      maxClips: 2 * CUTS + 4,
      maxTotalBytes: (CARD_MIB / 2 - 8) * 1024 * 1024,
    });

    const stats = {
      cuts: 0,
      byMode: {} as Record<string, number>,
      aimMissed: 0,
      pairingCuts: 0,
      pairings: 0, // `pair` runs the daemon needed
      pairingsRedone: 0, // pairings run again because a cut came before `pair` said it was done
      windowCuts: 0,
      windowCutsAimed: 0,
      windowRepairs: 0,
      rePaired: 0, // the faults: pairing needed though the unit had been told it was paired, outside a refresh window
      quarantined: 0,
      fsck: {} as Record<string, number>,
      exitedByItself: 0,
    };
    const faults: string[] = [];
    const windowsMs: number[] = []; // real ms from the service's refresh to the new pair on flash
    const windowCutMoments: string[] = []; // each refresh-window cut: its mode, and how long after the refresh reached the service it came
    const deadLetters: string[] = [];
    let approvals = 0;
    /** Whether `pair` said the current authorization is stored (reset when a pairing starts), and the device it named. */
    let pairedReported = false;
    let pairedDevice: string | undefined;
    const credentialsFile = join(unit.stateDir, 'credentials.json');

    interface Boot {
      n: number;
      agent: AgentProcess;
      out: () => string;
      mark: number;
      pair?: CommandProcess;
    }

    const since = (b: Boot, want: (e: JournalEntry) => boolean): boolean => c.journal.slice(b.mark).some(want);
    const isRefreshOrGrant = (e: JournalEntry): boolean => e.method === 'POST' && e.path === TOKEN_PATH;
    const isCreate = (e: JournalEntry): boolean => e.method === 'POST' && e.path === ASSETS_PATH;
    const isPut = (e: JournalEntry): boolean => e.path.startsWith(STORAGE);
    const logLines = (b: Boot): Array<Record<string, unknown>> =>
      b.out().split('\n').flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>];
        } catch {
          return [];
        }
      });

    // The buttons' profile (the generic one with an input on its channel) and the channel plugged, so presses have a channel at the service.
    const host = join(dirs.root, 'host');
    mkdirSync(join(host, 'dev'), { recursive: true });
    writeFileSync(join(host, 'dev', 'video0'), '');
    const profiles = join(dirs.root, 'profiles');
    mkdirSync(profiles, { recursive: true });
    writeFileSync(
      join(profiles, 'buttons.json'),
      JSON.stringify({
        id: 'buttons',
        name: 'Generic camera with a button',
        minFirmware: '0.0.0',
        assetType: 'video',
        heartbeat: { minSeconds: 60, maxSeconds: 255 },
        channels: [{ key: 'main', name: 'Main sensor', assetType: 'video', deviceModelId: 'c2c-generic-camera', detect: { anyPath: ['dev/video0'] }, inputs: [{ index: 0, name: 'Good take' }] }],
        requiredMetadata: [],
      }),
    );
    const unitEnv = { C2C_PROFILES_DIR: profiles, C2C_HOST_ROOT: host, C2C_FIRMWARE_VERSION: '1.0.0' };
    /** Timecodes of the presses the daemon acknowledged (on flash), one of its own each. */
    const pressed: string[] = [];
    let pressCount = 0;
    /** A press through the running daemon, waited for: acknowledged (exit 0) or not (a fault, the daemon being up). */
    const press = async (b: Boot): Promise<void> => {
      const n = ++pressCount;
      const tc = `10:${String(Math.floor(n / 60) % 60).padStart(2, '0')}:${String(n % 60).padStart(2, '0')}:00`;
      const p = startCommand(['press', 'main', '0', '--timecode', tc, '--rate', '25', '--json', ...settingsArgs({ apiUrl: c.url, dirs: unit, timeScale: SCALE })], unit, unitEnv);
      const exit = await p.exited;
      if (exit.code === 0 && /"via":"daemon"/.test(p.lines().join(''))) pressed.push(tc);
      else faults.push(`boot ${b.n}: press ${tc} not acknowledged (${exit.code ?? exit.signal}): ${p.describe()}`);
    };

    const boot = (n: number, record: boolean): Boot => {
      // The runtime dir is tmpfs on a camera: empty at every boot.
      rmSync(unit.runtimeDir, { recursive: true, force: true });
      recorder.powerOn(record);
      const mark = c.journal.length;
      const agent = startAgent({
        apiUrl: c.url,
        dirs: unit,
        timeScale: SCALE,
        env: { C2C_CLIENT_SECRET_FILE: secretFile, C2C_MEDIA_DIR: media, C2C_MEDIA_SETTLE_SECONDS: '1', ...unitEnv },
      });
      let out = '';
      agent.child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
      agent.child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
      return { n, agent, out: () => out, mark };
    };

    const alive = (b: Boot): boolean => b.agent.child.exitCode === null && b.agent.child.signalCode === null;

    /** Waits for the daemon to report one of `states`; it exiting meanwhile is a failure. */
    const reach = async (b: Boot, states: string[], ms = 20_000): Promise<string> => {
      const s = await waitFor(
        `boot ${b.n}: state ${states.join(' or ')}`,
        () => {
          if (!alive(b)) throw new Error(`boot ${b.n}: the daemon exited by itself (${b.agent.child.exitCode ?? b.agent.child.signalCode}):\n${b.out().slice(-4000)}`);
          const st = daemonState(unit, b.agent.pid);
          return st !== undefined && states.includes(st) ? st : undefined;
        },
        ms,
        20,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; now ${daemonState(unit, b.agent.pid)}\n${b.out().slice(-4000)}`);
      });
      return s;
    };

    /** `pair --json` beside the daemon; every code it shows is approved by the person at once. */
    const startPairing = (b: Boot): void => {
      stats.pairings++;
      pairedReported = false;
      b.pair = startCommand(['pair', '--json', ...settingsArgs({ apiUrl: c.url, dirs: unit, timeScale: SCALE })], unit);
    };
    const approved = new Set<string>();
    const events = (p: CommandProcess): JsonEvent[] =>
      p.lines().flatMap((l) => {
        try {
          return [JSON.parse(l) as JsonEvent];
        } catch {
          return [];
        }
      });
    const approveShown = (p: CommandProcess): boolean => {
      let shown = false;
      for (const e of events(p)) {
        if (e.event !== 'code') continue;
        shown = true;
        const code = String(e.user_code);
        if (!approved.has(code)) {
          approved.add(code);
          if (c.control.approve(code)) approvals++;
        }
      }
      return shown;
    };
    const finishPairing = async (b: Boot): Promise<void> => {
      const p = b.pair!;
      await waitFor(`boot ${b.n}: pair to end`, () => (approveShown(p), p.child.exitCode !== null || p.child.signalCode !== null), 30_000, 10);
      await p.exited;
      const last = events(p).at(-1);
      if (last?.event !== 'paired' || last.ok !== true) throw new Error(`boot ${b.n}: pair did not pair:\n${p.describe()}\n${b.out().slice(-3000)}`);
      reported(last);
      b.pair = undefined;
      await reach(b, ['online']);
    };

    const reported = (paired: JsonEvent): void => {
      pairedReported = true;
      pairedDevice = (paired.device as { id?: string } | null)?.id;
    };
    const clientIdOnCard = (): string | undefined => {
      try {
        return (JSON.parse(readFileSync(join(unit.stateDir, 'agent-state.json'), 'utf8')) as { clientId?: string }).clientId;
      } catch {
        return undefined;
      }
    };

    /** What the card says of the authorization, as the fake sees its refresh token. */
    type Auth = 'paired' | 'none' | 'window' | 'superseded';
    const cardAuth = (): Auth => {
      if (!existsSync(credentialsFile)) return 'none';
      const file = JSON.parse(readFileSync(credentialsFile, 'utf8')) as { refresh_token?: string };
      const state = c.tokenState(String(file.refresh_token));
      if (state === 'used') return 'window';
      if (state === 'revoked') return 'superseded'; // a later pairing revoked it, and its pair never reached flash
      if (state === 'valid' || state === 'expired') return 'paired';
      throw new Error(`the card's refresh token is ${state} at the fake`);
    };

    /** The refresh windows of a boot: each "access token refreshed" line against the service's answer before it. */
    const measureWindows = (b: Boot): void => {
      const grants = c.journal.slice(b.mark).filter((e) => isRefreshOrGrant(e) && e.status === 200);
      for (const l of logLines(b)) {
        if (l.msg !== 'access token refreshed' || typeof l.time !== 'number') continue;
        const at = l.time;
        const g = grants.filter((e) => wallOf(e.t) <= at + 1).at(-1);
        if (g !== undefined) windowsMs.push(at - wallOf(g.t));
      }
      for (const l of logLines(b)) if (/dead-lettered/.test(String(l.msg))) deadLetters.push(`boot ${b.n}: ${String(l.msg)}`);
    };

    let auth: Auth = 'none';
    let normalBoots = 0;

    const cut = async (b: Boot, mode: Mode): Promise<void> => {
      if (!alive(b)) {
        stats.exitedByItself++;
        faults.push(`boot ${b.n} (${mode}): the daemon had exited by itself: ${b.out().slice(-2000)}`);
      }
      // The cut: the recorder stops between two steps, the processes die, the card is copied as it is.
      const cutAt = Date.now();
      const durable = recorder.powerOff();
      b.agent.child.kill('SIGKILL');
      b.pair?.child.kill('SIGKILL');
      const copy = card.cut();
      stats.cuts++;
      stats.byMode[mode] = (stats.byMode[mode] ?? 0) + 1;
      await b.agent.exited;
      if (b.pair !== undefined) {
        await b.pair.exited;
        const lastEvent = events(b.pair).at(-1);
        if (lastEvent?.event === 'paired') reported(lastEvent);
      }
      // Whatever the dead process had sent has reached the fake (a refresh sent just before the cut spends its token).
      await journalQuiet(c);
      measureWindows(b);
      const fsck = card.bootFrom(copy);
      stats.fsck[fsck.code] = (stats.fsck[fsck.code] ?? 0) + 1;

      // The recorder's promise: every clip durable at the cut is on the card, whole.
      for (const name of durable) {
        const file = join(media, name);
        if (!existsSync(file) || !readFileSync(file).equals(recorder.clips.get(name)!)) throw new Error(`the rig lost durable clip ${name} in cut ${stats.cuts}: the copy does not model a power cut`);
      }
      const quarantine = join(unit.stateDir, 'queue', 'quarantine');
      const q = existsSync(quarantine) ? readdirSync(quarantine) : [];
      if (q.length > 0) {
        stats.quarantined += q.length;
        faults.push(`cut ${stats.cuts} (${mode}): quarantined ${q.join(', ')}`);
      }
      auth = cardAuth();
      // The card's client id must still be the one the service paired.
      const clientId = clientIdOnCard();
      if (pairedReported && pairedDevice !== undefined && (clientId === undefined || c.deviceIdForClient(clientId) !== pairedDevice)) {
        faults.push(`cut ${stats.cuts} (${mode}): the card's client id ${clientId ?? '(gone)'} is not the paired device ${pairedDevice}`);
      }
      if (auth === 'window') {
        stats.windowCuts++;
        if (mode === 'refresh') stats.windowCutsAimed++;
        const refresh = c.journal.slice(b.mark).filter(isRefreshOrGrant).at(-1);
        windowCutMoments.push(`${mode} ${refresh === undefined ? '?' : (cutAt - wallOf(refresh.t)).toFixed(1)} ms after the refresh`);
      } else if ((auth === 'none' || auth === 'superseded') && pairedReported) {
        faults.push(`cut ${stats.cuts} (${mode}): the credentials \`pair\` reported stored are not on the card (${auth})`);
      }
    };

    /** Runs one boot up to its cut (or, for the last, up to online). */
    const runBoot = async (n: number, final: boolean): Promise<Boot> => {
      const b = boot(n, !final);
      if (auth !== 'paired') {
        // The unit needs pairing: never paired, the pair lost before `pair` said so, or a spent refresh token.
        await reach(b, ['needs-pairing']);
        if (auth === 'window') stats.windowRepairs++;
        else if (pairedReported) stats.rePaired++;
        else if (stats.pairings > 0) stats.pairingsRedone++;
        startPairing(b);
        const pairingCut = !final && auth !== 'window' && stats.pairingCuts < 2;
        if (pairingCut) {
          stats.pairingCuts++;
          const p = b.pair!;
          if (stats.pairingCuts === 1) {
            // Aimed at the grant: the service has issued the pair, the daemon verifies and stores it.
            const hit = await waitFor('the grant', () => (approveShown(p), since(b, (e) => isRefreshOrGrant(e) && e.status === 200)), 20_000, 1).then(() => true, () => false);
            if (!hit) stats.aimMissed++;
            await sleepReal(random() * 40);
            await cut(b, 'pair-grant');
          } else {
            const hit = await waitFor('the code', () => approveShown(p), 20_000, 1).then(() => true, () => false);
            if (!hit) stats.aimMissed++;
            await sleepReal(random() * 300);
            await cut(b, 'pair-code');
          }
          return b;
        }
        await finishPairing(b);
        auth = 'paired';
      } else {
        const mode = MODES[normalBoots % MODES.length]!;
        if (final || mode !== 'start') {
          const s = await reach(b, ['online', 'needs-pairing']);
          if (s === 'needs-pairing') {
            stats.rePaired++;
            faults.push(`boot ${n}: needs pairing on a card that held a live pair: ${b.out().slice(-2000)}`);
            startPairing(b);
            await finishPairing(b);
          }
        }
      }
      if (final || MODES[normalBoots % MODES.length] !== 'start') await press(b);
      if (final) return b;
      const mode = MODES[normalBoots++ % MODES.length]!;
      const aim = (what: string, want: () => boolean, ms = 8_000): Promise<void> =>
        waitFor(what, () => want() || !alive(b), ms, 1).then(
          () => undefined,
          () => void stats.aimMissed++,
        );
      if (mode === 'start') await sleepReal(random() * 400);
      else if (mode === 'refresh') {
        const mark = c.journal.length;
        await aim('a refresh', () => c.journal.slice(mark).some(isRefreshOrGrant));
        await sleepReal(random() * 8);
      } else if (mode === 'create') {
        await aim('an asset create', () => since(b, isCreate));
        await sleepReal(random() * 30);
      } else if (mode === 'put') {
        await aim('a part on the wire', () => since(b, isPut));
        await sleepReal(random() * 400);
      } else if (mode === 'clip') {
        const before = recorder.durable.size;
        await aim('a clip made durable', () => recorder.durable.size > before);
        await sleepReal(random() * 40);
      } else await sleepReal(random() * 1500);
      await cut(b, mode);
      return b;
    };

    const figures = (): string => `${JSON.stringify(stats)}\n${faults.join('\n')}`;
    for (let n = 1; stats.cuts < CUTS; n++) {
      if (n > MAX_BOOTS) throw new Error(`hung: ${n - 1} boots and only ${stats.cuts} cuts: ${figures()}`);
      await notHung(`boot ${n}`, BOOT_HANG_MS, () => runBoot(n, false), figures);
    }

    // The last boot: no recording, no cut; it runs until every clip on the card is stored and the queue is empty.
    const final = await runBoot(stats.cuts + 1, true);
    const onCard = (): string[] => readdirSync(media).filter((n) => n.endsWith('.mp4'));
    /** The start timecode of every press the service took. */
    const pressesAt = (): string[] => c.presses().filter((p) => p.status === 204).map((p) => String((p.body.start as { smpte_timecode?: string } | undefined)?.smpte_timecode));
    let problems: string[] = [];
    /** The queue as the last daemon's status document shows it (undefined until it has one with a queue). */
    const queueNow = () => {
      const r = readStatus(unit.runtimeDir);
      return r.kind === 'ok' && r.doc.pid === final.agent.pid ? r.doc.queue : undefined;
    };
    const queue = await waitFor(
      'every clip on the card stored and the queue empty',
      () => {
        problems = onCard().flatMap((n) => storedProblems(c, n, recorder.clips.get(n)!, typeOf(n)));
        const q = queueNow();
        const pressesLeft = pressed.filter((tc) => !pressesAt().includes(tc));
        if (pressesLeft.length > 0) problems.push(`presses not at the service: ${pressesLeft.join(', ')}`);
        return problems.length === 0 && q !== undefined && (q.byKind.upload?.pending?.items ?? 0) === 0 && (q.byKind.press?.pending?.items ?? 0) === 0 ? q : undefined;
      },
      90_000,
      100,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${problems.join('\n')}\n${describeAssets(c)}\n${final.out().slice(-4000)}\n${JSON.stringify(stats)}\n${faults.join('\n')}`);
    });
    measureWindows(final);
    final.agent.child.kill('SIGTERM');
    const ended = await final.agent.exited;

    const durable = [...recorder.durable];
    const clipsOnCard = onCard();
    const lost = durable.filter((n) => completeNamed(c, n).length === 0);
    const duplicated = [...recorder.clips.keys()].filter((n) => completeNamed(c, n).length > 1);
    const orphans = c.assets().filter((a) => !a.complete);
    const sorted = [...windowsMs].sort((x, y) => x - y);
    const pct = (p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
    const windowFigures = {
      refreshes: sorted.length,
      medianRealMs: +pct(0.5).toFixed(1),
      maxRealMs: +(sorted.at(-1) ?? 0).toFixed(1),
      medianAgentMs: Math.round(pct(0.5) * SCALE),
      maxAgentMs: Math.round((sorted.at(-1) ?? 0) * SCALE),
    };
    const report = {
      seed,
      ...stats,
      codesApproved: approvals,
      codesAtFake: c.journal.filter((e) => e.method === 'POST' && e.path === '/v2/auth/device/code').length,
      clips: recorder.clips.size,
      durable: durable.length,
      clipsOnCard: clipsOnCard.length,
      stored: [...recorder.clips.keys()].filter((n) => completeNamed(c, n).length === 1).length,
      lost: lost.length,
      duplicated: duplicated.length,
      orphans: orphans.length,
      deadLetters: deadLetters.length,
      deadAtEnd: queue.byKind.upload?.dead?.items ?? 0,
      storedNotOnCard: [...recorder.clips.keys()].filter((n) => !clipsOnCard.includes(n) && completeNamed(c, n).length > 0).length,
      tempFilesLeft: tempFiles(unit.stateDir),
      queueQuarantined: queue.quarantined,
      tokenGrantsAtFake: c.journal.filter((e) => isRefreshOrGrant(e) && e.status === 200).length, // refreshes and pairings
      refreshWindow: windowFigures,
      windowCutMoments,
      presses: { acknowledged: pressed.length, atService: c.presses().filter((p) => p.status === 204).length, duplicates: c.presses().filter((p) => p.duplicate).length, refused: c.presses().filter((p) => p.status !== 204).length },
      realSeconds: Math.round((Date.now() - t0) / 1000),
    };
    console.log(`power cuts: ${JSON.stringify(report)}`);
    console.log(
      `power cuts: seed ${seed}; cuts ${stats.cuts}, clips ${recorder.clips.size} (${durable.length} durable), lost ${lost.length}, duplicated ${duplicated.length}, re-paired ${stats.rePaired}, quarantined ${stats.quarantined + queue.quarantined}, refresh-window cuts ${stats.windowCuts} (${stats.windowCutsAimed} of ${stats.byMode.refresh ?? 0} aimed at a refresh; ${((100 * stats.windowCuts) / stats.cuts).toFixed(1)} % of cuts); window over ${windowFigures.refreshes} refreshes: median ${windowFigures.medianRealMs} real ms (${windowFigures.medianAgentMs} agent ms), max ${windowFigures.maxRealMs} real ms (${windowFigures.maxAgentMs} agent ms)`,
    );

    expect(faults).toEqual([]);
    expect(ended).toEqual({ code: 0, signal: null });
    expect(lost).toEqual([]);
    expect(duplicated).toEqual([]);
    expect(stats.rePaired).toBe(0);
    expect(stats.quarantined).toBe(0);
    expect(queue.quarantined).toBe(0);
    expect(stats.exitedByItself).toBe(0);
    // Every clip the card kept (durable or not) is stored once and byte-identical.
    expect(clipsOnCard.flatMap((n) => storedProblems(c, n, recorder.clips.get(n)!, typeOf(n)))).toEqual([]);
    // A create whose record a cut lost is an orphan: nothing was ever sent to it.
    expect(orphans.filter((a) => a.bytesReceived > 0).map((a) => `${a.name} ${a.bytesReceived}`)).toEqual([]);
    // A durable clip is never dead-lettered (a clip the cut took back may be: its file is gone).
    expect(deadLetters.filter((l) => durable.some((n) => l.includes(n)))).toEqual([]);
    // Pairings: the first, those a cut came before `pair` said it was done, and one per refresh-window cut.
    expect(stats.pairings).toBe(1 + stats.pairingsRedone + stats.windowRepairs);
    expect(stats.cuts).toBeGreaterThanOrEqual(CUTS);
    // Every press the daemon acknowledged reached the service, none refused or malformed; none it never made.
    expect(pressed.filter((tc) => !pressesAt().includes(tc))).toEqual([]);
    expect(c.presses().flatMap((p) => p.problems)).toEqual([]);
    expect(pressesAt().filter((tc) => !pressed.includes(tc))).toEqual([]);
  }, CUTS * 30_000 + 240_000);

  it('leaves no mount or loop device behind', () => {
    releaseAll();
    expect(leftovers()).toEqual([]);
  });
});
