// The durable queue as a feature (core/feature.ts): first in the list, since
// every other feature's `ctx.outbox` is the unit it provides. Its `queue`
// section is declared in queue-section.ts; its code (the outbox, the
// dispatcher) is in build.ts.
import type { Feature } from '../core/feature.js';
import type { OutboxUnit } from './outbox-unit.js';
import { queueSection } from './queue-section.js';
import './events.js';

declare module '../core/feature.js' {
  interface FeatureServices {
    /** The outbox unit; FeatureContext.outbox is this. */
    outbox: OutboxUnit;
  }
}

export const outbox: Feature = {
  name: 'outbox',
  section: { name: 'queue', check: queueSection, aliases: ['outbox'] },
  build: async (ctx) => (await import('./build.js')).buildOutbox(ctx),
};
