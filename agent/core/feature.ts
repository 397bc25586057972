// A feature: one folder under agent/, one module (`<folder>/feature.ts`)
// exporting one `Feature`, and one line in daemon/features.ts. That module
// is a declaration, cheap to import: its name, whether it is wanted, its
// status section, its local API routes and its outbox kinds. The code that
// runs is behind `build`, `routes.load` and `outbox.load`, each a dynamic
// import, so an idle camera loads only what it runs (the bundle stores such
// code compressed: scripts/build-cold-code.mjs).
//
// Every feature gets the same FeatureContext, as zigbee2mqtt gives every
// extension the same arguments. Features talk through the bus (their events
// declared in their own folder by declaration merging into AgentEvents) or
// through a service one provides and another asks for (FeatureServices,
// merged the same way); never through a lambda handed across by the daemon.
//
//   // agent/gizmo/events.ts: what it publishes, typed, named nowhere in core
//   declare module '../core/event-bus.js' { interface AgentEvents { gizmoMoved: { by: number } } }
//   declare module '../core/event-lines.js' { interface EventLines { gizmo: { by: number } } }
//
//   // agent/gizmo/feature.ts
//   export const gizmoSection = obj({ moves: count });
//   declare module '../core/status-document.js' { interface StatusSections { gizmo: ShapeOf<typeof gizmoSection> } }
//   export const gizmo: Feature = {
//     name: 'gizmo',
//     enabled: (ctx) => ctx.settings.gizmo !== undefined,
//     section: { name: 'gizmo', check: gizmoSection },
//     routes: { routes: [{ method: 'GET', path: '/v1/gizmo', access: 'read' }], load: async (ctx) => (await import('./handlers.js')).handlers(ctx) },
//     outbox: { kinds: ['gizmo-move'], load: async (ctx) => [(await import('./worker.js')).worker(ctx)] },
//     build: async (ctx) => (await import('./gizmo-unit.js')).build(ctx),
//   };
import type { ServiceApi } from '../api/service.js';
import type { Wire } from '../api/transport.js';
import type { FirmwareProfile, Settings } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { KindFailing, Worker } from '../outbox/dispatcher.js';
import type { OutboxItem, PutOptions } from '../outbox/types.js';
import type { EventBus } from './event-bus.js';
import type { EventLinePublisher } from './event-lines.js';
import type { Access, Handler, HandlerMap } from './routes.js';
import type { Check } from './shape.js';
import type { StatusSections } from './status-document.js';
import type { DaemonUnit } from './unit.js';

/**
 * What a feature provides to the others, by name: each feature declares its
 * own entries from its own folder (`declare module '../core/feature.js' {
 * interface FeatureServices { uploads: UploadsService } }`). Core declares none.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface FeatureServices {}

export interface Services {
  /** The service if a feature provided it (a feature that is off or not built yet: undefined). */
  get<K extends keyof FeatureServices>(name: K): FeatureServices[K] | undefined;
  /** Provides a service; a second provider of one name is a bug. */
  provide<K extends keyof FeatureServices>(name: K, service: FeatureServices[K]): void;
}

/** The durable queue as a feature uses it (outbox/): put items, steer them, list them; workers come from the feature's `outbox` declaration. */
export interface FeatureOutbox {
  /** Resolves once the queue was replayed from disk (false when it could not be opened). */
  ready(): Promise<boolean>;
  put(kind: string, payload: unknown, opts?: PutOptions): Promise<OutboxItem>;
  /** Ends a pending item as cancelled and aborts its attempt in flight; false when it was not pending. */
  cancel(id: string, why: string): Promise<boolean>;
  /** Takes a pending item before the others (or not), durably; false when it is not pending. */
  setUrgent(id: string, urgent: boolean): Promise<boolean>;
  pending(kind?: string): OutboxItem[];
  unsettled(kind: string): number;
  /** Every item still held, oldest first. */
  items(): OutboxItem[];
  /** Ids of the items running now. */
  inFlight(): string[];
  /** The kinds whose attempts keep failing, absent when none (the dispatcher's view). */
  failing(): Record<string, KindFailing> | undefined;
  /** A worker's progress record for an item (on flash with the next group commit). */
  progress(id: string, data: unknown): Promise<void>;
  /** Resolves once every record written so far is on flash. */
  flush(): Promise<void>;
  /** Registers the workers of `kinds`, loaded when the first item of one of them is put or replayed (a feature's `outbox` declaration is registered for it). */
  register(kinds: readonly string[], load: () => Promise<readonly Worker[]>): void;
}

/** The same for every feature: what the daemon shares. Built once; nothing in it runs until the daemon starts. */
export interface FeatureContext {
  readonly bus: EventBus;
  /** The only time there is (monotonic, scaled); the wall clock for reports. */
  readonly clock: Clock;
  readonly random: () => number;
  readonly logger: Logger;
  readonly settings: Settings;
  readonly profile: FirmwareProfile;
  readonly agentVersion: string;
  /** This boot's id. */
  readonly bootId: string;
  /** The service API over the one transport (api/service.ts); its 401 policy is the token source's, a service (`tokens`). */
  readonly api: ServiceApi;
  readonly outbox: FeatureOutbox;
  /** The local API's one route table; a feature's `routes` are added to it for it. */
  readonly routes: HandlerMap;
  /** Writes a line to GET /v1/events' readers. */
  readonly lines: EventLinePublisher;
  /** What other features provide (FeatureServices). */
  readonly services: Services;
  readonly paths: {
    /** Flash: credentials, records, the queue. */
    readonly state: string;
    /** tmpfs: status.json, the API socket. */
    readonly runtime: string;
    /** The outbox's dir (`<state>/queue`). */
    readonly queue: string;
  };
  /** Replaces the HTTP exchange with the service and storage (in-process tests, the fleet); production never sets it. */
  readonly wire?: Wire;
}

/** What `build` returns: the units it runs, started in order after the features before it, stopped in reverse. */
export interface FeatureParts {
  readonly units: readonly DaemonUnit[];
}

/** A feature's status section: its name in status.json and the one declaration both its type and the reader's check come from (core/shape.ts). */
export interface SectionDecl<K extends keyof StatusSections = keyof StatusSections> {
  readonly name: K;
  readonly check: Check<StatusSections[K]>;
  /** Older names the reader still takes (the queue was `outbox`). */
  readonly aliases?: readonly string[];
}

export interface RouteDecl {
  readonly method: string;
  readonly path: string;
  readonly access: Access;
}

/** Local API routes whose handlers load on the first call of any of them. `load` returns one handler per route, keyed `'METHOD /path'`. */
export interface RouteGroup {
  readonly routes: readonly RouteDecl[];
  load(ctx: FeatureContext): Promise<Readonly<Record<string, Handler>>>;
}

/** Outbox kinds this feature owns; their workers load on the first item of one of them. */
export interface OutboxKinds {
  readonly kinds: readonly string[];
  load(ctx: FeatureContext): Promise<readonly Worker[]>;
}

export interface Feature {
  /** For logs and the bench: 'uploads', 'channels', ... */
  readonly name: string;
  /** Wanted with these settings and this profile? Loads no feature code. Absent: always. */
  enabled?(ctx: FeatureContext): boolean;
  /** Builds its units (constructors only: nothing runs until start). A promise when its code is loaded by dynamic import: then its units start once it resolves, and are told the current snapshot at once. */
  build(ctx: FeatureContext): FeatureParts | Promise<FeatureParts>;
  readonly section?: SectionDecl;
  readonly routes?: RouteGroup;
  readonly outbox?: OutboxKinds;
}

/** The route key a RouteGroup's `load` answers with: `'GET /v1/uploads'`. */
export const routeKey = (r: Pick<RouteDecl, 'method' | 'path'>): string => `${r.method} ${r.path}`;
