// Runs the list in daemon/features.ts: for each feature that is enabled, its
// local API routes added to the route table (their handlers loaded on the
// first call of any of them), its outbox kinds registered (their workers
// loaded with the first item), and its build loaded (a dynamic import) and
// run, in list order. The daemon starts its units once every build is in
// (daemon.ts), so they start in the list's order whatever each load took.
import type { Feature, FeatureContext, FeatureParts, FeatureServices, Services } from '../core/feature.js';
import { routeKey } from '../core/feature.js';
import type { ApiRequest, Answer, Handler } from '../core/routes.js';
import type { DaemonUnit } from '../core/unit.js';

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
  /** The names of the features that are on, in list order. */
  enabled: string[];
  /** Every enabled feature's units, in list order, once all are built (a feature whose build failed is logged and left out). */
  units: Promise<DaemonUnit[]>;
}

/** Loads and builds every enabled feature of `features`, in order; nothing runs until its units start. */
export function buildFeatures(features: readonly Feature[], ctx: FeatureContext): BuiltFeatures {
  const enabled: string[] = [];
  let chain: Promise<DaemonUnit[]> = Promise.resolve([]);
  for (const f of features) {
    if (f.enabled !== undefined && !f.enabled(ctx)) continue;
    enabled.push(f.name);
    if (f.routes !== undefined) addRoutes(f, f.routes, ctx);
    // One after the other: a feature may use what an earlier one provided (ctx.outbox is the outbox feature's).
    chain = chain.then(async (units) => {
      let parts: FeatureParts;
      try {
        parts = await f.build(ctx);
      } catch (err) {
        ctx.logger.error({ feature: f.name, err: err instanceof Error ? err.message : String(err) }, 'cannot build a feature; the daemon runs on without it');
        return units;
      }
      return [...units, ...parts.units];
    });
  }
  // Each feature's outbox kinds, once every feature is built (the outbox is a feature too) and before anything starts.
  const units = chain.then((list) => {
    for (const f of features) {
      const decl = f.outbox;
      if (decl === undefined || !enabled.includes(f.name)) continue;
      try {
        ctx.outbox.register(decl.kinds, () => decl.load(ctx));
      } catch (err) {
        ctx.logger.error({ feature: f.name, kinds: decl.kinds, err: err instanceof Error ? err.message : String(err) }, 'cannot register a feature\'s outbox kinds; its items wait');
      }
    }
    return list;
  });
  return { enabled, units };
}

/** Each route of the group answered by its handler, the group's module loaded on the first call of any (again after a failed load). */
function addRoutes(f: Feature, group: NonNullable<Feature['routes']>, ctx: FeatureContext): void {
  const declared = group.routes.map(routeKey);
  let loading: Promise<Readonly<Record<string, Handler>>> | undefined;
  const load = (): Promise<Readonly<Record<string, Handler>>> =>
    (loading ??= group.load(ctx).then(
      (handlers) => {
        const loaded = Object.keys(handlers);
        const odd = [...declared.filter((k) => !loaded.includes(k)), ...loaded.filter((k) => !declared.includes(k))];
        if (odd.length > 0) ctx.logger.error({ feature: f.name, routes: odd }, 'a feature\'s routes and its handlers disagree (a bug)');
        return handlers;
      },
      (err: unknown) => {
        loading = undefined;
        throw err;
      },
    ));
  for (const r of group.routes) {
    const key = routeKey(r);
    ctx.routes.add(r.method, r.path, r.access, async (req: ApiRequest): Promise<Answer> => {
      const handler = (await load())[key];
      if (handler === undefined) throw new Error(`feature ${f.name}: no handler for ${key}`);
      return handler(req);
    });
  }
}
