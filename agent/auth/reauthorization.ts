// The 401 policy for the calls that prove the authorization (GET
// /v2/devices/me and heartbeats; other calls ask token-source.ts
// `callRefused`): refresh once, then verify with
// GET /v2/devices/me. A refusal of the refresh, or a 401 again to a request
// made with the refreshed token, ends in needs-pairing, so a 401 can never
// become a loop (every refresh spends a single-use refresh token). Without a
// refresh token (C2C_TOKEN) one GET /v2/devices/me confirms a heartbeat's
// 401 first, as before refresh existed.
import type { TokenSource } from './token-source.js';
import type { Clock } from '../lib/clock.js';
import { AgentError } from '../lib/errors.js';

export interface ReauthorizationHooks {
  /** Verify the token with GET /v2/devices/me now. */
  recheck(): void;
  needsPairing(reason: string): void;
  /** The refresh could not reach the service: the token may be fine. */
  cannotRefresh(err: AgentError): void;
  stopped(): boolean;
}

export class Reauthorization {
  private heartbeat401 = 0;
  /** A refresh answered a 401 and no heartbeat has been accepted since: another 401 is final. */
  private refreshedSince401 = false;
  /** The latest refresh's end, and whether one runs: a 401 to a request sent before it says nothing about the new token. */
  private refresh = { doneAt: -Infinity, running: false };

  constructor(
    private readonly tokens: Pick<TokenSource, 'refresh' | 'reject'>,
    private readonly clock: Clock,
    private readonly on: ReauthorizationHooks,
  ) {}

  heartbeatAccepted(): void {
    this.heartbeat401 = 0;
    this.refreshedSince401 = false;
  }

  needsPairing(): void {
    this.heartbeat401 = 0;
  }

  /** A 401 to a request sent at `sentAt` (agent-monotonic). */
  async unauthorized(e: AgentError, why: string, sentAt: number): Promise<void> {
    if (this.refresh.running || sentAt < this.refresh.doneAt) {
      // Sent with a token that a refresh replaced (or is replacing): ask again with the new one,
      // sharing a refresh under way, never starting another.
      if (this.refresh.running) await this.tokens.refresh('a request with the previous token was refused').catch(() => undefined);
      return this.on.recheck();
    }
    if (this.refreshedSince401) {
      // Refused even after a refresh: the token is dead, and no request may carry it again.
      this.tokens.reject?.(e.message);
      return this.on.needsPairing(e.message);
    }
    this.refreshedSince401 = true;
    this.refresh.running = true;
    let result;
    try {
      result = await this.tokens.refresh(`the service answered 401 (${why})`);
    } catch (err) {
      this.refreshedSince401 = false;
      if (this.on.stopped()) return;
      return this.on.cannotRefresh(err instanceof AgentError ? err : new AgentError('internal', String(err)));
    } finally {
      this.refresh = { running: false, doneAt: this.clock.now() };
    }
    if (this.on.stopped() || result === 'refused') return; // the token source has reported the refusal
    if (result === 'refreshed') return this.on.recheck();
    if (why === 'heartbeat' && ++this.heartbeat401 < 2) {
      this.refreshedSince401 = false;
      return this.on.recheck();
    }
    this.on.needsPairing(e.message);
  }
}
