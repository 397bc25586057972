// The web page's listening socket, a daemon unit, built only when webListen
// is set (feature.ts): start() makes the PIN if there is none (pin.ts) and
// listens on webListen, over HTTPS when webCertFile and webKeyFile are
// given; the page and its handlers (web-app.ts) are loaded by the first
// request, so a camera whose page nobody opens pays for a socket and this
// file. A socket that cannot be made (the port taken, a certificate that
// does not load) is logged and the daemon runs on without its page, as it
// does without its local API: heartbeats matter more.
//
// One phone, or a scanner on the LAN, never costs the daemon more than its
// share (lib/timing.ts WEB_PAGE): a cap on connections (newcomers past it are
// dropped), timeouts for a head, a request and an idle connection, a head
// cap; the page's own caps are web-app.ts's.
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { WebSettings } from '../config/types.js';
import type { FeatureContext } from '../core/feature.js';
import type { DaemonUnit } from '../core/unit.js';
import { READ_LIMITS, readBoundedFile } from '../lib/bounded-read.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { WEB_PAGE } from '../lib/timing.js';
import { ApiError, type Handler, type HandlerMap } from '../localapi/handlers.js';
import { pageUrls } from './addresses.js';
import { ensureWebPin, readWebPin } from './pin.js';
import type { CameraNames } from './security.js';
import type { PageInput, WebApp } from './web-app.js';

export interface WebServerDeps {
  web: WebSettings;
  stateDir: string;
  clock: Clock;
  logger?: Logger;
  /** The local API's one handler map: the page's requests are answered from it. */
  routes: Pick<HandlerMap, 'match'>;
  /** The profile's inputs, a button each. */
  inputs: () => readonly PageInput[];
  /** What the camera answers to (tests name their own). */
  camera?: CameraNames;
  limits?: Partial<Record<keyof typeof WEB_PAGE, number>>;
}

export class WebServer implements DaemonUnit {
  readonly name = 'web-page';
  private server: http.Server | https.Server | undefined;
  private app: Promise<WebApp> | undefined;
  private loaded: WebApp | undefined;
  private readonly conns = new Set<Socket>();
  private listening: Promise<void> = Promise.resolve();
  private pin = '';

  constructor(private readonly d: WebServerDeps) {}

  start(): void {
    this.listening = this.listen().catch((err: unknown) => {
      this.server = undefined;
      this.d.logger?.error({ listen: this.d.web.listen, err: err instanceof Error ? err.message : String(err) }, 'cannot serve the web page; the daemon runs on without it');
    });
  }

  /** Resolves once the socket listens (or failed to). */
  ready(): Promise<void> {
    return this.listening;
  }

  /** The port it listens on, once it does. */
  get port(): number | undefined {
    const a = this.server?.address();
    return typeof a === 'object' && a !== null ? a.port : undefined;
  }

  /** Whether the page's code was loaded (by a first request). */
  get pageLoaded(): boolean {
    return this.app !== undefined;
  }

  async stop(): Promise<void> {
    await this.listening;
    const server = this.server;
    this.server = undefined;
    this.loaded?.stop();
    if (server === undefined) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    for (const s of this.conns) s.destroy();
    await closed;
  }

  private async listen(): Promise<void> {
    const { web, logger } = this.d;
    const l = { ...WEB_PAGE, ...this.d.limits };
    const { pin, made } = await ensureWebPin(this.d.stateDir);
    this.pin = pin;
    if (made) logger?.info({}, 'web page: made its PIN; `c2c-agent web-pin` shows it');
    const options: http.ServerOptions = {
      maxHeaderSize: l.maxHeaderBytes,
      headersTimeout: l.headersTimeoutMs,
      requestTimeout: l.requestTimeoutMs,
      keepAliveTimeout: l.idleTimeoutMs,
      connectionsCheckingInterval: l.headersTimeoutMs,
    };
    let server: http.Server | https.Server;
    if (web.tls !== undefined) {
      const spec = (what: string) => ({ what, maxBytes: READ_LIMITS.caFile, source: web.source });
      const [cert, key] = await Promise.all([readBoundedFile(web.tls.certFile, spec('web page certificate file')), readBoundedFile(web.tls.keyFile, spec('web page key file'))]);
      server = https.createServer({ ...options, cert, key });
    } else server = http.createServer(options);
    server.setTimeout(l.idleTimeoutMs);
    server.on('connection', (socket: Socket) => {
      if (this.conns.size >= l.maxConnections) {
        socket.destroy();
        return;
      }
      this.conns.add(socket);
      socket.on('close', () => this.conns.delete(socket));
      socket.on('error', () => undefined);
    });
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => this.request(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(web.port, web.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (err) => logger?.error({ err: String(err) }, 'web page: the server failed'));
    this.server = server;
    logger?.info({ listen: web.listen, urls: pageUrls(web), https: web.tls !== undefined }, 'web page listening');
  }

  /** The first request loads the page's code; every request is handed to it. */
  private request(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.app ??= import('./web-app.js').then(({ WebApp }) => {
      const app = new WebApp({
        clock: this.d.clock,
        ...(this.d.logger && { logger: this.d.logger }),
        routes: this.d.routes,
        pin: () => this.pin,
        https: this.d.web.tls !== undefined,
        listenHost: this.d.web.host,
        ...(this.d.camera && { camera: this.d.camera }),
        inputs: this.d.inputs,
        ...(this.d.limits && { limits: this.d.limits }),
      });
      this.loaded = app;
      return app;
    });
    this.app.then(
      (app) => {
        if (this.server === undefined) res.destroy();
        else app.handle(req, res);
      },
      (err: unknown) => {
        this.app = undefined;
        this.d.logger?.error({ err: String(err) }, 'web page: cannot load the page');
        res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8', 'x-frame-options': 'DENY', 'cache-control': 'no-store' });
        res.end('The page could not be loaded; see the agent log.\n');
      },
    );
  }
}

/** The server as the feature builds it (feature.ts): the daemon's clock, logger, state dir and handler map; a button per profile input. */
export function webServerOf(ctx: Pick<FeatureContext, 'settings' | 'paths' | 'clock' | 'logger' | 'routes' | 'profile'>): WebServer {
  const inputs = ctx.profile.channels.flatMap((c) => (c.inputs ?? []).map((i) => ({ channel: c.key, index: i.index, name: i.name })));
  return new WebServer({ web: ctx.settings.web!, stateDir: ctx.paths.state, clock: ctx.clock, logger: ctx.logger, routes: ctx.routes, inputs: () => inputs });
}

/**
 * GET /v1/web on the local API: the camera's own UI asks where the page is
 * and its PIN, to show them on the camera's screen. The one answer of the
 * local API that carries the PIN (docs/local-api.md, "The web page"); the
 * page itself never reaches this route (web-app.ts PAGE_ROUTES). Registered
 * only while the page is on (feature.ts): off, the path is unknown (404).
 */
export function webHandlers(d: { web: WebSettings; stateDir: string }): Record<string, Handler> {
  return {
    'GET /v1/web': async () => {
      const pin = await readWebPin(d.stateDir);
      if (pin === undefined) throw new ApiError(503, 'unavailable', 'the web page has no PIN yet: the daemon makes it as the page starts; ask again in a moment');
      return { status: 200, body: { listen: d.web.listen, urls: pageUrls(d.web), https: d.web.tls !== undefined, pin } };
    },
  };
}
