// The local API as a daemon unit: the server (server.ts) listens on
// `<runtime-dir>/api.sock` from start() to stop(). It starts after the units
// whose handlers it serves and before the controller, so the camera's UI can
// connect as soon as the daemon has something to say; a socket that cannot
// be made is logged and the daemon runs on without its API (heartbeats
// matter more).
import path from 'node:path';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { DaemonUnit } from '../core/unit.js';
import type { HandlerMap } from './handlers.js';
import { API_SOCKET, LocalApiServer } from './server.js';

export { API_SOCKET };

/** Where the daemon serves its API: `<runtime-dir>/api.sock`. */
export const apiSocketOf = (runtimeDir: string): string => path.join(runtimeDir, API_SOCKET);

export interface LocalApiUnitDeps {
  socketPath: string;
  routes: HandlerMap;
  /** The daemon's clock: the events streams' keep-alive lines and stall checks run on it. */
  clock: Clock;
  logger?: Logger;
}

export class LocalApiUnit implements DaemonUnit {
  readonly name = 'local-api';
  private server: LocalApiServer | undefined;
  private listening: Promise<void> = Promise.resolve();

  constructor(private readonly d: LocalApiUnitDeps) {}

  start(): void {
    const { socketPath, routes, clock, logger } = this.d;
    const server = new LocalApiServer({ socketPath, routes, clock, ...(logger && { logger }) });
    this.server = server;
    this.listening = server.start().then(
      () => logger?.info({ socket: socketPath }, 'local API listening'),
      (err: unknown) => {
        this.server = undefined;
        logger?.error({ socket: socketPath, err: err instanceof Error ? err.message : String(err) }, 'cannot serve the local API; the daemon runs on without it');
      },
    );
  }

  /** Every route served, `GET /v1/status (read)`: the schema's test checks each is described (docs/local-api.openapi.json). */
  routeList(): string[] {
    return this.d.routes.list();
  }

  /** Resolves once the socket listens (or failed to). */
  ready(): Promise<void> {
    return this.listening;
  }

  async stop(): Promise<void> {
    await this.listening;
    await this.server?.stop();
    this.server = undefined;
  }
}
