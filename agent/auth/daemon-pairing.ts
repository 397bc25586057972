// Pairing and unpairing done by the running daemon, for the local API
// (POST/DELETE /v1/pair, POST /v1/unpair): a camera's own UI starts the
// device-code flow without ever holding the client secret, and the daemon,
// the only writer of its state while it runs, stores the grant itself and
// uses it at once (no SIGHUP, no second process writing credentials.json).
//
// Progress goes out on the event bus as `pairing` (core/event-bus.ts
// PairingProgress: code, waiting, slow_down, retrying, verifying, then one of
// paired, failed, cancelled), which GET /v1/events carries and `c2c-agent
// pair` renders as it renders its own flow. The device code never leaves
// auth/pairing.ts. One flow at a time: a second POST /v1/pair while one runs
// gets the code already shown.
import type { ClientCredentials, OAuthEndpoints } from '../api/oauth.js';
import type { DeviceEndpoints } from '../api/device.js';
import type { Settings } from '../config/types.js';
import type { EventBus } from '../core/event-bus.js';
import type { PairingProgress } from './events.js';
import type { DaemonUnit } from '../core/unit.js';
import type { Clock } from '../lib/clock.js';
import { AgentError } from '../lib/errors.js';
import { fsError } from '../lib/fs-errors.js';
import type { Logger } from '../lib/logger.js';
import { PAIRING_TIMEOUT_MS } from '../lib/timing.js';
import { readClientSecret } from './client-secret.js';
import { prepareCredentialsDirs } from './credentials-dirs.js';
import { fileFromGrant, type CredentialsFile } from './credentials-store.js';
import { deviceSummary, verifyGrant } from './grant-verify.js';
import { codeFields, pairDevice, type PairingEvent } from './pairing.js';
import { REVOKE_TIMEOUT_MS, unpairHere, type Unpaired } from './revocation.js';

/** What a UI shows of a code (the contract's `code` fields). */
export type ShownCodeFields = Extract<PairingProgress, { phase: 'code' }>;

export interface DaemonPairingDeps {
  settings: Settings;
  clock: Clock;
  random: () => number;
  logger?: Logger;
  bus: EventBus;
  /** The daemon's own OAuth endpoints (device code, poll, revoke: no bearer token). */
  oauth: OAuthEndpoints;
  /** GET /v2/devices/me with a token not yet in use (the grant being verified); closed after. */
  verifier: (accessToken: string) => Pick<DeviceEndpoints, 'getDevice'> & { close(): void };
  /** The client id (auth/client-id.ts). */
  clientId: () => Promise<string>;
  /** The token source: the one writer of the credentials file in the daemon. */
  credentials: { install(content: CredentialsFile): Promise<void>; forget(): Promise<boolean> };
}

class Cancelled extends Error {
  constructor() {
    super('pairing cancelled; nothing was stored');
  }
}

interface Flow {
  ac: AbortController;
  /** The code on show now, once the service gave one. */
  code: ShownCodeFields | undefined;
  /** Past the point of no return: the service issued tokens, storing them is the only way not to lose the pairing. */
  storing: boolean;
  done: Promise<void>;
  /** What begin() answers: the first code, or what ended the flow before one came. */
  first: Promise<ShownCodeFields>;
  firstCode: { resolve(c: ShownCodeFields): void; reject(e: unknown): void };
}

export type CancelResult = 'cancelled' | 'not-pairing' | 'too-late';

export class DaemonPairing implements DaemonUnit {
  readonly name = 'pairing';
  private flow: Flow | undefined;
  private running = false;

  constructor(private readonly d: DaemonPairingDeps) {}

  start(): void {
    this.running = true;
  }

  async stop(): Promise<void> {
    this.running = false;
    const f = this.flow;
    if (f === undefined) return;
    if (!f.storing) f.ac.abort(new Cancelled());
    await f.done;
  }

  /** True while a flow runs (a code shown or about to be). */
  get active(): boolean {
    return this.flow !== undefined;
  }

  /**
   * Starts the device-code flow (or joins the one running) and resolves with
   * the code once the service gave one. Rejects with an AgentError when the
   * flow cannot start (no client secret: config; the service refusing the
   * first code) or ended before a code came.
   */
  async begin(timeoutMs: number = PAIRING_TIMEOUT_MS): Promise<ShownCodeFields> {
    if (!this.running) throw new AgentError('unavailable', 'the daemon is stopping');
    const running = this.flow;
    if (running !== undefined) return running.code ?? running.first;
    // Refused before anything is asked of the service: a grant the daemon could not store would be lost.
    const client: ClientCredentials = { clientId: await this.d.clientId(), clientSecret: readClientSecret(this.d.settings) };
    await prepareCredentialsDirs(this.d.settings);
    if (this.flow !== undefined) return this.begin(timeoutMs);
    let firstCode!: Flow['firstCode'];
    const first = new Promise<ShownCodeFields>((resolve, reject) => (firstCode = { resolve, reject }));
    // Nobody may be waiting on it any more (the UI gave up): a rejection is reported on the bus, not thrown.
    first.catch(() => undefined);
    const flow: Flow = { ac: new AbortController(), code: undefined, storing: false, done: Promise.resolve(), first, firstCode };
    this.flow = flow;
    flow.done = this.run(flow, client, timeoutMs).finally(() => {
      if (this.flow === flow) this.flow = undefined;
    });
    return first;
  }

  /** DELETE /v1/pair: stops the flow; nothing is stored. 'too-late' once the tokens are being stored. */
  cancel(): CancelResult {
    const f = this.flow;
    if (f === undefined) return 'not-pairing';
    if (f.storing) return 'too-late';
    f.ac.abort(new Cancelled());
    return 'cancelled';
  }

  /**
   * POST /v1/unpair: revokes at the service and forgets the credentials
   * (auth/revocation.ts, the rules `c2c-agent unpair` follows), then the
   * controller reloads and the unit needs pairing. A flow under way is
   * cancelled first.
   */
  async unpair(local: boolean): Promise<Unpaired> {
    if (this.flow !== undefined) {
      this.cancel();
      await this.flow?.done;
    }
    const r = await unpairHere(this.d.settings, {
      local,
      clientId: this.d.clientId,
      localAdvice: 'or ask again with {"local": true} (`c2c-agent unpair --local`) to forget the credentials here only (the service keeps the authorization until the device is removed in the app)',
      revoke: async (client, token) => {
        const ac = new AbortController();
        const timer = this.d.clock.setTimer(() => ac.abort(new AgentError('timeout', `the service did not answer the revocation within ${REVOKE_TIMEOUT_MS / 1000} s`)), REVOKE_TIMEOUT_MS);
        try {
          await this.d.oauth.revoke(client, token, ac.signal);
        } finally {
          timer.cancel();
        }
      },
      remove: () => this.d.credentials.forget(),
    });
    this.d.logger?.info({ revoked: r.revoked, removed: r.removed }, 'unpaired through the local API');
    this.d.bus.emit('credentialsReplaced', { why: 'unpaired' });
    return r;
  }

  private publish(p: PairingProgress): void {
    this.d.bus.emit('pairing', p);
  }

  private onEvent(flow: Flow, e: PairingEvent): void {
    if (e.type === 'code') {
      const shown: ShownCodeFields = { phase: 'code', ...codeFields(e.code) };
      const firstOne = flow.code === undefined;
      flow.code = shown;
      this.publish(shown);
      if (firstOne) flow.firstCode.resolve(shown);
    } else if (e.type === 'waiting') this.publish({ phase: 'waiting', expires_in: e.remainingSeconds });
    else if (e.type === 'slow-down') this.publish({ phase: 'slow_down', interval: e.intervalSeconds });
    else this.publish({ phase: 'retrying', error: { kind: e.error.kind, message: e.error.message } });
  }

  private async run(flow: Flow, client: ClientCredentials, timeoutMs: number): Promise<void> {
    const { clock, settings } = this.d;
    const signal = flow.ac.signal;
    const deadline = clock.now() + timeoutMs;
    try {
      const grant = await pairDevice({ oauth: this.d.oauth, client, clock, random: this.d.random, signal, timeoutMs, onEvent: (e) => this.onEvent(flow, e) });
      this.publish({ phase: 'verifying' });
      const api = this.d.verifier(grant.accessToken);
      let verified;
      try {
        verified = await verifyGrant(api, clock, deadline, signal, 'ask for a new code');
      } finally {
        api.close();
      }
      flow.storing = true;
      await this.d.credentials.install(fileFromGrant(grant, clock)).catch((err: unknown) => {
        // As `pair` says it by itself: a full or read-only state dir is the disk's or the setting's, not a bug.
        throw fsError(err, 'store the approved credentials (pair again once this is fixed)', settings.tokenFile, settings.sources.tokenFile);
      });
      this.d.logger?.info({ verified: verified.device !== undefined }, 'paired through the local API; using the new credentials');
      this.d.bus.emit('credentialsReplaced', { why: 'paired' });
      const warnings = settings.token ? ['C2C_TOKEN is set and takes precedence over the stored credentials; unset it'] : [];
      const unverified = verified.device === undefined ? { kind: verified.error.kind, message: verified.error.message } : undefined;
      this.publish({ phase: 'paired', verified: unverified === undefined, device: verified.device ? deviceSummary(verified.device) : null, warnings, ...(unverified && { unverified }) });
    } catch (err) {
      const reason = signal.aborted ? signal.reason : err;
      if (reason instanceof Cancelled) {
        this.d.logger?.info('pairing cancelled through the local API; nothing stored');
        this.publish({ phase: 'cancelled' });
        flow.firstCode.reject(new AgentError('unavailable', reason.message));
        return;
      }
      const e = reason instanceof AgentError ? reason : new AgentError('internal', `pairing failed: ${reason instanceof Error ? reason.message : String(reason)}`);
      const doing = flow.storing ? 'store the approved credentials' : 'pair';
      this.d.logger?.warn({ err: e.message, kind: e.kind }, `cannot ${doing} through the local API`);
      this.publish({ phase: 'failed', exitCode: e.exitCode, error: e.toJSON() });
      flow.firstCode.reject(e);
    }
  }
}
