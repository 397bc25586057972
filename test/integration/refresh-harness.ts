// Shared by the token-refresh suites (refresh*.test.ts): a daemon that reads
// its credentials from <state-dir>/credentials.json and can refresh them
// (client id and secret file), its whole output, the journal's view of one
// device's OAuth calls, re-pairing through the fake's device-code flow, and
// waits on `status --json`.
import { chmodSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FakeCloud, JournalEntry, SeededDevice } from '../fake-cloud/index.js';
import { daemonState, startAgent, status, waitFor, type AgentDirs, type AgentProcess, type StatusResult, cloudFetch } from './agent-process.js';

export const TOKEN_PATH = '/v2/auth/token';
export const HEARTBEAT_PATH = '/v2/devices/heartbeat';

export interface Pair {
  accessToken: string;
  refreshToken: string;
}

export const credentialsFile = (dirs: AgentDirs): string => join(dirs.stateDir, 'credentials.json');

/** What `pair` would have written: the pair, obtained now, lasting the fake's lifetime. 0600. */
export function writeCredentials(dirs: AgentDirs, pair: Pair, lifetimeSeconds: number): void {
  mkdirSync(dirs.stateDir, { recursive: true, mode: 0o700 });
  const now = Date.now();
  const body = {
    access_token: pair.accessToken,
    refresh_token: pair.refreshToken,
    token_type: 'bearer',
    expires_in: lifetimeSeconds,
    obtained_at: new Date(now).toISOString(),
    expires_at: new Date(now + lifetimeSeconds * 1000).toISOString(),
    clock: 'local',
  };
  const file = credentialsFile(dirs);
  writeFileSync(file, `${JSON.stringify(body, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
}

/** The credentials file as JSON; throws (with no secret in the message) when it is missing or torn. */
export function readCredentials(dirs: AgentDirs): { access_token?: unknown; refresh_token?: unknown } {
  const text = readFileSync(credentialsFile(dirs), 'utf8');
  try {
    return JSON.parse(text) as { access_token?: unknown; refresh_token?: unknown };
  } catch {
    throw new Error(`credentials file is not JSON (${text.length} bytes)`);
  }
}

/** The client secret file the daemon refreshes with (0600: the agent refuses anything looser). */
export function writeClientSecret(dirs: AgentDirs, secretValue: string): string {
  const file = join(dirs.root, 'client-secret');
  writeFileSync(file, `${secretValue}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return file;
}

/** Temp files the credentials writer leaves when killed between open and rename. */
export function credentialTemps(dirs: AgentDirs): string[] {
  try {
    return readdirSync(dirs.stateDir).filter((n) => /^\.credentials\.json\.[0-9a-f]{12}\.tmp$/.test(n));
  } catch {
    return [];
  }
}

export interface RefreshingAgent extends AgentProcess {
  /** Everything it printed on stdout and stderr, in full. */
  all(): string;
  /** stdout parsed as pino lines (anything else skipped). */
  lines(): Array<Record<string, unknown>>;
}

export function startRefreshingAgent(o: { cloud: FakeCloud; device: SeededDevice; dirs: AgentDirs; timeScale: number; secretFile: string; env?: Record<string, string> }): RefreshingAgent {
  const agent = startAgent({
    apiUrl: o.cloud.url,
    dirs: o.dirs,
    timeScale: o.timeScale,
    env: { C2C_CLIENT_ID: o.device.clientId, C2C_CLIENT_SECRET_FILE: o.secretFile, ...o.env },
  });
  let out = '';
  let stdout = '';
  agent.child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
    stdout += d.toString();
  });
  agent.child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  return {
    ...agent,
    all: () => out,
    lines: () =>
      stdout.split('\n').flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>];
        } catch {
          return [];
        }
      }),
  };
}

/** One device's journal entries, optionally only one method and path. */
export function entriesOf(cloud: FakeCloud, deviceId: string, method?: string, path?: string): JournalEntry[] {
  return cloud.journal.filter((e) => e.deviceId === deviceId && (method === undefined || e.method === method) && (path === undefined || e.path === path));
}

/**
 * Waits until the daemon reports `state`, and returns `status --json` saying so. It reads the
 * daemon's status document (status.json) in this process until it says so, then runs the command:
 * a `status --json` every 100 ms kept a core busy starting processes for the whole wait (about 0.2
 * CPU s each). The failure says the last status and the agent's output.
 */
export async function reachState(o: { cloud: FakeCloud; dirs: AgentDirs; timeScale: number; agent: AgentProcess; state: string; timeoutMs: number }): Promise<StatusResult> {
  let last: StatusResult | undefined;
  try {
    await waitFor(`state ${o.state} in status.json`, () => daemonState(o.dirs, o.agent.pid) === o.state, o.timeoutMs, 10);
    return await waitFor(
      `state ${o.state}`,
      async () => {
        last = await status(o.dirs, o.cloud.url, o.timeScale).catch(() => undefined);
        return last?.json.state === o.state ? last : undefined;
      },
      o.timeoutMs,
      100,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last status: ${JSON.stringify(last?.json)}\nagent output (tail):\n${o.agent.output()}`);
  }
}

/** Resolves once the journal has not grown for `quietMs` real ms: whatever a dead client sent has been processed. */
export function journalQuiet(cloud: FakeCloud, quietMs = 25, timeoutMs = 5_000): Promise<true> {
  let length = -1;
  let since = Date.now();
  return waitFor(
    'a quiet journal',
    () => {
      if (cloud.journal.length !== length) {
        length = cloud.journal.length;
        since = Date.now();
        return false;
      }
      return Date.now() - since >= quietMs;
    },
    timeoutMs,
    5,
  );
}

/**
 * The person pairs the unit again (device code, approve, one poll): the
 * fake revokes the device's old tokens and issues a fresh pair.
 */
export async function repair(cloud: FakeCloud, device: SeededDevice): Promise<Pair> {
  const form = (rest: Record<string, string>): Parameters<typeof cloudFetch>[1] => ({
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-client-version': '1.0.0' },
    body: new URLSearchParams({ client_id: device.clientId, client_secret: cloud.clientSecret, ...rest }).toString(),
  });
  const code = (await (await cloudFetch(`${cloud.url}/v2/auth/device/code`, form({ scope: 'asset_create offline' }))).json()) as { device_code: string; user_code: string };
  if (!cloud.control.approve(code.user_code)) throw new Error('the fake did not know the user code it just issued');
  const res = await cloudFetch(`${cloud.url}${TOKEN_PATH}`, form({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: code.device_code }));
  const tokens = (await res.json()) as { access_token?: string; refresh_token?: string };
  if (res.status !== 200 || !tokens.access_token || !tokens.refresh_token) throw new Error(`re-pairing failed: HTTP ${res.status}`);
  return { accessToken: tokens.access_token, refreshToken: tokens.refresh_token };
}

export const sleepReal = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
