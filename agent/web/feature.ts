// The camera's web page as a feature (core/feature.ts): on only with
// webListen set. Off, nothing of agent/web/ but this declaration is loaded
// and nothing listens. On, the server (web-server.ts) is loaded and listens
// as the daemon starts; the page and its handlers (web-app.ts) load on the
// first request. GET /v1/web gives the camera's own UI the page's address
// and PIN.
import type { Feature } from '../core/feature.js';

export const web: Feature = {
  name: 'web',
  enabled: (ctx) => ctx.settings.web !== undefined,
  routes: {
    routes: [{ method: 'GET', path: '/v1/web', access: 'read' }],
    load: async (ctx) => (await import('./web-server.js')).webHandlers({ web: ctx.settings.web!, stateDir: ctx.paths.state }),
  },
  build: async (ctx) => ({ units: [(await import('./web-server.js')).webServerOf(ctx)] }),
};
