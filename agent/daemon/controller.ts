// The daemon's lifecycle and state machine (issue 4): start-up check,
// heartbeating, periodic re-verification, needs-pairing, stop. Heartbeat
// timing belongs to HeartbeatScheduler; this file decides what state the
// outcomes put us in, and logs each change of state once.
import type { Clock, Timer } from '../lib/clock.js';
import { AgentError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { Device, DeviceApi } from '../api/types.js';
import { backoffDelay } from '../lib/backoff.js';
import { describe, raceAbort } from './abort.js';
import { HeartbeatScheduler, type HeartbeatOutcome } from './heartbeat-scheduler.js';
import { ATTEMPT_GUARD_MS, type AttemptRecord, type Bounds } from './heartbeat-policy.js';
import { CredentialsWatch } from './credentials-watch.js';
import { deviceFacts, heartbeatFacts, statusLine, type DaemonSnapshot, type DaemonState, type Moment } from './snapshot.js';

const MINUTE = 60_000;
/** Watchdog slack past a due timer before the loop counts as wedged. */
const HEALTH_GRACE_MS = 60_000;

export interface ControllerDeps {
  clock: Clock;
  random: () => number;
  logger: Logger;
  api: DeviceApi;
  /** Re-reads the credentials the api uses; throws AgentError('unauthorized') when there are none. */
  reloadCredentials: () => void;
  /** A cheap fingerprint (mtime, size, inode) of the credentials file; undefined when not file-based. */
  credentialsFingerprint?: () => string | undefined;
  bounds: Bounds;
  lastAttempt?: AttemptRecord | undefined;
  persistAttempt: (rec: AttemptRecord) => Promise<void>;
  /** Called on every change worth writing; `transition` is true when the state itself changed. */
  publish: (snap: DaemonSnapshot, transition: boolean) => void;
  info: { firmwareVersion: string; profile?: string; agentVersion: string; timeScale: number; pid: number; procStart?: string };
}

type CheckWhy = 'start-up' | 'confirm' | 'periodic' | 'reload' | 'pairing';

export class Controller {
  private state: DaemonState = 'starting';
  private reason = 'starting up';
  private since!: Moment;
  private started!: Moment;
  private device: Device | undefined;
  private scheduler: HeartbeatScheduler | undefined;
  private lastAttempt: AttemptRecord | undefined;
  private lastBeat: HeartbeatOutcome | undefined;
  private checkTimer: { timer: Timer; at: number } | undefined;
  private checking: { ac: AbortController; since: number } | undefined;
  private credsWatch: CredentialsWatch | undefined;
  private checkFailures = 0;
  private heartbeat401 = 0;
  private stopped = false;

  constructor(private readonly d: ControllerDeps) {}

  start(): void {
    this.started = this.moment();
    this.since = this.started;
    this.lastAttempt = this.d.lastAttempt;
    this.d.logger.info({ state: this.state }, 'c2c-agent daemon starting');
    this.publish(true);
    if (this.loadCredentials()) void this.check('start-up');
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.setState('stopping', 'signal');
    this.clearCheckTimer();
    this.stopCredentialsPoll();
    this.checking?.ac.abort(new AgentError('network', 'stopping', { code: 'ABORTED' }));
    await this.stopHeartbeats();
    this.setState('stopped', 'stopped by signal');
  }

  /** SIGHUP: re-read credentials and check with the service at once. */
  reload(): void {
    if (this.stopped) return;
    this.d.logger.info({ state: this.state }, 'reload requested');
    if (!this.loadCredentials()) return;
    this.clearCheckTimer();
    void this.check(this.state === 'needs-pairing' ? 'pairing' : 'reload');
  }

  /** For the watchdog: the loop has something armed, and it is not long overdue. */
  isHealthy(): boolean {
    if (this.stopped) return true;
    const now = this.d.clock.now();
    if (this.checking && now - this.checking.since > ATTEMPT_GUARD_MS + HEALTH_GRACE_MS) return false;
    const v = this.scheduler?.view();
    if (v?.running) {
      if (v.inFlightSince !== undefined) return now - v.inFlightSince <= ATTEMPT_GUARD_MS + HEALTH_GRACE_MS;
      return v.nextAt !== undefined && now <= Math.min(v.nextAt, v.probeAt ?? Infinity) + HEALTH_GRACE_MS;
    }
    if (this.checking) return true;
    return this.checkTimer !== undefined && now <= this.checkTimer.at + HEALTH_GRACE_MS;
  }

  get currentState(): DaemonState {
    return this.state;
  }

  statusLine(): string {
    return statusLine(this.snapshot(), this.d.clock.now());
  }

  snapshot(): DaemonSnapshot {
    const { info } = this.d;
    const s: DaemonSnapshot = {
      state: this.state,
      reason: this.reason,
      since: this.since,
      pid: info.pid,
      started: this.started,
      consecutiveFailures: this.lastBeat?.consecutiveFailures ?? this.checkFailures,
      firmwareVersion: info.firmwareVersion,
      agentVersion: info.agentVersion,
      timeScale: info.timeScale,
      updated: this.moment(),
    };
    if (info.procStart !== undefined) s.procStart = info.procStart;
    if (info.profile !== undefined) s.profile = info.profile;
    if (this.device) Object.assign(s, deviceFacts(this.device));
    if (this.lastBeat) Object.assign(s, heartbeatFacts(this.lastBeat, this.moment(this.lastBeat.startedAt)));
    const offset = this.lastBeat?.meta?.clockOffsetMs;
    if (offset !== undefined) s.clockOffsetMs = offset;
    const v = this.scheduler?.view();
    if (v?.running && v.nextAt !== undefined) s.nextHeartbeat = this.moment(v.nextAt);
    else if (this.checkTimer) s.nextCheck = this.moment(this.checkTimer.at);
    return s;
  }

  private moment(mono = this.d.clock.now()): Moment {
    // The wall time the event really happens: agent ms shrink by the time scale in real time.
    const wall = this.d.clock.wallNow() + (mono - this.d.clock.now()) / this.d.clock.scale;
    return { at: new Date(wall).toISOString(), monotonic: Math.round(mono) };
  }

  private publish(transition: boolean): void {
    this.d.publish(this.snapshot(), transition);
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
      this.d.reloadCredentials();
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
    this.checking = { ac, since: this.d.clock.now() };
    const guard = this.d.clock.setTimer(() => ac.abort(new AgentError('network', 'request timed out', { code: 'ETIMEDOUT' })), ATTEMPT_GUARD_MS);
    let device: Device | undefined;
    let error: AgentError | undefined;
    try {
      device = (await raceAbort(this.d.api.getDevice(ac.signal), ac.signal)).value;
    } catch (err) {
      error = err instanceof AgentError ? err : new AgentError('internal', String(err));
    } finally {
      guard.cancel();
      this.checking = undefined;
    }
    if (this.stopped) return;
    if (device) return this.checked(device, why);
    const e = error as AgentError;
    if (e.kind === 'unauthorized' || e.kind === 'forbidden') return this.enterNeedsPairing(e.message);
    if (e.kind === 'paused' && this.device) return this.checked({ ...this.device, status: 'paused' }, why);
    this.checkFailures++;
    const heartbeating = this.scheduler !== undefined;
    if (this.state === 'needs-pairing') {
      this.armCheck('pairing', backoffDelay({ baseMs: 30_000, capMs: 5 * MINUTE, floorMs: 30_000 }, this.checkFailures, this.d.random));
    } else if (heartbeating) {
      // The heartbeats report reachability; a failed re-verify just comes back later.
      this.armCheck('periodic', backoffDelay({ baseMs: 5 * MINUTE, capMs: 15 * MINUTE, floorMs: 2 * MINUTE }, 0, this.d.random));
    } else {
      this.setState(e.kind === 'rate-limited' ? 'rate-limited' : 'offline', describe(e));
      const wait = backoffDelay({ baseMs: 5_000, capMs: 5 * MINUTE, floorMs: 2_000 }, this.checkFailures, this.d.random);
      this.armCheck(why, Math.max(wait, e.kind === 'rate-limited' ? (e.details.retryAfterMs ?? 0) : 0));
    }
    this.publish(false);
  }

  private checked(device: Device, why: CheckWhy): void {
    this.device = device;
    this.checkFailures = 0;
    this.stopCredentialsPoll();
    const paused = device.status === 'paused';
    if (paused) this.setState('paused', 'the service says the device is paused');
    else if (this.state !== 'rate-limited' || why !== 'periodic') this.setState('online', `verified (${why})`);
    if (!this.scheduler) this.startHeartbeats();
    // Paused: look again sooner, so uploads resume soon after the person unpauses.
    const base = paused ? 15 * MINUTE : 60 * MINUTE;
    this.armCheck('periodic', base * (0.85 + 0.3 * this.d.random()));
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
      this.heartbeat401 = 0;
      if (this.device?.status === 'paused') this.setState('paused', 'the service says the device is paused');
      else this.setState('online', 'heartbeat accepted');
    } else if (o.result === 'paused') {
      if (this.device) this.device = { ...this.device, status: 'paused' };
      this.setState('paused', e?.message ?? 'paused');
    } else if (o.result === 'rate-limited') {
      this.setState('rate-limited', describe(e));
    } else if (e && (e.kind === 'unauthorized' || e.kind === 'forbidden')) {
      // Confirm with one GET /v2/devices/me before giving up on the token; a
      // second refusal in a row settles it, so a 401 can never become a loop.
      void this.stopHeartbeats();
      if (++this.heartbeat401 >= 2) return this.enterNeedsPairing(e.message);
      void this.check('confirm');
      return;
    } else {
      this.setState('offline', describe(e));
    }
    this.d.logger.debug({ result: o.result, failures: o.consecutiveFailures, nextInMs: Math.round(o.nextAt - o.endedAt) }, 'heartbeat');
    this.publish(false);
  }

  private enterNeedsPairing(reason: string): void {
    void this.stopHeartbeats();
    this.heartbeat401 = 0;
    this.setState('needs-pairing', reason);
    // A low rate: the token will not come back by itself, only a person pairing does that.
    this.armCheck('pairing', (15 + 15 * this.d.random()) * MINUTE);
    this.startCredentialsPoll();
    this.publish(false);
  }

  private startCredentialsPoll(): void {
    const print = this.d.credentialsFingerprint;
    if (this.credsWatch || !print) return;
    this.credsWatch = new CredentialsWatch(this.d.clock, print, () => {
      this.d.logger.info('credentials file changed; checking with the service');
      this.reload();
    });
    this.credsWatch.start();
  }

  private stopCredentialsPoll(): void {
    this.credsWatch?.stop();
    this.credsWatch = undefined;
  }

  private armCheck(why: CheckWhy, ms: number): void {
    this.clearCheckTimer();
    if (this.stopped) return;
    const at = this.d.clock.now() + ms;
    this.checkTimer = { at, timer: this.d.clock.setTimer(() => void this.check(why), ms) };
  }

  private clearCheckTimer(): void {
    this.checkTimer?.timer.cancel();
    this.checkTimer = undefined;
  }
}
