// What the pair and unpair suites share: a fake cloud at the suite's time
// scale, fresh units (state dir, runtime dir, client secret file), and the
// steps a person takes (approve the code shown) or a test looks at (the
// fake's journal, the daemon's status).
import { expect, beforeAll, afterAll, afterEach } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type FakeCloud, type FakeCloudOptions, type JournalEntry } from '../fake-cloud/index.js';
import { daemonState, ensureBuilt, killAll, makeDirs, removeDirs, startAgent, status, waitFor, type AgentDirs, type AgentProcess, type StatusResult, startTestCloud, cloudFetch } from './agent-process.js';
import { killCommands, settingsArgs, startCommand, writeSecretFile, type AgentSettings, type CommandProcess, type JsonEvent } from './pair-process.js';

export const TOKEN_PATH = '/v2/auth/token';
export const CODE_PATH = '/v2/auth/device/code';
export const REVOKE_PATH = '/v2/auth/revoke';
/** The daemons here run in real time, so their credentials poll (every 10 agent s) cannot stand in for SIGHUP. */
export const DAEMON_SCALE = 1;

export interface Unit {
  cloud: FakeCloud;
  dirs: AgentDirs;
  s: AgentSettings;
  secretFile: string;
  credentials: string;
}

export interface PairingFixture {
  readonly cloud: FakeCloud;
  /** A fresh unit (its own state dir, so its own client id) holding the right secret for `c`. */
  unit(c?: FakeCloud, timeScale?: number): Unit;
  /** Another fake cloud (another time scale, say), closed after the suite. */
  otherCloud(options: FakeCloudOptions): Promise<FakeCloud>;
}

export function usePairingCloud(timeScale: number): PairingFixture {
  let cloud: FakeCloud | undefined;
  const others: FakeCloud[] = [];
  const allDirs: AgentDirs[] = [];
  beforeAll(async () => {
    await ensureBuilt();
    cloud = await startTestCloud({ timeScale, devices: 0 });
  }, 120_000);
  afterEach(async () => {
    await killCommands();
    await killAll();
  });
  afterAll(async () => {
    await killCommands();
    await killAll();
    await cloud?.close();
    for (const c of others) await c.close();
    for (const d of allDirs) removeDirs(d);
  });
  const fixture: PairingFixture = {
    get cloud() {
      if (!cloud) throw new Error('fixture used outside a test');
      return cloud;
    },
    unit(c = fixture.cloud, scale = timeScale) {
      const dirs = makeDirs();
      allDirs.push(dirs);
      const secretFile = writeSecretFile(dirs, c.clientSecret);
      return { cloud: c, dirs, secretFile, s: { apiUrl: c.url, dirs, timeScale: scale, secretFile }, credentials: join(dirs.stateDir, 'credentials.json') };
    },
    async otherCloud(options) {
      const c = await startTestCloud(options);
      others.push(c);
      return c;
    },
  };
  return fixture;
}

/** `pair --json` for `u`, running. */
export function pair(u: Unit, extra: string[] = [], s: AgentSettings = u.s): CommandProcess {
  return startCommand(['pair', '--json', ...extra, ...settingsArgs(s)], u.dirs);
}

export const isEvent =
  (name: string) =>
  (e: JsonEvent): boolean =>
    e.event === name;

export async function expectExit(p: CommandProcess, code: number): Promise<void> {
  const r = await p.exited;
  if (r.code !== code || r.signal !== null) throw new Error(`expected exit ${code}, got ${JSON.stringify(r)}\n${p.describe()}`);
}

/** The contract's "one stderr line": `c2c-agent: ...` and nothing else. */
export function oneLine(stderr: string): string {
  const lines = stderr.split('\n');
  expect(lines.at(-1)).toBe('');
  expect(lines).toHaveLength(2);
  expect(lines[0]).toMatch(/^c2c-agent: \S/);
  return lines[0]!;
}

/** A person approving the code shown, once the agent has polled at least once. */
export async function approveAfterWaiting(p: CommandProcess, c: FakeCloud): Promise<JsonEvent> {
  const code = await p.waitForEvent('the code', isEvent('code'));
  await p.waitForEvent('a waiting event', isEvent('waiting'));
  expect(c.control.approve(code.user_code as string)).toBe(true);
  return code;
}

/** Pairs `u` now; the `paired` event. */
export async function pairNow(u: Unit): Promise<JsonEvent> {
  const p = pair(u);
  await approveAfterWaiting(p, u.cloud);
  await expectExit(p, 0);
  return p.events().at(-1)!;
}

export function clientIdOf(u: Unit): string {
  return (JSON.parse(readFileSync(join(u.dirs.stateDir, 'agent-state.json'), 'utf8')) as { clientId: string }).clientId;
}

export function accessTokenOf(u: Unit): string {
  return (JSON.parse(readFileSync(u.credentials, 'utf8')) as { access_token: string }).access_token;
}

/** What a cancelled or failed pairing may leave in the state dir: the client id store, nothing else (no temp file). */
export function expectNothingStored(u: Unit): void {
  expect(existsSync(u.credentials)).toBe(false);
  const left = existsSync(u.dirs.stateDir) ? readdirSync(u.dirs.stateDir) : [];
  expect(left.filter((n) => n !== 'agent-state.json')).toEqual([]);
}

/** The fake's journal entries of POST `path` from index `since` on. */
export function posts(c: FakeCloud, since: number, path: string): JournalEntry[] {
  return c.journal.slice(since).filter((e) => e.method === 'POST' && e.path === path);
}

/** GET /v2/devices/me with `accessToken`, as the service answers it now. */
export async function getMe(c: FakeCloud, accessToken: string): Promise<number> {
  const res = await cloudFetch(`${c.url}/v2/devices/me`, { headers: { authorization: `Bearer ${accessToken}`, 'x-client-version': '1.0.0' } });
  await res.arrayBuffer();
  return res.status;
}

/** `c2c-agent run` for `u`, started with whatever credentials `u` has (none: needs-pairing). */
export function startDaemon(u: Unit): AgentProcess {
  return startAgent({ apiUrl: u.cloud.url, dirs: u.dirs, timeScale: DAEMON_SCALE, env: { C2C_CLIENT_SECRET_FILE: u.secretFile } });
}

/** Polls `status --json` until the daemon of `u` is in `state`. */
export async function reach(u: Unit, agent: AgentProcess, state: string, withinMs: number): Promise<StatusResult> {
  let last: StatusResult | undefined;
  try {
    // `withinMs` is for the daemon: its status.json read here every 10 ms, no process started per look (a
    // `status --json` every 50 ms spent the window starting processes on a loaded machine). Then the command
    // says so, bounded against a hang only.
    await waitFor(`daemon state ${state} in status.json`, () => daemonState(u.dirs, agent.pid) === state, withinMs, 10);
    return await waitFor(
      `daemon state ${state}`,
      async () => {
        last = await status(u.dirs, u.cloud.url, DAEMON_SCALE).catch(() => undefined);
        return last?.json.state === state ? last : undefined;
      },
      30_000,
      100,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last status: ${JSON.stringify(last?.json)}\ndaemon output:\n${agent.output()}`);
  }
}
