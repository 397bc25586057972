// Workers whose code loads with the first item of their kind (a feature's
// `outbox` declaration, core/feature.ts). The dispatcher holds a stand-in per
// kind from the start, so an item of that kind is never "no worker"; the
// outbox unit loads the real workers when an item of the kind is put or
// replayed (ensure), and until they are here the kind waits (ready() false);
// once loaded, the dispatcher is kicked.
import type { Worker } from './dispatcher.js';
import type { OutboxItem } from './types.js';
import type { Outcome } from './outcome.js';

export class LazyWorkers {
  private readonly loaders = new Map<string, () => Promise<readonly Worker[]>>();
  private readonly loaded = new Map<string, Worker>();
  private readonly loading = new Map<string, Promise<void>>();

  /** `into` is the dispatcher's worker list: the stand-ins are added to it. */
  constructor(
    private readonly into: Worker[],
    private readonly kick: () => void,
    private readonly onError: (kinds: readonly string[], err: unknown) => void = () => undefined,
  ) {}

  register(kinds: readonly string[], load: () => Promise<readonly Worker[]>): void {
    for (const kind of kinds) {
      if (this.loaders.has(kind) || this.into.some((w) => w.kind === kind)) throw new Error(`outbox: a worker for '${kind}' registered twice`);
      this.loaders.set(kind, load);
      this.into.push(this.standIn(kind));
    }
  }

  /** Loads the workers of `kind` if it is a lazy one; resolves once they are here (or failed to load). */
  async ensure(kind: string): Promise<void> {
    const load = this.loaders.get(kind);
    if (load === undefined || this.loaded.has(kind)) return;
    let p = this.loading.get(kind);
    if (p === undefined) {
      p = load().then(
        (workers) => {
          for (const w of workers) if (this.loaders.has(w.kind)) this.loaded.set(w.kind, w);
          this.kick();
        },
        (err: unknown) => {
          this.loading.delete(kind);
          this.onError([kind], err);
        },
      );
      // Every kind the same loader serves shares the load.
      for (const [k, l] of this.loaders) if (l === load) this.loading.set(k, p);
    }
    return p;
  }

  /** The lazy kinds. */
  kinds(): string[] {
    return [...this.loaders.keys()];
  }

  private standIn(kind: string): Worker {
    return {
      kind,
      ready: () => {
        const w = this.loaded.get(kind);
        // Not here yet: the kind waits. The dispatcher asks every worker at every look, so this
        // loads nothing: a put or the replay of an item of this kind does (OutboxUnit).
        return w === undefined ? false : (w.ready?.() ?? true);
      },
      run: async (item: OutboxItem, signal: AbortSignal): Promise<Outcome> => {
        await this.ensure(kind);
        const w = this.loaded.get(kind);
        if (w === undefined) throw new Error(`the worker for '${kind}' could not be loaded`);
        return w.run(item, signal);
      },
    };
  }
}
