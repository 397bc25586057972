// The outbox feature's units (feature.ts): the queue on flash, the
// dispatcher that replays it towards the service, and the unit that runs
// both, provided to every other feature as `ctx.outbox`. The workers come
// from the features that own the kinds, each loaded with its first item
// (lazy-workers.ts).
import type { FeatureContext, FeatureParts } from '../core/feature.js';
import { Dispatcher, type Worker } from './dispatcher.js';
import { LazyWorkers } from './lazy-workers.js';
import { Outbox } from './outbox.js';
import { OutboxUnit } from './outbox-unit.js';

export function buildOutbox(ctx: FeatureContext): FeatureParts {
  const { settings, clock, logger, bus } = ctx;
  const outbox = new Outbox({ dir: ctx.paths.queue, clock, bootId: ctx.bootId, capBytes: settings.queueMaxBytes, logger });
  const workers: Worker[] = [];
  const lazy = new LazyWorkers(workers, () => dispatcher.kick(), (kinds, err) => logger.error({ kinds, err: err instanceof Error ? err.message : String(err) }, 'cannot load the worker of an outbox kind; its items wait'));
  const dispatcher = new Dispatcher({
    outbox,
    workers,
    clock,
    random: ctx.random,
    logger,
    rateLimit: () => ctx.api.lastMeta?.rateLimit,
    // The one 401 policy: the token source's (auth/token-source.ts callRefused).
    unauthorized: (why, sentAt) => ctx.services.get('tokens')?.callRefused(why, sentAt) ?? Promise.resolve('not-token' as const),
    onSettled: () => {
      bus.emit('outboxSettled', {});
      bus.emit('statusChanged', {});
    },
  });
  const unit = new OutboxUnit(outbox, dispatcher, bus, logger, lazy);
  ctx.services.provide('outbox', unit);
  return { units: [unit] };
}
