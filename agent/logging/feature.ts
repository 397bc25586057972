// Real-time logging as a feature (core/feature.ts; docs/real-time-logging.md):
// buttons that mark takes, and comments on clips. Always listed, costing an
// idle camera whose profile has no inputs only this declaration and the small
// host (host.ts): the local API's routes load on their first call, the
// workers with the first press or comment in the queue, the input device's
// reader only for a profile whose inputs have keys.
import type { Feature, FeatureContext } from '../core/feature.js';
import { LoggingHost, LOGGING_KINDS, loggingSection } from './host.js';

const ROUTES = [
  { method: 'POST', path: '/v1/inputs/{channel}/{index}', access: 'write' },
  { method: 'POST', path: '/v1/comments', access: 'write' },
] as const;

export const logging: Feature = {
  name: 'logging',
  section: { name: 'logging', check: loggingSection },
  routes: {
    routes: ROUTES,
    load: async (ctx: FeatureContext) => (await import('./load.js')).handlers(ctx),
  },
  outbox: {
    kinds: LOGGING_KINDS,
    load: async (ctx: FeatureContext) => (await import('./load.js')).workers(ctx),
  },
  build(ctx) {
    const host = new LoggingHost(ctx);
    ctx.services.provide('logging', host);
    // profiles.ts allows an inputDevice only with keys to read from it.
    if (ctx.profile.inputDevice === undefined) return { units: [host] };
    return import('./input-unit.js').then(({ InputUnit }) => ({ units: [host, new InputUnit(ctx, host)] }));
  },
};
