// The one place the rest of the agent asks for an access token, and the only
// code that refreshes one. The api client reads `current()` on every request;
// the daemon calls `reload()` when it must look again (start-up, SIGHUP, a
// changed file), `refresh()` after a 401, and runs this as a unit so the
// token is renewed ahead of its expiry on the monotonic clock.
//
// A refresh token is single use. The order is therefore fixed: ask, write the
// new pair to flash (lib/atomic-write), only then use it. A refresh whose
// answer is lost (power cut, network) leaves the old, used-up pair on disk;
// the next refresh is refused and the unit needs pairing. That is the one
// way a healthy unit can lose its authorization, and it is logged as such.
//
// The 401 policy lives in auth/ (this file and reauthorization.ts), nowhere
// else: every rotation spends a single-use refresh token, so whoever meets a
// 401 asks here and never refreshes on its own. Whether a refused request was
// sent with an older token is asked here too (`sentWithOlderToken`: this file
// alone knows when each token came into use, whoever replaced it). A 401 or
// 403 to a call that proves the authorization (GET /v2/devices/me, a
// heartbeat) is reauthorization.ts's;
// a 401 to any other call (assets, channels) is `callRefused()`'s: at most one
// rotation for such refusals, none within MIN_REFRESH_GAP_MS of another
// refresh, and once a call has been refused with a token rotated for exactly
// that reason, later refusals of other calls are not about the token (the
// heartbeat and GET /v2/devices/me would say so if it were dead).
import { statSync } from 'node:fs';
import type { ClientCredentials, OAuthEndpoints } from '../api/oauth.js';
import type { Settings } from '../config/types.js';
import type { Clock, Timer } from '../lib/clock.js';
import { Backoff } from '../lib/backoff.js';
import type { EventBus } from '../core/event-bus.js';
import { AgentError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { loadCredentials, type Credentials } from './credentials.js';
import { credentialsOf, fileFromGrant, removeCredentials, saveCredentials, sweepCredentialTemps, type CredentialsFile } from './credentials-store.js';
import { tokenKeyOf } from './credentials-systemd.js';
import { refreshDelay } from './refresh-policy.js';

/** refreshed: a new pair is in use; unavailable: nothing to refresh with; refused: the service said no (needs pairing). */
export type RefreshResult = 'refreshed' | 'unavailable' | 'refused';

export interface TokenSource {
  /** The access token to send now; undefined before a successful reload(). */
  current(): string | undefined;
  /** Reads the credentials again; throws AgentError('unauthorized') when there are none. */
  reload(): void;
  /**
   * A cheap fingerprint (inode, size, mtime) of the credentials file, or
   * undefined while it is absent. Absent when the token does not come from a
   * file (C2C_TOKEN): nothing to watch then.
   */
  fingerprint?: () => string | undefined;
  /**
   * Refreshes now (one at a time: a second caller shares the first's result).
   * Rejects with the AgentError when the service could not be asked or did
   * not answer (network, 5xx, 429): the caller tries again later.
   */
  refresh(why: string): Promise<RefreshResult>;
  /**
   * The service refused the current token even after a refresh: drop it (no
   * request goes out with it again) until the credentials change.
   */
  reject?(reason: string): void;
  /**
   * A call that does not prove the authorization (an asset, a channel) was
   * refused with 401; `sentAt` is when it was sent (agent-monotonic).
   * 'retry': a newer token is in use now, send it again; 'not-token': the
   * refusal is not about the token (or a refresh must wait): treat it like
   * any other refusal. Never throws.
   */
  callRefused?(why: string, sentAt: number): Promise<CallRefusal>;
  /**
   * Whether a request sent at `sentAt` (agent-monotonic) carried a token no
   * longer in use: a refresh in flight is waited for first (shared, never
   * another started), then true when a newer token came into use after the
   * send (a refresh, whoever asked for it; a reload after a pairing). A
   * refusal of such a request says nothing about the token in use: send again.
   * The one test of "sent with an older token", for reauthorization.ts and
   * callRefused. Absent: the source never replaces its token.
   */
  sentWithOlderToken?(sentAt: number): Promise<boolean>;
}

export type CallRefusal = 'retry' | 'not-token';

/** A refresh that could not reach the service is tried again after [15 s, min(10 min, 30 s * 2^n)], or its Retry-After when longer. */
const REFRESH_BACKOFF = { baseMs: 30_000, capMs: 10 * 60_000, floorMs: 15_000 };

/** Two refreshes, for whatever reason, are at least this far apart when a refused call asks (agent ms). */
export const MIN_REFRESH_GAP_MS = 60_000;

export interface TokenSourceDeps {
  clock: Clock;
  random: () => number;
  logger?: Logger;
  /** Absent where nothing may refresh (the CLI's one-shot commands). */
  oauth?: OAuthEndpoints;
  /** The client id and secret; undefined when no secret is configured (refresh is then unavailable). */
  client?: () => Promise<ClientCredentials | undefined>;
  /**
   * Where `tokensRejected` (the service refused the refresh token: the unit
   * needs pairing) and `tokensRefreshed` (a refresh went through: the service
   * wants GET /v2/devices/me after every new authorization) are published.
   */
  bus?: EventBus;
  /** Kept equal to current(): the service API reads the token here, so it can be built before this source. */
  access?: AccessToken;
}

/**
 * The access token in use, one writer (the token source) and one reader (the
 * service API's transport). It lets the API be built first and handed to the
 * token source (which refreshes through it) with no forward reference.
 */
export class AccessToken {
  value: string | undefined;
  readonly read = (): string | undefined => this.value;
}

const AHEAD_OF_EXPIRY = 'ahead of expiry';
/** Why a pair read in clear is refreshed at once (Credentials.inClear). */
const IN_CLEAR = 'stored in clear while the unit has a token-key';

const fingerprintOf = (file: string): string | undefined => {
  try {
    const st = statSync(file);
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return undefined;
  }
};

export class CredentialsTokenSource implements TokenSource {
  readonly name = 'token-refresh';
  private held: Credentials | undefined;
  /** Agent-monotonic time the current access token was obtained (estimated for one read from the file). */
  private obtainedAt: number | undefined;
  private inFlight: Promise<RefreshResult> | undefined;
  private timer: Timer | undefined;
  /** Refreshes that could not reach the service, in a row (lib/backoff.ts). */
  private readonly failures: Backoff;
  /** The wait the last failed refresh called for; undefined while none failed. */
  private retryIn: number | undefined;
  private running = false;
  /** Agent-monotonic time the current token came into use: a 401 to a request sent before it is about an older token. */
  private tokenSince = -Infinity;
  private lastRefreshAt = -Infinity;
  /** When a refused call last made us rotate; a call refused after that with the new token is not a token problem. */
  private rotatedForCallAt: number | undefined;
  private callRefusalsNotToken = false;
  /** The file a refusal came from: reloading it again would only be refused again. */
  private rejected: string | undefined;
  /** The fingerprint of the file `creds` came from (or were last saved to): what a refusal is about. */
  private loadedPrint: string | undefined;
  readonly fingerprint: (() => string | undefined) | undefined;

  constructor(
    private readonly settings: Settings,
    private readonly d: TokenSourceDeps,
  ) {
    this.failures = new Backoff({ failure: REFRESH_BACKOFF, random: d.random });
    const fileBased = settings.token === undefined || settings.token === '';
    this.fingerprint = fileBased ? () => fingerprintOf(settings.tokenFile) : undefined;
  }

  current = (): string | undefined => this.held?.accessToken;

  private get creds(): Credentials | undefined {
    return this.held;
  }

  private set creds(c: Credentials | undefined) {
    this.held = c;
    if (this.d.access) this.d.access.value = c?.accessToken;
  }

  reload(): void {
    this.creds = undefined;
    const print = this.fingerprint?.();
    if (this.rejected !== undefined && print === this.rejected) {
      throw new AgentError('unauthorized', `the service refused the credentials in ${this.settings.tokenFile}; run \`c2c-agent pair\``, { source: this.settings.tokenFile });
    }
    this.rejected = undefined;
    this.creds = loadCredentials(this.settings, (m) => this.d.logger?.warn(m));
    if (this.creds.inClear) this.d.logger?.info(`the credentials in ${this.settings.tokenFile} are in clear and the unit has a token-key: refreshing now, so the new pair is stored encrypted and the one in clear is spent`);
    this.loadedPrint = print;
    this.obtainedAt = this.estimateObtained(this.creds);
    this.tokenSince = this.d.clock.now();
    this.rotatedForCallAt = undefined;
    this.callRefusalsNotToken = false;
    this.refreshWent();
    this.arm();
  }

  /**
   * The daemon's own pairing stores a new pair (auth/daemon-pairing.ts): once
   * any refresh in flight has ended, so the file has one writer at a time.
   * Who stored it then reloads (the controller, on `credentialsReplaced`).
   */
  async install(content: CredentialsFile): Promise<void> {
    await this.inFlight?.catch(() => undefined);
    await saveCredentials(this.settings.tokenFile, content, tokenKeyOf(this.settings));
  }

  /** The daemon's own unpairing forgets the file, after any refresh in flight; false when there was none. */
  async forget(): Promise<boolean> {
    await this.inFlight?.catch(() => undefined);
    return removeCredentials(this.settings.tokenFile);
  }

  start(): void {
    this.running = true;
    // This store owns its file: temps of the credentials a kill left behind go when the
    // daemon starts (old ones only: `pair` may be writing new credentials right now).
    if (this.fingerprint !== undefined) {
      const swept = sweepCredentialTemps(this.settings.tokenFile);
      if (swept.length > 0) this.d.logger?.info({ files: swept }, `removed ${swept.length} stale temp file(s) of the credentials`);
    }
    this.arm();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.timer?.cancel();
    this.timer = undefined;
    // Never abort a refresh in flight: its answer is the only pair that will work.
    // The daemon's hard exit bounds the wait.
    await this.inFlight?.catch(() => undefined);
  }

  refresh(why: string): Promise<RefreshResult> {
    if (!this.inFlight) {
      this.inFlight = this.doRefresh(why).finally(() => {
        this.inFlight = undefined;
      });
    }
    return this.inFlight;
  }

  async sentWithOlderToken(sentAt: number): Promise<boolean> {
    // Refused while a refresh was under way: sent before its token came into use, whatever the clock reads.
    const replaced = this.inFlight !== undefined && (await this.inFlight.catch(() => undefined)) === 'refreshed';
    return this.creds !== undefined && (replaced || sentAt < this.tokenSince);
  }

  async callRefused(why: string, sentAt: number): Promise<CallRefusal> {
    if (await this.sentWithOlderToken(sentAt)) return 'retry';
    if (this.callRefusalsNotToken) return 'not-token';
    if (this.rotatedForCallAt !== undefined && sentAt >= this.rotatedForCallAt) {
      this.callRefusalsNotToken = true;
      this.d.logger?.warn({ why }, 'a call was refused (401) with a token just refreshed for that reason: treating such refusals as refusals of the call, not of the token');
      return 'not-token';
    }
    if (this.d.clock.now() - this.lastRefreshAt < MIN_REFRESH_GAP_MS) return 'not-token';
    let result: RefreshResult;
    try {
      result = await this.refresh(why);
    } catch {
      return 'not-token';
    }
    if (result !== 'refreshed') return 'not-token';
    this.rotatedForCallAt = this.tokenSince;
    // The service asks for GET /v2/devices/me after every new authorization: the controller verifies it.
    this.d.bus?.emit('tokensRefreshed', { why });
    return 'retry';
  }

  /** Monotonic time the token was obtained: from the file's times, read against this unit's wall clock. */
  private estimateObtained(c: Credentials): number | undefined {
    const lifetimeMs = (c.expiresInSeconds ?? 0) * 1000;
    const expires = c.expiresAt === undefined ? NaN : Date.parse(c.expiresAt);
    if (lifetimeMs <= 0 || !Number.isFinite(expires)) return undefined;
    // A wall clock far off (no RTC before NTP) makes this wrong either way: clamping
    // to [0, lifetime] means at worst an early refresh, or a late one that a 401 catches.
    const age = Math.min(Math.max(lifetimeMs - (expires - this.d.clock.wallNow()), 0), lifetimeMs);
    return this.d.clock.now() - age;
  }

  private arm(): void {
    this.timer?.cancel();
    this.timer = undefined;
    const c = this.creds;
    if (!this.running || !c?.refreshToken || !this.d.oauth) return;
    const obtainedAt = this.obtainedAt;
    const lifetimeS = c.expiresInSeconds;
    if ((obtainedAt === undefined || lifetimeS === undefined) && !c.inClear) return;
    const delay =
      this.retryIn !== undefined
        ? this.retryIn
        : obtainedAt === undefined || lifetimeS === undefined || c.inClear
          ? 0
          : Math.max(0, obtainedAt + refreshDelay(lifetimeS * 1000, this.d.random) - this.d.clock.now());
    const why = c.inClear ? IN_CLEAR : AHEAD_OF_EXPIRY;
    this.timer = this.d.clock.setTimer(() => {
      this.timer = undefined;
      void this.refresh(why).then(
        (r) => {
          if (r === 'refreshed') this.d.bus?.emit('tokensRefreshed', { why });
          else if (r === 'unavailable' && c.inClear) this.d.logger?.warn(`cannot refresh without the client id and secret: the credentials in ${this.settings.tokenFile} stay in clear until the unit is paired again`);
        },
        () => undefined,
      );
    }, delay);
  }

  private async doRefresh(why: string): Promise<RefreshResult> {
    const c = this.creds;
    const client = await this.d.client?.();
    if (!c?.refreshToken || !this.d.oauth || client === undefined) return 'unavailable';
    const before = this.loadedPrint;
    this.lastRefreshAt = this.d.clock.now();
    let grant;
    try {
      grant = await this.d.oauth.refresh(client, c.refreshToken);
    } catch (err) {
      const e = err instanceof AgentError ? err : new AgentError('internal', String(err));
      if (e.kind === 'unauthorized' || e.kind === 'forbidden') {
        // Re-paired meanwhile (which revokes the old tokens): the refusal is about
        // credentials nobody uses any more. The new ones win.
        if (this.creds !== c) return 'refreshed';
        if (this.fingerprint !== undefined && this.fingerprint() !== before) return this.reloadAfterChange();
        return this.refused(e);
      }
      this.retryIn = this.failures.failed(e);
      this.d.logger?.warn({ err: e.message, failures: this.failures.inARow }, `token refresh failed (${why}); retrying with backoff`);
      this.arm();
      throw e;
    }
    const file = fileFromGrant(grant, this.d.clock);
    if (this.fingerprint !== undefined) {
      // Someone paired or unpaired while we asked: their file wins over our answer.
      if (this.fingerprint() !== before) return this.reloadAfterChange();
      try {
        await saveCredentials(this.settings.tokenFile, file, tokenKeyOf(this.settings));
        this.loadedPrint = this.fingerprint();
      } catch (err) {
        // The old refresh token is spent: the new pair is the only one that works, so use it
        // from memory. A restart before the next successful save will need pairing.
        this.d.logger?.warn({ err: String(err) }, `cannot store the refreshed credentials in ${this.settings.tokenFile}; keeping them in memory`);
      }
    }
    this.creds = credentialsOf(file, c.source);
    this.obtainedAt = this.d.clock.now();
    this.tokenSince = this.obtainedAt;
    this.refreshWent();
    this.d.logger?.info({ why, expiresInSeconds: grant.expiresInSeconds }, 'access token refreshed');
    this.arm();
    return 'refreshed';
  }

  private refreshWent(): void {
    this.failures.succeeded();
    this.retryIn = undefined;
  }

  /** The file changed while a refresh was under way (a pairing, an unpairing): the file wins. */
  private reloadAfterChange(): RefreshResult {
    this.d.logger?.info('credentials file changed during a refresh; using the file');
    try {
      this.reload();
      return 'refreshed';
    } catch (err) {
      // Unpaired meanwhile: the file is gone, and so is the authorization.
      this.d.bus?.emit('tokensRejected', { reason: err instanceof Error ? err.message : String(err) });
      return 'refused';
    }
  }

  private refused(e: AgentError): RefreshResult {
    const reason = `needs pairing: the service refused the refresh token (${e.details.code ?? e.details.status ?? e.kind}); run \`c2c-agent pair\``;
    this.d.logger?.warn({ code: e.details.code, status: e.details.status }, reason);
    this.drop();
    this.d.bus?.emit('tokensRejected', { reason });
    return 'refused';
  }

  reject(reason: string): void {
    this.d.logger?.warn(`dropping the credentials the service refused (${reason})`);
    this.drop();
  }

  private drop(): void {
    this.creds = undefined;
    this.rejected = this.loadedPrint;
    this.timer?.cancel();
    this.timer = undefined;
  }
}

/** The token source of commands that only read (check): no refresh. */
export function createTokenSource(settings: Settings, deps: TokenSourceDeps): CredentialsTokenSource {
  return new CredentialsTokenSource(settings, deps);
}
