// The whole daemon as `run` builds it, and nothing of the process around it:
// the last heartbeat's record in the runtime dir, the event bus, the core
// (core.ts: the service API, the token source, the controller) and the units
// around it (units.ts: the features of features.ts, each loaded by a dynamic
// import), started in order once every feature is loaded, and stopped in
// reverse. main.ts owns
// the process (the runtime dir and its lock, signals, exit, the logger on
// stdout, systemd's environment) and calls this; the end-to-end tests that
// judge agent time (test/e2e/) call it too, on a virtual clock, with a `wire`
// into the fake cloud: the same function, so what they judge is what ships.
import type { ClientCredentials } from '../api/oauth.js';
import type { Wire } from '../api/transport.js';
import { getClientId } from '../auth/client-id.js';
import { readClientSecret } from '../auth/client-secret.js';
import type { FirmwareProfile, Settings } from '../config/types.js';
import { EventBus } from '../core/event-bus.js';
import { startUnit, stopUnit, type DaemonUnit } from '../core/unit.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { Controller } from './controller.js';
import { buildCore, type Core } from './core.js';
import { boundsOf } from './heartbeat/policy.js';
import { ATTEMPT_FILE, attemptToStartFrom, createAttemptStore, readLastAttempt } from './runtime/attempt-record.js';
import type { SystemdNotifier } from './systemd/notify.js';
import { buildUnits } from './units.js';

export interface DaemonInput {
  settings: Settings;
  agentVersion: string;
  profile: FirmwareProfile;
  clock: Clock;
  random: () => number;
  logger: Logger;
  /** systemd's notify protocol: READY=1 once the controller runs, STATUS=, the watchdog, STOPPING=1. */
  notifier: SystemdNotifier;
  /** This boot's id (the outbox's records say which boot wrote them). */
  bootId: string;
  /** The process, as status.json names it: its pid and its /proc start time. */
  pid: number;
  procStart?: string;
  /** Replaces the HTTP exchange with the service (the tests that run the daemon in their own process); production never sets it. */
  wire?: Wire;
}

export interface Daemon {
  bus: EventBus;
  core: Core;
  /** In start order; empty until start() has loaded the features. */
  readonly units: DaemonUnit[];
  controller: Controller;
  /** The features that are on (daemon/features.ts). */
  features: string[];
  /**
   * Loads the features (a microtask's work in the bundle, whose code is in
   * memory), then starts every unit in order; READY=1 goes out once the
   * controller runs (start-up does not wait for the network). Resolves once
   * they started; nobody needs to wait for it.
   */
  start(): Promise<void>;
  /**
   * STOPPING=1, every unit stopped in reverse order (one that fails is logged
   * and the rest still stop), the attempt record flushed, the service's
   * connections closed, and every notify message sent.
   */
  stop(): Promise<void>;
}

/**
 * The client id and secret a refresh sends, read once when first needed. No
 * secret configured means no refresh: the token works until it expires and
 * the unit then needs pairing, which the warning says up front.
 */
function clientCredentials(settings: Settings, logger: Logger): () => Promise<ClientCredentials | undefined> {
  let cached: Promise<ClientCredentials | undefined> | undefined;
  return () =>
    (cached ??= (async () => {
      try {
        const { clientId } = await getClientId(settings);
        return { clientId, clientSecret: readClientSecret(settings) };
      } catch (err) {
        logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'cannot refresh tokens without the client id and secret; the unit will need pairing when its token expires');
        cached = undefined;
        return undefined;
      }
    })());
}

/** Builds the daemon; nothing runs (no timer, file or socket) until start(). */
export function buildDaemon(i: DaemonInput): Daemon {
  const { settings, clock, logger, notifier } = i;
  const logWriteError = (what: string) => (err: unknown) => logger.warn({ err: String(err) }, `cannot write ${what} in ${settings.runtimeDir}`);
  const attempts = createAttemptStore(settings.runtimeDir, settings.timeScale, logWriteError('last heartbeat time'));
  const lastRead = readLastAttempt(settings.runtimeDir, settings.timeScale);
  if (lastRead.kind === 'unreadable') {
    logger.warn({ error: lastRead.error }, `cannot read ${ATTEMPT_FILE} in ${settings.runtimeDir}; waiting a full minute before the first heartbeat`);
  }
  const bus = new EventBus(logger);
  const core = buildCore({
    settings,
    agentVersion: i.agentVersion,
    clock,
    random: i.random,
    logger,
    bus,
    bounds: boundsOf(i.profile.heartbeat),
    client: clientCredentials(settings, logger),
    controller: {
      lastAttempt: attemptToStartFrom(lastRead, clock.now()),
      persistAttempt: (rec) => attempts.save(rec),
      info: {
        firmwareVersion: settings.firmwareVersion,
        profile: i.profile.id,
        agentVersion: i.agentVersion,
        timeScale: settings.timeScale,
        pid: i.pid,
        ...(i.procStart !== undefined && { procStart: i.procStart }),
      },
    },
    ...(i.wire !== undefined && { wire: i.wire }),
  });
  const built = buildUnits({
    settings,
    profile: i.profile,
    clock,
    random: i.random,
    logger,
    bus,
    core,
    notifier,
    bootId: i.bootId,
    onStatusWriteError: logWriteError('status'),
    agentVersion: i.agentVersion,
    ...(i.wire !== undefined && { wire: i.wire }),
  });
  const { controller } = built;
  let started: DaemonUnit[] = [];
  let starting: Promise<void> | undefined;
  let stopping = false;
  return {
    bus,
    core,
    get units() {
      return started;
    },
    controller,
    features: built.features,
    start() {
      // A camera that reports firmware 0.0.0 gets the service's configuration for 0.0.0 and this
      // agent's generic profile: say so once, as the other settings a camera cannot do without do.
      if ((settings.sources.firmwareVersion ?? 'default') === 'default') {
        logger.warn(
          { firmwareVersion: settings.firmwareVersion, profile: i.profile.id },
          `no firmware version set (firmwareVersion or firmwareVersionFile): sending ${settings.firmwareVersion}, profile ${i.profile.id}; the service picks its configuration for that version`,
        );
      }
      starting ??= built.units.then((units) => {
        if (stopping) return;
        started = units;
        for (const u of units) {
          startUnit(bus, u);
          if (u === controller) void notifier.ready(controller.statusLine());
        }
      });
      return starting;
    },
    async stop() {
      stopping = true;
      void notifier.stopping();
      await starting;
      for (const u of [...started].reverse()) await stopUnit(bus, u).catch((err: unknown) => logger.warn({ unit: u.name, err: String(err) }, 'unit failed to stop cleanly'));
      await attempts.flush().catch(() => undefined);
      core.api.close();
      await notifier.idle();
    },
  };
}
