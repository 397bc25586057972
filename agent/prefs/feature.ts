// The daemon's preferences as a feature (core/feature.ts): GET and PATCH
// /v1/prefs, kept in <state-dir>/prefs.json by prefs-store.ts and read by
// the others through the `prefs` service. The store is read at start (a
// media watcher must know autoUpload before its first find); the handlers
// load with the first call.
import type { Feature } from '../core/feature.js';
import { handlersOf } from '../core/routes.js';
import type { PrefsStore } from './prefs-store.js';
import { prefsSection } from './section.js';
import './events.js';

declare module '../core/feature.js' {
  interface FeatureServices {
    prefs: PrefsStore;
  }
}

export const prefs: Feature = {
  name: 'prefs',
  section: { name: 'prefs', check: prefsSection },
  routes: {
    routes: [
      { method: 'GET', path: '/v1/prefs', access: 'read' },
      { method: 'PATCH', path: '/v1/prefs', access: 'write' },
    ],
    load: async (ctx) => {
      const { registerPrefsHandlers } = await import('./prefs-handlers.js');
      const store = ctx.services.get('prefs');
      if (store === undefined) throw new Error('prefs: no store');
      return handlersOf((routes) => registerPrefsHandlers(routes, store));
    },
  },
  build: async (ctx) => {
    const { PrefsStore } = await import('./prefs-store.js');
    const store = new PrefsStore({ stateDir: ctx.paths.state, bus: ctx.bus, clock: ctx.clock, logger: ctx.logger });
    ctx.services.provide('prefs', store);
    return { units: [store] };
  },
};
