// One camera of the fleet: a machine (boot time, wall-clock error, the
// runtime dir's attempt record, the token file on flash) and, while it runs,
// one agent process built by the shipped buildCore() (agent/daemon/core.ts:
// the service API, the token source and the controller with its heartbeat
// scheduler and policy, on one event bus), over the shipped transport on a
// fleet wire.
// Left out, and why: the outbox, channel and upload units (flash segments
// and fs watchers per unit are out of scale for a thousand in one process,
// and they carry no heartbeats), the status publisher (a file per snapshot)
// and the systemd watchdog (a real interval timer).
import { mkdirSync, writeFileSync } from 'node:fs';
import type { CredentialsTokenSource } from '../../agent/auth/token-source.js';
import { EventBus } from '../../agent/core/event-bus.js';
import type { Controller } from '../../agent/daemon/controller.js';
import { buildCore } from '../../agent/daemon/core.js';
import type { AttemptRecord, Bounds } from '../../agent/daemon/heartbeat/policy.js';
import type { DaemonState } from '../../agent/core/state.js';
import type { Settings } from '../../agent/config/types.js';
import type { Logger } from '../../agent/lib/logger.js';
import type { FakeCloud, SeededDevice } from '../fake-cloud/index.js';
import { settingsIn } from '../support/auth-fixtures.js';
import { DeviceClock, derive, seeded, type Machine, type VirtualClock } from '../support/virtual-clock.js';
import { fleetWire, type WireStats } from './wire.js';

export interface FleetContext {
  vc: VirtualClock;
  cloud: FakeCloud;
  wallStart: number;
  bounds: Bounds;
  logger: Logger;
  seed: number;
  agentVersion: string;
  firmwareVersion: string;
  stats: WireStats;
  /** The fake's access-token lifetime: the seeded token file says the same. */
  tokenLifetimeSeconds: number;
}

interface Process {
  clock: DeviceClock;
  tokens: CredentialsTokenSource;
  controller: Controller;
  startedAt: number;
}

export class SimDevice {
  readonly machine: Machine;
  /** The runtime dir's last-heartbeat record (tmpfs): survives a process restart, not a power cut. */
  private attempt: AttemptRecord | undefined;
  private proc: Process | undefined;
  private generation = 0;
  private networkDownUntil = -Infinity;
  private state: DaemonState | 'down' = 'down';
  private stateSince = 0;
  /** Virtual ms spent in each state while a process ran. */
  readonly timeIn = new Map<string, number>();
  runningMs = 0;
  private readonly settings: Settings;

  constructor(
    readonly index: number,
    readonly seededDevice: SeededDevice,
    private readonly ctx: FleetContext,
    dir: string,
    uptimeMs: number,
  ) {
    this.machine = { bootAt: -Math.round(uptimeMs), wallErrorMs: 0 };
    this.settings = settingsIn(dir, { apiUrl: 'http://fake-cloud.invalid', firmwareVersion: ctx.firmwareVersion });
  }

  /** The unit as paired: its token file, with the tokens the fake seeded for it. */
  provision(): void {
    const { ctx } = this;
    const lifetime = ctx.tokenLifetimeSeconds;
    mkdirSync(this.settings.stateDir, { recursive: true });
    writeFileSync(
      this.settings.tokenFile,
      JSON.stringify({
        access_token: this.seededDevice.accessToken,
        refresh_token: this.seededDevice.refreshToken,
        token_type: 'bearer',
        expires_in: lifetime,
        obtained_at: new Date(ctx.wallStart).toISOString(),
        expires_at: new Date(ctx.wallStart + lifetime * 1000).toISOString(),
        clock: 'service',
      }),
      { mode: 0o600 },
    );
  }

  get running(): boolean {
    return this.proc !== undefined;
  }

  get currentState(): DaemonState | 'down' {
    return this.state;
  }

  /** Starts the agent process (systemd starting the unit). */
  start(): void {
    if (this.proc) return;
    const { ctx } = this;
    const gen = this.generation++;
    const random = seeded(derive(ctx.seed, this.index, gen));
    const clock = new DeviceClock(ctx.vc, this.machine, ctx.wallStart);
    const wire = fleetWire(ctx.cloud, clock, () => ctx.vc.now() < this.networkDownUntil, ctx.stats);
    const client = { clientId: this.seededDevice.clientId, clientSecret: this.seededDevice.clientSecret };
    const bus = new EventBus(ctx.logger);
    bus.on('stateChanged', this, ({ snapshot }) => this.enter(snapshot.state));
    const { tokens, controller } = buildCore({
      settings: this.settings,
      agentVersion: ctx.agentVersion,
      clock,
      random,
      logger: ctx.logger,
      bus,
      bounds: ctx.bounds,
      client: async () => client,
      controller: {
        lastAttempt: this.attempt,
        persistAttempt: async (rec) => {
          this.attempt = { ...rec };
        },
        info: { firmwareVersion: ctx.firmwareVersion, agentVersion: ctx.agentVersion, timeScale: 1, pid: 1000 + gen },
      },
      wire,
    });
    this.proc = { clock, tokens, controller, startedAt: ctx.vc.now() };
    // The daemon's order (units.ts): the token source, then the controller.
    tokens.start();
    controller.start();
  }

  /** The process dies at once (kill -9, a crash, the power): nothing more from it. */
  kill(): void {
    const p = this.proc;
    if (!p) return;
    p.clock.kill();
    this.proc = undefined;
    this.enter('down');
    this.runningMs += this.ctx.vc.now() - p.startedAt;
  }

  /** Power cut: the process dies and the runtime dir (tmpfs) is lost; the token file on flash stays. */
  powerOff(): void {
    this.kill();
    this.attempt = undefined;
  }

  /** Power back: the machine boots now (agent time restarts at 0) with its wall clock off by `wallErrorMs` until NTP. */
  boot(wallErrorMs: number): void {
    this.machine.bootAt = this.ctx.vc.now();
    this.machine.wallErrorMs = wallErrorMs;
  }

  stepWall(toErrorMs: number): void {
    this.machine.wallErrorMs = toErrorMs;
  }

  /** The unit's own network (Wi-Fi, its router) is down for `ms`. */
  loseNetwork(ms: number): void {
    this.networkDownUntil = this.ctx.vc.now() + ms;
  }

  private enter(state: DaemonState | 'down'): void {
    const now = this.ctx.vc.now();
    if (this.state !== 'down') this.timeIn.set(this.state, (this.timeIn.get(this.state) ?? 0) + now - this.stateSince);
    this.state = state;
    this.stateSince = now;
  }
}
