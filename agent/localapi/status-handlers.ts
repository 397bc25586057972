// GET /v1/status and GET /v1/events: the status document, and the stream
// of what changes (events.ts).
import type { StatusDocument } from '../core/status-document.js';
import type { EventsHub } from './events.js';
import { ApiError, type HandlerMap } from './handlers.js';

export interface StatusHandlerDeps {
  status: () => StatusDocument | undefined;
  events: EventsHub;
}

export function registerStatusHandlers(routes: HandlerMap, d: StatusHandlerDeps): void {
  routes.add('GET', '/v1/status', 'read', () => {
    const doc = d.status();
    if (doc === undefined) throw new ApiError(503, 'unavailable', 'the daemon is starting: no status yet; ask again in a moment');
    return { status: 200, body: doc };
  });
  routes.add('GET', '/v1/events', 'read', () => ({ stream: (sink) => d.events.attach(sink) }));
}
