// Test-only helpers for the auth suites: settings in a temp dir, a scripted
// OAuthEndpoints whose answers the test releases by hand, token grants, a
// logger whose lines the test can read, and a directory that refuses new files.
import { accessSync, chmodSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ClientCredentials, DeviceCode, OAuthEndpoints, PollOutcome, TokenGrant } from '../../agent/api/oauth.js';
import type { Settings } from '../../agent/config/types.js';
import { AgentError } from '../../agent/lib/errors.js';
import { createLogger, type Logger } from '../../agent/lib/logger.js';
import { DEFAULT_QUEUE_MAX_BYTES } from '../../agent/config/settings.js';
import { START_ADVICE } from '../../agent/lib/advice.js';

export const CLIENT: ClientCredentials = { clientId: 'client-id-0001', clientSecret: 'client-secret-0001' };

export function tempDir(prefix = 'c2c-auth-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function settingsIn(dir: string, extra: Partial<Settings> = {}): Settings {
  return {
    configFile: path.join(dir, 'none.json'),
    apiUrl: 'http://127.0.0.1:1',
    tokenFile: path.join(dir, 'credentials.json'),
    firmwareVersion: '1.0.0',
    startAdvice: START_ADVICE,
    stateDir: dir,
    runtimeDir: dir,
    profilesDir: '',
    hostRoot: '/',
    timeScale: 1,
    logLevel: 'info',
    queueMaxBytes: DEFAULT_QUEUE_MAX_BYTES,
    mediaSettleSeconds: 10,
    deleteAfterUpload: false,
    sources: {},
    ...extra,
  };
}

/** A credentials file as saveCredentials would write it, issued `ageMs` before `wallNow`. */
export function writeCredentials(file: string, o: { access: string; refresh?: string; lifetimeS: number; wallNow: number; ageMs?: number }): void {
  const obtained = o.wallNow - (o.ageMs ?? 0);
  const content: Record<string, unknown> = {
    access_token: o.access,
    token_type: 'bearer',
    expires_in: o.lifetimeS,
    obtained_at: new Date(obtained).toISOString(),
    expires_at: new Date(obtained + o.lifetimeS * 1000).toISOString(),
    clock: 'local',
  };
  if (o.refresh !== undefined) content.refresh_token = o.refresh;
  writeFileSync(file, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
}

export function grantOf(access: string, refresh: string | undefined, lifetimeS = 28_800, clockOffsetMs?: number): TokenGrant {
  const g: TokenGrant = { accessToken: access, expiresInSeconds: lifetimeS, tokenType: 'bearer', meta: { status: 200, rateLimit: {} } };
  if (refresh !== undefined) g.refreshToken = refresh;
  if (clockOffsetMs !== undefined) g.meta.clockOffsetMs = clockOffsetMs;
  return g;
}

export interface Deferred<T> {
  promise: Promise<T>;
  resolve: (v: T) => void;
  reject: (e: unknown) => void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export const networkDown = (what = 'POST /v2/auth/token'): AgentError => new AgentError('network', `${what}: connection refused`, { code: 'ECONNREFUSED' });
export const oauthRefusal = (code: string, kind: 'unauthorized' | 'config' = code === 'invalid_client' ? 'config' : 'unauthorized'): AgentError =>
  new AgentError(kind, `POST /v2/auth/token: ${code}`, { status: 400, code });

/**
 * OAuthEndpoints whose every call is recorded and answered by a handler the
 * test sets (default: a refresh the test must settle through `pending`).
 */
export class FakeOAuth implements OAuthEndpoints {
  readonly calls: { op: 'code' | 'poll' | 'refresh' | 'revoke'; arg?: string; signal?: AbortSignal | undefined }[] = [];
  /** Refreshes waiting for the test to settle them, oldest first. */
  readonly pending: Deferred<TokenGrant>[] = [];
  onRefresh: ((refreshToken: string) => Promise<TokenGrant>) | undefined;
  onCode: ((signal?: AbortSignal) => Promise<DeviceCode>) | undefined;
  onPoll: ((deviceCode: string, signal?: AbortSignal) => Promise<PollOutcome>) | undefined;

  count(op: 'code' | 'poll' | 'refresh' | 'revoke'): number {
    return this.calls.filter((c) => c.op === op).length;
  }

  requestDeviceCode(_client: ClientCredentials, signal?: AbortSignal): Promise<DeviceCode> {
    this.calls.push({ op: 'code', signal });
    if (!this.onCode) return Promise.reject(new Error('no device code handler'));
    return this.onCode(signal);
  }

  pollDeviceCode(_client: ClientCredentials, deviceCode: string, signal?: AbortSignal): Promise<PollOutcome> {
    this.calls.push({ op: 'poll', arg: deviceCode, signal });
    if (!this.onPoll) return Promise.reject(new Error('no poll handler'));
    return this.onPoll(deviceCode, signal);
  }

  refresh(_client: ClientCredentials, refreshToken: string): Promise<TokenGrant> {
    this.calls.push({ op: 'refresh', arg: refreshToken });
    if (this.onRefresh) return this.onRefresh(refreshToken);
    const d = deferred<TokenGrant>();
    this.pending.push(d);
    return d.promise;
  }

  revoke(_client: ClientCredentials, token: string): Promise<void> {
    this.calls.push({ op: 'revoke', arg: token });
    return Promise.resolve();
  }
}

export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

export function memoryLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = createLogger('debug', { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) });
  return { logger, lines };
}

/** pino's numeric level for warn. */
export const WARN = 40;

/**
 * A token file whose directory refuses new files (so an atomic save fails
 * while the file itself stays readable). A read-only directory does not stop
 * root, so as root the file gets a name whose temp sibling
 * (`.<name>.<12 hex>.tmp`, 18 bytes longer) exceeds NAME_MAX instead.
 * Returns the path and a function that makes the directory writable again.
 */
export function unwritableTokenFile(parent: string, write: (file: string) => void): { file: string; restore: () => void } {
  const dir = mkdtempSync(path.join(parent, 'ro-'));
  const probe = (): boolean => {
    try {
      writeFileSync(path.join(dir, 'probe'), 'x');
      rmSync(path.join(dir, 'probe'));
      return true;
    } catch {
      return false;
    }
  };
  const normal = path.join(dir, 'credentials.json');
  write(normal);
  chmodSync(dir, 0o500);
  if (!probe()) return { file: normal, restore: () => chmodSync(dir, 0o700) };
  chmodSync(dir, 0o700);
  rmSync(normal);
  const long = path.join(dir, `${'c'.repeat(240)}.json`);
  write(long);
  accessSync(long, constants.R_OK);
  return { file: long, restore: () => undefined };
}

/** A Clock that records every delay it was asked to wait (to catch negative, NaN or infinite ones). */
export function recordingClock<C extends { setTimer(fn: () => void, ms: number): unknown }>(clock: C): { clock: C; delays: number[] } {
  const delays: number[] = [];
  const setTimer = clock.setTimer.bind(clock);
  (clock as { setTimer: (fn: () => void, ms: number) => unknown }).setTimer = (fn, ms) => {
    delays.push(ms);
    return setTimer(fn, ms);
  };
  return { clock, delays };
}

/** The AgentError `fn` throws (anything else thrown, or nothing, fails the test). */
export function thrown(fn: () => unknown): AgentError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AgentError) return err;
    throw err;
  }
  throw new Error('expected an AgentError');
}
