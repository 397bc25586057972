// What a refusal of a call that proves the authorization means (GET
// /v2/devices/me and heartbeats; other calls ask token-source.ts
// `callRefused`), the one place for it:
//
// - a request sent with a token no longer in use (token-source.ts
//   `sentWithOlderToken`: a refresh, whoever asked for it, or a reload after
//   a pairing came after the send): ask again with the new one;
// - 403, the token is valid but lacks the access or the scope
//   (docs/service-api.md, "Status codes"; the service's spec: "a request
//   outside the token's scopes is answered with 403"): a refresh yields a
//   token of the same grant and spends the single-use refresh token, so
//   needs-pairing at once, on a device check and on a heartbeat alike; the
//   token is kept, and the low-rate needs-pairing checks notice access given
//   back;
// - 401: refresh once, then verify with GET /v2/devices/me. A refusal of the
//   refresh, or a 401 again to a request made with the refreshed token, ends
//   in needs-pairing, so a 401 can never become a loop (every refresh spends
//   a single-use refresh token). Without a refresh token (C2C_TOKEN) one GET
//   /v2/devices/me confirms a heartbeat's 401 first, as before refresh
//   existed.
import type { TokenSource } from './token-source.js';
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
  /** Refusals are taken one at a time: one that came during another's refresh is judged once that refresh is over. */
  private turn: Promise<void> = Promise.resolve();

  constructor(
    private readonly tokens: Pick<TokenSource, 'refresh' | 'reject' | 'sentWithOlderToken'>,
    private readonly on: ReauthorizationHooks,
  ) {}

  heartbeatAccepted(): void {
    this.heartbeat401 = 0;
    this.refreshedSince401 = false;
  }

  needsPairing(): void {
    this.heartbeat401 = 0;
  }

  /** A 401 or 403 (`e`) to a request sent at `sentAt` (agent-monotonic). */
  refused(e: AgentError, why: string, sentAt: number): Promise<void> {
    const judged = this.turn.then(() => this.judge(e, why, sentAt));
    this.turn = judged.catch(() => undefined);
    return judged;
  }

  private async judge(e: AgentError, why: string, sentAt: number): Promise<void> {
    if ((await this.tokens.sentWithOlderToken?.(sentAt)) === true) {
      if (this.on.stopped()) return;
      return this.on.recheck();
    }
    if (this.on.stopped()) return;
    if (e.kind === 'forbidden') return this.on.needsPairing(e.message);
    if (this.refreshedSince401) {
      // Refused even after a refresh: the token is dead, and no request may carry it again.
      this.tokens.reject?.(e.message);
      return this.on.needsPairing(e.message);
    }
    this.refreshedSince401 = true;
    let result;
    try {
      result = await this.tokens.refresh(`the service answered 401 (${why})`);
    } catch (err) {
      this.refreshedSince401 = false;
      if (this.on.stopped()) return;
      return this.on.cannotRefresh(err instanceof AgentError ? err : new AgentError('internal', String(err)));
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
