// Shared by the channel suites (channels*.test.ts): a fake hardware tree under
// --host-root for the multi-av-tc profile (firmware 1.6.0), a daemon that reads
// its credentials from the state dir and connects as the seeded device's client
// id, the bundle's CLI commands as separate processes, the service's view of
// the device's channels, and a reader of the outbox's segment files written
// from the format alone (length, CRC-32, JSON body), so what the test counts
// does not come from the agent's own parser.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { type FakeCloud, type SeededDevice } from '../fake-cloud/index.js';
import { BUNDLE, cleanEnv, ensureBuilt, killAll, makeDirs, removeDirs, type AgentDirs, startTestCloud } from './agent-process.js';
import { startRefreshingAgent, writeClientSecret, writeCredentials, type RefreshingAgent } from './refresh-harness.js';

/** The multi-av-tc profile's channels, in its order: a key's place here is its external_index. */
export const KEYS = ['video', 'audio', 'timecode'] as const;
export type ChannelKey = (typeof KEYS)[number];
/** One detection path per key (the profile lists more; one is enough to plug a channel in). */
export const PATHS: Record<ChannelKey, string> = { video: 'dev/video0', audio: 'proc/asound/card1', timecode: 'dev/ttyUSB0' };
export const MODEL: Record<ChannelKey, string> = { video: 'c2c-multi-video', audio: 'c2c-multi-audio', timecode: 'c2c-multi-timecode' };
export const FIRMWARE = '1.6.0';
export const CONNECT_PATH = '/v2/devices/channels';

export interface Rig {
  cloud: FakeCloud;
  device: SeededDevice;
  dirs: AgentDirs;
  /** The fake hardware tree (--host-root). */
  host: string;
  scale: number;
  secretFile: string;
}

/** Credentials as `pair` leaves them, the client secret, and an empty hardware tree (dev/ and proc/asound/ exist). */
export function makeRig(cloud: FakeCloud, dirs: AgentDirs, scale: number): Rig {
  const device = cloud.devices[0]!;
  writeCredentials(dirs, device, 28_800);
  const secretFile = writeClientSecret(dirs, cloud.clientSecret);
  const host = join(dirs.root, 'host');
  mkdirSync(join(host, 'dev'), { recursive: true });
  mkdirSync(join(host, 'proc/asound'), { recursive: true });
  return { cloud, device, dirs, host, scale, secretFile };
}

export function plug(rig: Rig, key: ChannelKey): void {
  const file = join(rig.host, PATHS[key]);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, '');
}

export function unplug(rig: Rig, key: ChannelKey): void {
  rmSync(join(rig.host, PATHS[key]), { force: true });
}

export function pluggedNow(rig: Rig): ChannelKey[] {
  return KEYS.filter((k) => existsSync(join(rig.host, PATHS[k])));
}

/** The daemon (`run`) for the rig: its host root, firmware 1.6.0, the seeded client id, refresh possible. */
export function startChannelAgent(rig: Rig, env: Record<string, string> = {}): RefreshingAgent {
  return startRefreshingAgent({
    cloud: rig.cloud,
    device: rig.device,
    dirs: rig.dirs,
    timeScale: rig.scale,
    secretFile: rig.secretFile,
    env: { C2C_HOST_ROOT: rig.host, C2C_FIRMWARE_VERSION: FIRMWARE, ...env },
  });
}

export interface ServiceChannel {
  id: string;
  external_index: number;
  device_model_id?: string;
}

/** The device's channels as GET /v2/devices/me would list them now. */
export function serviceChannels(rig: Rig): ServiceChannel[] {
  const d = rig.cloud.device(rig.device.id) as { channels?: ServiceChannel[] } | undefined;
  return (d?.channels ?? []).map((c) => ({ id: c.id, external_index: c.external_index, device_model_id: c.device_model_id }));
}

/** Sorted external indexes of the service's channels (duplicates kept). */
export const indexesAtService = (rig: Rig): number[] => serviceChannels(rig).map((c) => c.external_index).sort((a, b) => a - b);
export const expectedIndexes = (keys: readonly ChannelKey[]): number[] => keys.map((k) => KEYS.indexOf(k)).sort((a, b) => a - b);

/** Channel connects (POST /v2/devices/channels) and disconnects the fake has seen from the device. */
export function channelCalls(rig: Rig): { connects: number; disconnects: number } {
  let connects = 0;
  let disconnects = 0;
  for (const e of rig.cloud.journal) {
    if (e.deviceId !== rig.device.id || e.method !== 'POST') continue;
    if (e.path === CONNECT_PATH) connects++;
    else if (e.path.startsWith(`${CONNECT_PATH}/`) && e.path.endsWith('/disconnect')) disconnects++;
  }
  return { connects, disconnects };
}

export interface CliResult {
  exitCode: number;
  json: Record<string, unknown>;
  stderr: string;
}

/**
 * `c2c-agent <args> --json` as its own process, with the daemon's dirs, API URL, host root and
 * firmware. `timeScale` is the rig's by default; a command that asks the service itself (channels)
 * may be given 1: at the rig's scale its request has a few real milliseconds (100 at 300), which a
 * fresh process's TLS handshake on a loaded machine outlasts.
 */
export function cli(rig: Rig, args: string[], timeScale = rig.scale): Promise<CliResult> {
  return new Promise((res, reject) => {
    const child = spawn(process.execPath, [BUNDLE, ...args, '--json'], {
      env: cleanEnv({
        C2C_API_URL: rig.cloud.url,
        C2C_STATE_DIR: rig.dirs.stateDir,
        C2C_RUNTIME_DIR: rig.dirs.runtimeDir,
        C2C_TIME_SCALE: String(timeScale),
        C2C_HOST_ROOT: rig.host,
        C2C_FIRMWARE_VERSION: FIRMWARE,
        C2C_CLIENT_ID: rig.device.clientId,
        C2C_CONFIG: join(rig.dirs.root, 'config.json'),
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      try {
        res({ exitCode: code ?? -1, json: JSON.parse(stdout) as Record<string, unknown>, stderr });
      } catch {
        reject(new Error(`${args.join(' ')} --json printed no JSON (exit ${code}): ${stdout}${stderr}`));
      }
    });
  });
}

export interface KindCounts {
  pending: number;
  done: number;
  dead: number;
  dropped: number;
}

/** The channel-sync counts `queue --json` reports (zeros when the kind is absent). */
export function syncCounts(queueJson: Record<string, unknown>): KindCounts {
  const by = (queueJson.byKind as Record<string, Record<string, { items: number }>> | undefined)?.['channel-sync'];
  return { pending: by?.pending?.items ?? 0, done: by?.done?.items ?? 0, dead: by?.dead?.items ?? 0, dropped: by?.dropped?.items ?? 0 };
}

// The outbox on disk, read independently, and the temp files left on flash: test/support/state-files.ts.
export * from '../support/state-files.js';

/**
 * Builds the bundle once, kills every agent after each test, and closes every
 * fake cloud and removes every unit's dirs at the end. Call once at the top
 * of a test file; the returned function makes one rig at a time scale.
 */
export function useChannelRigs(): (scale: number) => Promise<Rig> {
  const clouds: FakeCloud[] = [];
  const made: AgentDirs[] = [];
  beforeAll(ensureBuilt, 120_000);
  afterEach(killAll);
  afterAll(async () => {
    await killAll();
    for (const c of clouds) await c.close();
    for (const d of made) removeDirs(d);
  });
  return async (scale) => {
    const cloud = await startTestCloud({ timeScale: scale });
    clouds.push(cloud);
    const dirs = makeDirs();
    made.push(dirs);
    return makeRig(cloud, dirs, scale);
  };
}
