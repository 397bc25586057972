// Presence and identity: /health, /v2/me, /v2/devices/me, the heartbeat.
import { json, noContent, legacyError } from './http.js';
import type { Router } from './router.js';
import type { CloudState } from './state.js';
import { HEARTBEAT_PATH } from './pipeline.js';

export function coreRoutes(router: Router, state: CloudState): void {
  router
    .add({ method: 'GET', pattern: '/health', auth: 'public', handler: () => json(200, { status: 'ok' }) })
    .add({ method: 'GET', pattern: '/v2/me', auth: 'bearer', handler: () => json(200, state.userJson()) })
    .add({
      method: 'GET',
      pattern: '/v2/devices/me',
      auth: 'bearer',
      handler: (ctx) => {
        const device = ctx.deviceId === undefined ? undefined : state.deviceJson(ctx.deviceId);
        return device ? json(200, device) : legacyError(404);
      },
    })
    // Presence itself is recorded by the pipeline (any valid call counts as "seen").
    .add({ method: 'POST', pattern: HEARTBEAT_PATH, auth: 'bearer', handler: () => noContent() });
}
