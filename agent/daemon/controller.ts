// The daemon's state machine: start-up check, heartbeating, periodic
// re-verification, needs-pairing, stop. Heartbeat timing belongs to
// HeartbeatScheduler; this file decides what state the outcomes put us in,
// and logs each change of state once. The wiring around it (files, systemd,
// signals, the other units) is daemon/main.ts's.
import { fitAdvice } from '../lib/advice.js';
import type { Timer } from '../lib/clock.js';
import { AgentError } from '../lib/errors.js';
import type { Device } from '../api/types.js';
import { CredentialsWatch } from '../auth/credentials-watch.js';
import type { CheckWhy, ControllerDeps } from './controller-deps.js';
import { describe, guarded } from './abort.js';
import { Backoff } from '../lib/backoff.js';
import { CHECK_BACKOFF, pairingCheckDelay, pairingRetryDelay, reverifyDelay, reverifyRetryDelay } from './check-schedule.js';
import { HealthProbe, unreachable } from './reachability.js';
import { HeartbeatScheduler, type HeartbeatOutcome } from './heartbeat/scheduler.js';
import type { AttemptRecord } from './heartbeat/policy.js';
import { loopHealthy } from './loop-health.js';
import { Reauthorization } from '../auth/reauthorization.js';
import type { DaemonUnit } from '../core/unit.js';
import type { DaemonSnapshot, DaemonState, Moment } from '../core/state.js';
import { buildSnapshot, momentOf, statusLine } from './snapshot.js';
import { clockProblem } from '../api/http-errors.js';

export type { ControllerDeps } from './controller-deps.js';

/** "GET /v2/devices/me: the service's certificate ..." without the request it happened on. */
function withoutRequest(e: AgentError): string {
  const source = e.details.source;
  return source !== undefined && e.message.startsWith(`${source}: `) ? e.message.slice(source.length + 2) : e.message;
}


export class Controller implements DaemonUnit {
  readonly name = 'controller';
  private state: DaemonState = 'starting';
  private reason = 'starting up';
  private since!: Moment;
  private started!: Moment;
  private device: Device | undefined;
  private scheduler: HeartbeatScheduler | undefined;
  private lastAttempt: AttemptRecord | undefined;
  private lastBeat: HeartbeatOutcome | undefined;
  private checkTimer: { timer: Timer; at: number; why: CheckWhy } | undefined;
  /** Before heartbeats run: notices the network coming back between start-up checks. */
  private probe: HealthProbe | undefined;
  /** The probe hurried a check along once since the last good one: back off plainly until a success. */
  private probeUsed = false;
  private recordWarned = false;
  private checking: { ac: AbortController; since: number } | undefined;
  private credsWatch: CredentialsWatch | undefined;
  /** The device checks' failures and 429s in a row, and the waits they call for (lib/backoff.ts). */
  private readonly checks: Backoff;
  private reauth!: Reauthorization;
  /** Certificates cannot be checked because this unit's clock is off; cleared by the first answer that goes through. */
  private clock: { problem: string; offsetMs?: number | undefined } | undefined;
  private stopped = false;

  constructor(private readonly d: ControllerDeps) {
    this.checks = new Backoff({ ...CHECK_BACKOFF, random: d.random });
  }

  start(): void {
    this.started = this.moment();
    this.since = this.started;
    this.lastAttempt = this.d.lastAttempt;
    this.reauth = new Reauthorization(this.d.tokens, {
      recheck: () => void this.check('confirm'),
      needsPairing: (reason) => this.enterNeedsPairing(reason),
      cannotRefresh: (fail) => this.cannotRefresh(fail),
      stopped: () => this.stopped,
    });
    const print = this.d.tokens.fingerprint;
    this.credsWatch = print && new CredentialsWatch(this.d.clock, print, () => this.credentialsChanged());
    this.probe = new HealthProbe(this.d.clock, this.d.random, (s) => this.d.api.health(s), () => {
      this.probeUsed = true;
      void this.check(this.checkTimer?.why ?? 'start-up');
    });
    this.d.bus.on('tokensRefreshed', this, () => this.tokensRefreshed());
    this.d.bus.on('tokensRejected', this, ({ reason }) => this.tokensRejected(reason));
    // The daemon paired or unpaired itself (POST /v1/pair, /v1/unpair): the file is new, use it now.
    this.d.bus.on('credentialsReplaced', this, () => this.reload());
    this.d.logger.info({ state: this.state }, 'c2c-agent daemon starting');
    this.publish(true);
    if (this.loadCredentials()) void this.check('start-up');
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.setState('stopping', 'signal');
    this.clearCheckTimer();
    this.credsWatch?.stop();
    this.checking?.ac.abort(new AgentError('network', 'stopping', { code: 'ABORTED' }));
    await this.stopHeartbeats();
    this.setState('stopped', 'stopped by signal');
    this.d.bus.removeListeners(this);
  }

  /** SIGHUP: re-read credentials and check with the service at once. */
  reload(): void {
    if (this.stopped) return;
    this.d.logger.info({ state: this.state }, 'reload requested');
    if (!this.loadCredentials()) return;
    this.clearCheckTimer();
    void this.check(this.state === 'needs-pairing' ? 'pairing' : 'reload');
  }

  private credentialsChanged(): void {
    this.d.logger.info('credentials file changed; checking with the service');
    this.reload();
  }

  /** For the watchdog: the loop has something armed, and it is not long overdue. */
  isHealthy(): boolean {
    if (this.stopped) return true;
    return loopHealthy({ now: this.d.clock.now(), checkingSince: this.checking?.since, scheduler: this.scheduler?.view(), checkAt: this.checkTimer?.at });
  }

  get currentState(): DaemonState {
    return this.state;
  }

  statusLine(): string {
    return statusLine(this.snapshot(), this.d.clock.now());
  }

  snapshot(): DaemonSnapshot {
    const v = this.scheduler?.view();
    return buildSnapshot({
      state: this.state,
      reason: this.reason,
      since: this.since,
      started: this.started,
      consecutiveFailures: this.lastBeat?.consecutiveFailures ?? this.checks.inARow,
      info: this.d.info,
      device: this.device,
      lastBeat: this.lastBeat,
      nextHeartbeatAt: v?.running ? v.nextAt : undefined,
      nextCheckAt: this.checkTimer?.at,
      clock: this.clock,
      moment: (mono) => this.moment(mono),
    });
  }

  private moment(mono?: number): Moment {
    return momentOf(this.d.clock, mono);
  }

  private publish(transition: boolean): void {
    this.d.bus.emit('stateChanged', { snapshot: this.snapshot(), transition });
  }

  /**
   * The state's reason for a failure: a clock problem says only that, whole
   * (status, STATUS=), and is kept until an answer goes through; anything
   * else clears it.
   */
  private failed(next: DaemonState, e: AgentError | undefined): void {
    if (e?.kind === 'clock') {
      const offsetMs = e.details.clockOffsetMs;
      const problem = offsetMs !== undefined ? clockProblem(offsetMs) : withoutRequest(e);
      this.clock = { problem, offsetMs };
      this.setState(next, problem);
      return;
    }
    this.clock = undefined;
    // A certificate problem is the same whatever the request: its words first, so STATUS= keeps them.
    this.setState(next, e?.kind === 'tls' ? `tls: ${withoutRequest(e)}` : describe(e));
  }

  private setState(next: DaemonState, reason: string): void {
    if (next === this.state) {
      this.reason = reason;
      return;
    }
    const from = this.state;
    this.state = next;
    this.reason = reason;
    this.since = this.moment();
    this.d.logger.info({ from, to: next, reason }, `state ${from} -> ${next}: ${reason}`);
    this.publish(true);
  }

  private loadCredentials(): boolean {
    try {
      this.d.tokens.reload();
      return true;
    } catch (err) {
      this.enterNeedsPairing(err instanceof AgentError ? err.message : String(err));
      return false;
    }
  }

  private async check(why: CheckWhy): Promise<void> {
    if (this.stopped || this.checking) return;
    this.clearCheckTimer();
    const ac = new AbortController();
    const sentAt = this.d.clock.now();
    this.checking = { ac, since: sentAt };
    let device: Device | undefined;
    let error: AgentError | undefined;
    try {
      device = (await guarded(this.d.clock, ac, (s) => this.d.api.getDevice(s))).value;
    } catch (err) {
      error = err instanceof AgentError ? err : new AgentError('internal', String(err));
    } finally {
      this.checking = undefined;
    }
    if (this.stopped) return;
    if (device) return this.checked(device, why);
    const e = error as AgentError;
    // 401 and 403 alike: reauthorization.ts says what each means, for a check as for a heartbeat.
    if (e.kind === 'unauthorized' || e.kind === 'forbidden') return this.reauth.refused(e, why, sentAt);
    if (e.kind === 'paused' && this.device) return this.checked({ ...this.device, status: 'paused' }, why);
    if (e.kind === 'protocol' && e.status !== undefined && e.status >= 200 && e.status < 300) return this.checkedUnreadable(e, why);
    const checks = this.checks;
    const heartbeating = this.scheduler !== undefined;
    if (this.state === 'needs-pairing') {
      checks.count(e);
      this.armCheck('pairing', pairingRetryDelay(e, checks.inARow, this.d.random));
    } else if (heartbeating) {
      checks.count(e);
      this.armCheck('periodic', reverifyRetryDelay(e, this.d.random));
    } else {
      this.failed(e.kind === 'rate-limited' ? 'rate-limited' : 'offline', e);
      this.armCheck(why, checks.failed(e));
      if (unreachable(e) && !this.probeUsed) this.probe?.start();
    }
    this.publish(false);
  }

  /**
   * A 2xx whose body fails validation still proves the token: heartbeat on
   * the facts we have (maybe none) rather than retry a GET the service keeps
   * answering, and try the record again at the normal re-verify rate.
   */
  private checkedUnreadable(e: AgentError, why: CheckWhy): void {
    if (!this.recordWarned) this.d.logger.warn({ err: e.message }, 'device record unreadable; heartbeating anyway, the token was accepted');
    this.recordWarned = true;
    this.checked(undefined, why);
  }

  private checked(device: Device | undefined, why: CheckWhy): void {
    if (device) {
      this.d.bus.emit('deviceSeen', { device });
      this.device = device;
      this.recordWarned = false;
    }
    this.checks.succeeded();
    this.probeUsed = false;
    this.clock = undefined;
    this.credsWatch?.stop();
    const paused = this.device?.status === 'paused';
    if (paused) this.setState('paused', 'the service says the device is paused');
    else if (this.state !== 'rate-limited' || why !== 'periodic') this.setState('online', `${device ? 'verified' : 'token accepted'} (${why})`);
    if (!this.scheduler) this.startHeartbeats();
    this.armCheck('periodic', reverifyDelay(paused, this.d.random));
    this.publish(false);
  }

  private startHeartbeats(): void {
    const scheduler = new HeartbeatScheduler({
      clock: this.d.clock,
      random: this.d.random,
      transport: { heartbeat: (s) => this.d.api.heartbeat(s), health: (s) => this.d.api.health(s) },
      bounds: this.d.bounds,
      lastAttempt: this.lastAttempt,
      persist: (rec) => {
        this.lastAttempt = rec;
        return this.d.persistAttempt(rec);
      },
      onOutcome: (o) => this.onHeartbeat(scheduler, o),
    });
    this.scheduler = scheduler;
    scheduler.start();
  }

  private async stopHeartbeats(): Promise<void> {
    const s = this.scheduler;
    this.scheduler = undefined;
    if (s) await s.stop();
  }

  private onHeartbeat(scheduler: HeartbeatScheduler, o: HeartbeatOutcome): void {
    if (scheduler !== this.scheduler) return;
    this.lastBeat = o;
    const e = o.error;
    if (o.result === 'ok') {
      this.reauth.heartbeatAccepted();
      this.clock = undefined;
      const wasAway = this.state === 'offline';
      if (this.device?.status === 'paused') this.setState('paused', 'the service says the device is paused');
      else this.setState('online', 'heartbeat accepted');
      // Back after an outage: read the device again, since what the service holds may have changed meanwhile.
      if (wasAway && !this.checking) this.armCheck('reconnected', 0);
    } else if (o.result === 'paused') {
      if (this.device) this.device = { ...this.device, status: 'paused' };
      this.setState('paused', e?.message ?? 'paused');
    } else if (o.result === 'rate-limited') {
      this.setState('rate-limited', describe(e));
    } else if (e && (e.kind === 'unauthorized' || e.kind === 'forbidden')) {
      void this.stopHeartbeats();
      void this.reauth.refused(e, 'heartbeat', o.startedAt);
      return;
    } else {
      this.failed('offline', e);
    }
    this.d.logger.debug({ result: o.result, failures: o.consecutiveFailures, nextInMs: Math.round(o.nextAt - o.endedAt) }, 'heartbeat');
    this.publish(false);
  }

  /** A refresh ahead of expiry went through: verify the new token with GET /v2/devices/me, as the service asks. */
  tokensRefreshed(): void {
    if (this.stopped || this.state === 'needs-pairing' || this.checking) return;
    this.clearCheckTimer();
    void this.check('refreshed');
  }

  /** The token source gave up (the service refused the refresh token). */
  tokensRejected(reason: string): void {
    if (this.stopped || this.state === 'needs-pairing') return;
    this.enterNeedsPairing(reason);
  }

  /** The token may be fine but could not be refreshed (the network): check again later. */
  private cannotRefresh(fail: AgentError): void {
    const wait = this.checks.failed(fail);
    this.setState('offline', `token refresh failed: ${describe(fail)}`);
    this.armCheck('confirm', wait);
    this.publish(false);
  }

  private enterNeedsPairing(reason: string): void {
    void this.stopHeartbeats();
    this.reauth.needsPairing();
    // Unpaired, revoked or refused: no device is known any more (the status document's `device` is null), until a new grant is verified.
    this.device = undefined;
    this.setState('needs-pairing', fitAdvice(reason, this.d.tokenFromEnvironment === true));
    this.armCheck('pairing', pairingCheckDelay(this.d.random));
    this.credsWatch?.start();
    this.publish(false);
  }

  private armCheck(why: CheckWhy, ms: number): void {
    this.clearCheckTimer();
    if (this.stopped) return;
    const at = this.d.clock.now() + ms;
    this.checkTimer = { at, why, timer: this.d.clock.setTimer(() => void this.check(why), ms) };
  }

  /** The probe only hurries the armed check along, so it goes with it (and one request at a time). */
  private clearCheckTimer(): void {
    this.checkTimer?.timer.cancel();
    this.checkTimer = undefined;
    this.probe?.stop();
  }
}
