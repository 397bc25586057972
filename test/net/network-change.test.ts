// A network that changes under the camera (issue 22): the built bundle runs
// as the daemon inside a network namespace of its own (test/net/netns.ts),
// reaching the fake cloud over a veth link. In the middle of a heartbeat (its
// answer held by a delay fault) and in the middle of an upload (a part on its
// way over an uplink capped with tbf), the link goes down and up, the camera's
// address and route change, and its kept-alive flows are blackholed (no FIN,
// no RST: a lost NAT mapping). For each, the figures: how long until the agent
// gave up on the request it had in flight (if it had to), and until it
// carried on (the next accepted heartbeat; the part stored); at the end,
// nothing lost, nothing sent twice, no re-pairing, and the address watch
// named every address the camera left.
//
// Over HTTPS (the fake's throwaway CA given as caFile); C2C_NET_TLS=0 runs
// it over plain HTTP. The daemon runs at --time-scale C2C_NET_TIME_SCALE (default 10): its
// timers and timeouts are agent time, the kernel's TCP is real time, so the
// figures are printed in both. `C2C_NET_TIME_SCALE=1` gives the figures a
// real camera would see (docs/benchmarks: the command and its output).
//
// Needs root and iproute2 (CI runs as root); without them it fails, naming why.
// C2C_NET_DUMP=FILE writes the storage journal and the agent's storage and
// failure log lines there, for reading a failure.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { startFakeCloud, type FakeCloud, type JournalEntry } from '../fake-cloud/index.js';
import { BUNDLE, cleanEnv, ensureBuilt, makeDirs, removeDirs, daemonState, waitFor, type AgentDirs } from '../integration/agent-process.js';
import { FIRMWARE, makeRig, type Rig } from '../integration/channels-harness.js';
import { HEARTBEAT_PATH } from '../integration/refresh-harness.js';
import { STORAGE, assetsNamed, completeNamed, expectedParts, writeMedia } from '../integration/uploads-harness.js';
import { ADDRESS_GONE_MS, REQUEST_TIMEOUT_MS, MIN_SPACING_MS } from '../../agent/lib/timing.js';
import { createCameraNet, type CameraNet } from './netns.js';
import { tool } from '../support/system-command.js';

const SCALE = Number(process.env.C2C_NET_TIME_SCALE ?? 10);
const TLS = process.env.C2C_NET_TLS !== '0';
if (!(SCALE >= 1 && SCALE <= 60)) throw new Error(`C2C_NET_TIME_SCALE must be 1 to 60, got ${process.env.C2C_NET_TIME_SCALE}`);
/** Real ms for agent ms. */
const real = (agentMs: number): number => agentMs / SCALE;
/** The held heartbeat answer: shorter than the agent's limit, so a link that survives gets it. */
const HOLD_AGENT_MS = 20_000;
/** How long the link stays down: a cable pulled and put back, a Wi-Fi roam. */
const DOWN_REAL_MS = 2_000;
/** Parts of 1 MiB over a capped uplink: two on their way together take about a second. */
const PART = 1024 * 1024;
const UPLINK = '16mbit';
const CLIP_BYTES = 6 * PART + 1234;
/**
 * The longest the agent may take to carry on after an event, agent ms: a
 * request it gave up on is retried on the outbox's backoff, and a heartbeat
 * not before 60 s after the one that failed (the service's spacing rule).
 */
const UPLOAD_CARRY_ON_MS = REQUEST_TIMEOUT_MS + 30_000;
const HEARTBEAT_CARRY_ON_MS = REQUEST_TIMEOUT_MS + MIN_SPACING_MS + 30_000;
/** Slack in real ms for what does not scale (the kernel, node's start, the poll). */
const SLACK_MS = 4_000;

type Phase = 'heartbeat' | 'upload';
type EventName = 'down-up' | 'address' | 'blackhole';
interface Figure {
  phase: Phase;
  event: EventName;
  detail: string;
  /** Real ms from the event to the agent giving up on what it had in flight; undefined when it never had to. */
  noticedMs?: number;
  /** Real ms from the event to the next accepted heartbeat, or to the interrupted part stored. */
  carriedOnMs: number;
}

let cloud: FakeCloud;
let net: CameraNet;
let dirs: AgentDirs;
let rig: Rig;
let agent: ChildProcess;
let stdout = '';
const figures: Figure[] = [];
const clips = new Map<string, Buffer>();
/** The addresses the camera moved away from, in order. */
const leftAddresses: string[] = [];

interface LogLine {
  time: number;
  msg: string;
  [k: string]: unknown;
}

function logLines(): LogLine[] {
  return stdout.split('\n').flatMap((l) => {
    try {
      const o = JSON.parse(l) as LogLine;
      return typeof o.time === 'number' ? [o] : [];
    } catch {
      return [];
    }
  });
}

const firstLine = (since: number, match: (l: LogLine) => boolean): LogLine | undefined => logLines().find((l) => l.time >= since && match(l));
const heartbeatAnswered = (l: LogLine): boolean => l.msg === 'http' && l.path === HEARTBEAT_PATH && l.status === 204;
const heartbeatFailed = (l: LogLine): boolean => l.msg === 'http request failed' && l.path === HEARTBEAT_PATH;
const isStorage = (e: JournalEntry): boolean => e.path.startsWith(STORAGE);
const stored = (e: JournalEntry): boolean => isStorage(e) && e.status >= 200 && e.status < 300;

/** Problems with `name` at the fake: empty when exactly one asset is complete and byte-identical part by part. */
function storedProblems(name: string): string[] {
  const data = clips.get(name)!;
  const all = assetsNamed(cloud, name);
  const done = completeNamed(cloud, name);
  if (all.length !== 1 || done.length !== 1) return [`${name}: ${done.length} complete assets of ${all.length}`];
  const a = done[0]!;
  const want = expectedParts(data, Math.ceil(data.length / PART));
  if (a.parts.length !== want.length) return [`${name}: ${a.parts.length} parts, expected ${want.length}`];
  return a.parts.flatMap((p, i) => (p.receivedBytes === want[i]!.bytes && p.sha256 === want[i]!.sha256 ? [] : [`${name}: part ${i} differs`]));
}

function startDaemon(): void {
  const media = join(dirs.root, 'media');
  agent = spawn(
    tool('ip'),
    ['netns', 'exec', net.ns, process.execPath, BUNDLE, 'run', '--api-url', net.url, '--time-scale', String(SCALE), '--state-dir', dirs.stateDir, '--runtime-dir', dirs.runtimeDir],
    {
      env: cleanEnv({
        C2C_CONFIG: join(dirs.root, 'config.json'),
        C2C_CLIENT_ID: rig.device.clientId,
        C2C_CLIENT_SECRET_FILE: rig.secretFile,
        C2C_HOST_ROOT: rig.host,
        C2C_FIRMWARE_VERSION: FIRMWARE,
        C2C_MEDIA_DIR: media,
        C2C_MEDIA_SETTLE_SECONDS: '1',
        C2C_LOG_LEVEL: 'debug',
        ...(TLS && { C2C_CA_FILE: cloud.caFile }),
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  agent.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  agent.stderr?.on('data', (d: Buffer) => (stdout += d.toString()));
}

const tail = (): string => stdout.split('\n').filter((l) => !l.includes('"level":20')).slice(-15).join('\n');

async function online(): Promise<void> {
  await waitFor('state online', () => daemonState(dirs) === 'online', real(120_000) + SLACK_MS, 100).catch((err: Error) => {
    throw new Error(`${err.message}\nagent output:\n${tail()}`);
  });
}

async function event(name: EventName): Promise<string> {
  switch (name) {
    case 'down-up': {
      net.linkDown();
      await new Promise((r) => setTimeout(r, DOWN_REAL_MS)); // real time: the kernel's link is down for real, and its TCP does not scale
      net.linkUp();
      return `${net.camIf} down ${DOWN_REAL_MS / 1000} s, up`;
    }
    case 'address': {
      const { from, to } = net.changeAddress();
      leftAddresses.push(from);
      return `${from} -> ${to}, new route`;
    }
    case 'blackhole':
      return `flows from ports ${net.blackholeFlows().join(', ') || '(none)'} dropped`;
  }
}

/** A heartbeat held at the fake, the event while it waits, then the next accepted one. */
async function duringHeartbeat(name: EventName): Promise<void> {
  await online();
  const since = cloud.now();
  const fault = cloud.control.addFault({ kind: 'delay', path: HEARTBEAT_PATH, count: 1, delayMs: HOLD_AGENT_MS });
  try {
    await waitFor('a heartbeat held at the fake', () => cloud.journal.some((e) => e.path === HEARTBEAT_PATH && e.t >= since && e.faults !== undefined && e.status === 0), real(MIN_SPACING_MS * 5) + SLACK_MS, 10);
  } finally {
    fault.remove();
  }
  const t0 = Date.now();
  const detail = await event(name);
  const answered = await waitFor('an accepted heartbeat after the event', () => firstLine(t0, heartbeatAnswered), real(HEARTBEAT_CARRY_ON_MS) + SLACK_MS, 50).catch((err: Error) => {
    throw new Error(`${name} during a heartbeat: ${err.message}\nagent output:\n${tail()}`);
  });
  const failed = firstLine(t0, heartbeatFailed);
  figures.push({ phase: 'heartbeat', event: name, detail, ...(failed !== undefined && failed.time < answered.time && { noticedMs: failed.time - t0 }), carriedOnMs: answered.time - t0 });
  net.clearBlackhole();
}

/** A clip on its way over the capped uplink, the event while a part is half sent, then that part stored and the clip complete. */
async function duringUpload(name: EventName, index: number): Promise<void> {
  await online();
  const file = `net-${index}-${name}.mp4`;
  clips.set(file, writeMedia(join(dirs.root, 'media', file), CLIP_BYTES));
  // Mid-upload: two parts stored, the third on its way.
  const inFlight = await waitFor(
    'a part half sent',
    () => {
      const asset = assetsNamed(cloud, file)[0];
      if (asset === undefined) return undefined;
      const puts = cloud.journal.filter((e) => isStorage(e) && e.path.includes(asset.id));
      return puts.filter(stored).length >= 2 ? puts.find((e) => e.status === 0 && (e.bodyBytes ?? 0) > PART / 8 && (e.bodyBytes ?? 0) < PART / 2) : undefined;
    },
    real(120_000) + 30_000,
    10,
  );
  const t0 = Date.now();
  const detail = await event(name);
  const key = inFlight.path;
  const storedAgain = await waitFor('the interrupted part stored', () => cloud.journal.find((e) => e.path === key && e.status >= 200 && e.status < 300), real(UPLOAD_CARRY_ON_MS) + SLACK_MS + 20_000, 20).catch((err: Error) => {
    throw new Error(`${name} during an upload: ${err.message}\nagent output:\n${tail()}`);
  });
  const storedAt = Date.now();
  const failed = firstLine(t0, (l) => l.msg === 'storage put failed');
  figures.push({
    phase: 'upload',
    event: name,
    detail: `${detail}; ${storedAgain === inFlight ? 'the PUT went on' : 'sent again'}`,
    ...(failed !== undefined && { noticedMs: failed.time - t0 }),
    carriedOnMs: storedAt - t0,
  });
  await waitFor(`${file} complete`, () => storedProblems(file).length === 0, real(120_000) + 60_000, 50);
  net.clearBlackhole();
}

function table(): string {
  const cell = (ms: number | undefined): string => (ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s (${Math.round((ms * SCALE) / 1000)} s agent)`);
  const rows = figures.map((f) => `| ${f.phase} | ${f.event} | ${cell(f.noticedMs)} | ${cell(f.carriedOnMs)} | ${f.detail} |`);
  return [
    `network-change figures over ${TLS ? 'HTTPS' : 'plain HTTP'} at --time-scale ${SCALE} (real time; agent time = real x ${SCALE}), node ${process.version}:`,
    '| during | event | gave up on the request after | carried on after | what happened |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

describe('a network that changes under the camera', () => {
  beforeAll(async () => {
    await ensureBuilt();
    cloud = await startFakeCloud({ timeScale: SCALE, uploadPartBytes: PART, tls: TLS });
    dirs = makeDirs();
    rig = makeRig(cloud, dirs, SCALE);
    net = await createCameraNet(Number(new URL(cloud.url).port), TLS ? 'https' : 'http');
    startDaemon();
  }, 180_000);

  afterAll(async () => {
    agent?.kill('SIGKILL');
    await net?.close();
    await cloud?.close();
    if (dirs !== undefined) removeDirs(dirs);
    if (figures.length > 0) process.stdout.write(`\n${table()}\n\n`);
    if (process.env.C2C_NET_DUMP) {
      const { writeFileSync } = await import('node:fs');
      writeFileSync(process.env.C2C_NET_DUMP, JSON.stringify({ journal: cloud.journal.filter(isStorage), log: logLines().filter((l) => /storage|http request failed/.test(l.msg)) }, null, 1));
    }
  });

  const events: EventName[] = ['down-up', 'address', 'blackhole'];
  for (const name of events) {
    it(`carries on after ${name} in the middle of a heartbeat`, async () => {
      await duringHeartbeat(name);
      const f = figures.at(-1)!;
      expect(f.carriedOnMs).toBeLessThan(real(HEARTBEAT_CARRY_ON_MS) + SLACK_MS);
    }, real(HEARTBEAT_CARRY_ON_MS + MIN_SPACING_MS * 6) + 60_000);
  }

  describe('uploads over the capped uplink', () => {
    beforeAll(() => net.throttle(UPLINK));

    events.forEach((name, i) => {
      it(`carries on after ${name} in the middle of an upload`, async () => {
        await duringUpload(name, i);
        const f = figures.at(-1)!;
        expect(f.carriedOnMs).toBeLessThan(real(UPLOAD_CARRY_ON_MS) + SLACK_MS + 20_000);
      }, real(UPLOAD_CARRY_ON_MS + 240_000) + 120_000);
    });
  });

  it('lost nothing, sent nothing twice, never paired again', async () => {
    net.throttle(undefined);
    for (const name of clips.keys()) expect(storedProblems(name)).toEqual([]);
    // The agent sends a part again only after a PUT of it failed: a part whose
    // answer it had is never sent again. (A PUT given up on may still have
    // reached storage whole, its answer lost: then storage has it twice.)
    const lines = logLines();
    const answered = lines.filter((l) => l.msg === 'storage put' && typeof l.status === 'number' && l.status < 300).map((l) => l.path as string);
    expect(answered.length).toBe(new Set(answered).size);
    const copies = new Map<string, number>();
    for (const e of cloud.journal.filter(stored)) copies.set(e.path, (copies.get(e.path) ?? 0) + 1);
    for (const [path, n] of copies) {
      const givenUp = lines.filter((l) => l.msg === 'storage put failed' && l.path === path).length;
      expect({ path, extraCopies: n - 1 }).toEqual({ path, extraCopies: Math.min(n - 1, givenUp) });
    }
    expect(cloud.assets().filter((a) => a.deviceId === rig.device.id).length).toBe(clips.size);
    expect(cloud.journal.filter((e) => e.path.startsWith('/v2/auth/'))).toEqual([]);
    const referee = cloud.referee(rig.device.id);
    expect(referee.tooSoon).toBe(0);
    expect(logLines().some((l) => /needs-pairing/.test(JSON.stringify(l)))).toBe(false);
    // Still online, or back there (a heartbeat the last event cut may have made it offline for a while).
    await online();
    // The address watch saw each address the camera left go (and closed what was on it).
    const goneLogged = (a: string): boolean => logLines().some((l) => l.msg.startsWith('network changed:') && Array.isArray(l.gone) && l.gone.includes(a));
    await waitFor('the address watch to name every address left', () => leftAddresses.every(goneLogged), ADDRESS_GONE_MS + 10_000, 100).catch((err: Error) => {
      throw new Error(`${err.message}: left ${leftAddresses.join(', ')}; logged ${logLines().filter((l) => l.msg.startsWith('network changed:')).map((l) => l.msg).join(' | ') || 'nothing'}`);
    });
  });
});
