// Runs the list in daemon/features.ts: for each feature that is enabled, its
// local API routes added to the route table (handlers loaded on the first
// call), its outbox kinds registered (workers loaded on the first item), and
// its units built. A feature whose build is a dynamic import has its units
// held by one unit here, started once they are loaded (and told the
// controller's current snapshot at once), stopped in reverse.
import type { Feature, FeatureContext, FeatureParts, FeatureServices, Services } from '../core/feature.js';
import { routeKey } from '../core/feature.js';
import type { EventBus } from '../core/event-bus.js';
import type { ApiRequest, Answer, Handler } from '../core/routes.js';
import type { DaemonSnapshot } from '../core/state.js';
import type { StatusSections } from '../core/status-document.js';
import { startUnit, stopUnit, type DaemonUnit } from '../core/unit.js';
import type { Logger } from '../lib/logger.js';

/** FeatureServices by name: one provider each. */
export class ServiceRegistry implements Services {
  private readonly map = new Map<string, unknown>();

  get<K extends keyof FeatureServices>(name: K): FeatureServices[K] | undefined {
    return this.map.get(name) as FeatureServices[K] | undefined;
  }

  provide<K extends keyof FeatureServices>(name: K, service: FeatureServices[K]): void {
    if (this.map.has(name)) throw new Error(`service '${String(name)}' provided twice`);
    this.map.set(name, service);
  }
}

export interface BuiltFeatures {
  /** In start order: each feature's units, or the one unit holding a feature loaded by dynamic import. */
  units: DaemonUnit[];
  /** The names of the features that are on. */
  enabled: string[];
}

/** Builds every enabled feature of `features`, in order; nothing runs until its units start. */
export function buildFeatures(features: readonly Feature[], ctx: FeatureContext): BuiltFeatures {
  const units: DaemonUnit[] = [];
  const enabled: string[] = [];
  for (const f of features) {
    if (f.enabled !== undefined && !f.enabled(ctx)) continue;
    enabled.push(f.name);
    if (f.routes !== undefined) addRoutes(f, f.routes, ctx);
    if (f.outbox !== undefined) {
      const decl = f.outbox;
      ctx.outbox.register(decl.kinds, () => decl.load(ctx));
    }
    const parts = f.build(ctx);
    if (parts instanceof Promise) units.push(new LateUnits(f.name, parts, ctx.bus, ctx.logger));
    else units.push(...parts.units);
  }
  return { units, enabled };
}

/** Each route of the group answered by its handler, the group's module loaded on the first call of any (again after a failed load). */
function addRoutes(f: Feature, group: NonNullable<Feature['routes']>, ctx: FeatureContext): void {
  let loading: Promise<Readonly<Record<string, Handler>>> | undefined;
  const load = (): Promise<Readonly<Record<string, Handler>>> =>
    (loading ??= group.load(ctx).catch((err: unknown) => {
      loading = undefined;
      throw err;
    }));
  for (const r of group.routes) {
    const key = routeKey(r);
    ctx.routes.add(r.method, r.path, r.access, async (req: ApiRequest): Promise<Answer> => {
      const handler = (await load())[key];
      if (handler === undefined) throw new Error(`feature ${f.name}: no handler for ${key}`);
      return handler(req);
    });
  }
}

/**
 * The units of a feature whose code is loaded by dynamic import: started
 * when both the daemon started and the code is here, in order, each told the
 * snapshot the controller published last; stopped in reverse once the load
 * is over. A load that fails is logged and the feature stays off.
 */
export class LateUnits implements DaemonUnit {
  readonly name: string;
  private units: readonly DaemonUnit[] = [];
  private last: { snapshot: DaemonSnapshot; transition: boolean } | undefined;
  private started = false;
  private stopped = false;
  private ended: Promise<void> | undefined;

  constructor(
    feature: string,
    private readonly parts: Promise<FeatureParts>,
    private readonly bus: EventBus,
    private readonly logger?: Logger,
  ) {
    this.name = `feature:${feature}`;
  }

  start(): void {
    this.started = true;
    this.bus.on('stateChanged', this, (e) => (this.last = e));
    this.ended = this.parts.then(
      ({ units }) => {
        if (this.stopped) return;
        this.units = units;
        for (const u of units) {
          startUnit(this.bus, u);
          if (this.last !== undefined) u.onSnapshot?.(this.last.snapshot, this.last.transition);
        }
      },
      (err: unknown) => {
        this.logger?.error({ feature: this.name, err: err instanceof Error ? err.message : String(err) }, 'cannot load a feature; it stays off until restart');
      },
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.bus.removeListeners(this);
    if (!this.started) return;
    await this.ended?.catch(() => undefined);
    for (const u of [...this.units].reverse()) await stopUnit(this.bus, u);
    this.units = [];
  }

  report(): Partial<StatusSections> {
    return this.units.reduce<Partial<StatusSections>>((doc, u) => ({ ...doc, ...u.report?.() }), {});
  }

  statusText(): string | undefined {
    const texts = this.units.flatMap((u) => u.statusText?.() ?? []);
    return texts.length === 0 ? undefined : texts.join('; ');
  }
}
