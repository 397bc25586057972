// The local API as a feature (core/feature.ts): the server on
// <runtime-dir>/api.sock (local-api-unit.ts, server.ts), listening from start
// so the camera's UI can connect at once; GET /v1/status and GET /v1/events
// (status-handlers.ts, events.ts). Every other route is a feature's own,
// added to the one route table (ctx.routes) for it.
import type { Feature } from '../core/feature.js';
import type { StatusDocument } from '../core/status-document.js';
import type { EventsHub } from './events.js';

declare module '../core/feature.js' {
  interface FeatureServices {
    /** The status document now (the daemon's status publisher); undefined before the controller's first snapshot. */
    status: { document(): StatusDocument | undefined };
    /** The readers of GET /v1/events: FeatureContext.lines writes to them. */
    eventLines: Pick<EventsHub, 'publish' | 'readerCount'>;
  }
}

export const localApi: Feature = {
  name: 'local-api',
  build: async (ctx) => {
    const [{ EventsHub }, { apiSocketOf, LocalApiUnit }, { registerStatusHandlers }] = await Promise.all([import('./events.js'), import('./local-api-unit.js'), import('./status-handlers.js')]);
    const { bus, clock, logger, services } = ctx;
    const status = (): StatusDocument | undefined => services.get('status')?.document();
    const events = new EventsHub({ bus, clock, status, uploads: () => services.get('uploads')?.rows() ?? [] });
    services.provide('eventLines', events);
    registerStatusHandlers(ctx.routes, {
      status: () => {
        // Figures read only when asked (the network's link) are read now.
        bus.emit('statusAsked', {});
        return status();
      },
      events,
    });
    const server = new LocalApiUnit({ socketPath: apiSocketOf(ctx.paths.runtime), routes: ctx.routes, clock, logger });
    return { units: [events, server] };
  },
};
