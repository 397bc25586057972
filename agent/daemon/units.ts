// The daemon's composition around the core (core.ts: the service API, the
// token source, the controller): the one FeatureContext every feature gets,
// the features of daemon/features.ts, and the daemon's own units around
// them. main.ts owns the process (lock, signals, exit); this file owns what
// runs inside it, and names no feature: a new one is a folder and a line in
// features.ts. Features talk through the bus and the services they provide
// (core/feature.ts), never through lambdas handed across here.
import type { Wire } from '../api/transport.js';
import type { FirmwareProfile, Settings } from '../config/types.js';
import type { EventBus } from '../core/event-bus.js';
import type { FeatureContext, FeatureOutbox } from '../core/feature.js';
import { HandlerMap } from '../core/routes.js';
import type { StatusSections } from '../core/status-document.js';
import type { DaemonUnit } from '../core/unit.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { queueDirOf } from '../outbox/location.js';
import type { Controller } from './controller.js';
import type { Core } from './core.js';
import { buildFeatures, ServiceRegistry } from './feature-host.js';
import { FEATURES } from './features.js';
import { createStatusSink } from './runtime/status-file.js';
import { StatusPublisher } from './runtime/status-publisher.js';
import type { SystemdNotifier } from './systemd/notify.js';
import { Watchdog } from './systemd/watchdog.js';

export { ownDirs } from '../uploads/own-dirs.js';

export interface UnitsInput {
  settings: Settings;
  profile: FirmwareProfile;
  clock: Clock;
  random: () => number;
  logger: Logger;
  bus: EventBus;
  core: Core;
  notifier: SystemdNotifier;
  bootId: string;
  onStatusWriteError: (err: unknown) => void;
  agentVersion: string;
  /** Replaces the HTTP exchange with the service and storage, as the core's does (daemon.ts); production never sets it. */
  wire?: Wire;
}

export interface DaemonUnits {
  /** Every unit in start order, once every feature is built: the status publisher and the token source, the features, the controller, the watchdog. */
  units: Promise<DaemonUnit[]>;
  controller: Controller;
  /** The names of the features that are on. */
  features: string[];
}

/** The outbox as features see it: the outbox feature's unit, which it provides first (features.ts lists it first). */
function outboxPort(services: ServiceRegistry): FeatureOutbox {
  const o = (): FeatureOutbox => {
    const unit = services.get('outbox');
    if (unit === undefined) throw new Error('no outbox: the outbox feature must be built before any feature that uses it');
    return unit;
  };
  return {
    ready: () => o().ready(),
    put: (kind, payload, opts) => o().put(kind, payload, opts),
    cancel: (id, why) => o().cancel(id, why),
    setUrgent: (id, urgent) => o().setUrgent(id, urgent),
    pending: (kind) => o().pending(kind),
    unsettled: (kind) => o().unsettled(kind),
    items: () => o().items(),
    inFlight: () => o().inFlight(),
    failing: () => o().failing(),
    progress: (id, data) => o().progress(id, data),
    flush: () => o().flush(),
    register: (kinds, load) => services.get('outbox')!.register(kinds, load),
  };
}

export function buildUnits(i: UnitsInput): DaemonUnits {
  const { settings, clock, logger, bus } = i;
  const { api, tokens, controller } = i.core;
  const services = new ServiceRegistry();
  services.provide('tokens', tokens);
  const ctx: FeatureContext = {
    bus,
    clock,
    random: i.random,
    logger,
    settings,
    profile: i.profile,
    agentVersion: i.agentVersion,
    bootId: i.bootId,
    api,
    outbox: outboxPort(services),
    routes: new HandlerMap(),
    // The local API's events hub, when the local API is on.
    lines: { publish: (type, line) => services.get('eventLines')?.publish({ ...line, type }) },
    services,
    paths: { state: settings.stateDir, runtime: settings.runtimeDir, queue: queueDirOf(settings.stateDir) },
    ...(i.wire !== undefined && { wire: i.wire }),
  };
  const features = buildFeatures(FEATURES, ctx);
  const units = features.units.then((featureUnits) => {
    const status = new StatusPublisher(
      createStatusSink(settings.runtimeDir, i.onStatusWriteError),
      i.notifier,
      clock,
      bus,
      () => featureUnits.reduce<Partial<StatusSections>>((doc, u) => ({ ...doc, ...u.report?.() }), {}),
      () => featureUnits.flatMap((u) => u.statusText?.() ?? []),
    );
    services.provide('status', status);
    // Started in this order, stopped in reverse. The status file listens before the
    // controller's first snapshot and is flushed after its last. The token source
    // refreshes ahead of expiry once the controller has loaded the credentials, and
    // stops after it (a refresh in flight is waited for, never cut). The features in
    // their list's order (the outbox first: it opens before anything puts work in it
    // and closes, flushed, after the last put; the local API last: it serves once what
    // it steers runs, and stops first). The watchdog pings only once the controller
    // has something to be healthy about.
    return [status, tokens, ...featureUnits, controller, new Watchdog(i.notifier, () => controller.isHealthy())];
  });
  return { units, controller, features: features.enabled };
}
