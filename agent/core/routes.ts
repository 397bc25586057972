// The local API's one handler map: method + path -> handler, each marked
// `read` (answers from what the daemon holds, changes nothing) or `write`
// (changes the daemon's state or its files). Every feature adds its own
// routes, through its context (core/feature.ts: ctx.routes, or its `routes`
// declaration, whose handlers load on the first call), and
// localapi/server.ts looks a request up here and nowhere else. It lives in
// core because every feature's context carries it; localapi/handlers.ts
// re-exports it.
//
// A path is literal segments and `{name}` parameters: `/v1/uploads/{id}`.

import { AgentError, type ErrorKind } from '../lib/errors.js';

export type Access = 'read' | 'write';

/** A request as a handler sees it: the body already read (within the cap) and parsed. */
export interface ApiRequest {
  method: string;
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  /** The parsed JSON body; undefined when there was none. */
  body: unknown;
}

/** A plain answer: a status and a JSON body. */
export interface JsonAnswer {
  status: number;
  body: unknown;
}

/**
 * A streamed answer (GET /v1/events): the server hands the response over
 * once the head is written; `attach` owns it from then on and ends it.
 */
export interface StreamAnswer {
  stream: (out: StreamSink) => void;
}

/** What a streaming handler writes to: one JSON object per line, bounded by the server. */
export interface StreamSink {
  /** Queues one line; false once the reader is gone or too far behind (the sink was closed). */
  send(obj: unknown): boolean;
  /** Ends the stream after an optional last line. */
  end(last?: unknown): void;
  /** Bytes queued and not yet taken by the reader. */
  readonly buffered: number;
  /** Called once when the stream ends, whoever ended it. */
  onClose(fn: () => void): void;
}

export type Answer = JsonAnswer | StreamAnswer;

export type Handler = (req: ApiRequest) => Answer | Promise<Answer>;

/** A refusal with an HTTP status and a kind: the body is `{"error":{"kind","message"}}`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly kind: string,
    message: string,
  ) {
    super(message);
  }
}

export const badRequest = (message: string): ApiError => new ApiError(400, 'bad-request', message);
export const notFound = (message: string): ApiError => new ApiError(404, 'not-found', message);
export const forbidden = (message: string): ApiError => new ApiError(403, 'forbidden', message);

/** The HTTP status of a refusal of each kind: the request was fine, the daemon or the service could not do it. */
const STATUS_OF: Record<ErrorKind, number> = {
  usage: 400,
  config: 409,
  unauthorized: 403,
  forbidden: 403,
  'rate-limited': 503,
  paused: 503,
  conflict: 409,
  'not-found': 502,
  server: 502,
  network: 503,
  protocol: 502,
  unavailable: 503,
  timeout: 504,
  disk: 507,
  // The service's certificate could not be checked: an upstream that did not prove itself, or a clock to set.
  tls: 502,
  clock: 503,
  internal: 500,
};

/** An AgentError as the API's refusal; its kind kept, so a client maps it to the same exit code. */
export function apiErrorOf(err: unknown): unknown {
  if (!(err instanceof AgentError)) return err;
  return new ApiError(STATUS_OF[err.kind], err.kind, err.message);
}

interface Route {
  method: string;
  segments: string[];
  access: Access;
  handler: Handler;
}

export type Match = { kind: 'found'; handler: Handler; access: Access; params: Record<string, string> } | { kind: 'no-path' } | { kind: 'no-method'; allowed: string[] };

export class HandlerMap {
  private readonly routes: Route[] = [];

  /** Registers one route; a second registration of the same method and path is a bug. */
  add(method: string, path: string, access: Access, handler: Handler): this {
    const segments = split(path);
    if (this.routes.some((r) => r.method === method && r.segments.join('/') === segments.join('/'))) throw new Error(`local API: ${method} ${path} registered twice`);
    this.routes.push({ method, segments, access, handler });
    return this;
  }

  /** What serves `method path`: a handler, a path nobody serves (404), or a path served for other methods (405). */
  match(method: string, path: string): Match {
    const parts = split(path);
    const allowed: string[] = [];
    for (const r of this.routes) {
      const params = matchSegments(r.segments, parts);
      if (params === undefined) continue;
      if (r.method === method) return { kind: 'found', handler: r.handler, access: r.access, params };
      allowed.push(r.method);
    }
    return allowed.length > 0 ? { kind: 'no-method', allowed } : { kind: 'no-path' };
  }

  /** Every route's handler by `'METHOD /path'` (core/feature.ts routeKey): what a feature's lazily loaded route group answers with. */
  handlers(): Record<string, Handler> {
    return Object.fromEntries(this.routes.map((r) => [`${r.method} /${r.segments.join('/')}`, r.handler]));
  }

  /** Every route, for the docs' test: `GET /v1/status (read)`. */
  list(): string[] {
    return this.routes.map((r) => `${r.method} /${r.segments.join('/')} (${r.access})`);
  }
}

/** The handlers a `register…Handlers(routes, deps)` function adds, by `'METHOD /path'`. */
export function handlersOf(register: (routes: HandlerMap) => void): Record<string, Handler> {
  const routes = new HandlerMap();
  register(routes);
  return routes.handlers();
}

// Empty segments are kept, so they match nothing: dropped, `DELETE /v1/uploads/` (a
// client's `/v1/uploads/${id}` with an empty id) read as `DELETE /v1/uploads`, cancel all.
function split(path: string): string[] {
  return (path.startsWith('/') ? path.slice(1) : path).split('/');
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | undefined {
  if (pattern.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    const v = parts[i]!;
    if (p.startsWith('{') && p.endsWith('}')) {
      if (v === '') return undefined;
      let decoded: string;
      try {
        decoded = decodeURIComponent(v);
      } catch {
        return undefined;
      }
      params[p.slice(1, -1)] = decoded;
    } else if (p !== v) return undefined;
  }
  return params;
}
