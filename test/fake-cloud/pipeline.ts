// One API request, start to finish: journal, identify the device, rate limit,
// faults, auth, x-client-version, handler, body faults, delay, send.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { header, legacyError, readBody, send, splitUrl, SEMVER, JSON_TYPE } from './http.js';
import type { Reply } from './http.js';
import { DEFAULT_HUGE_BYTES, ensureBody, faultReply, transformReply } from './faults.js';
import type { Fault, FaultSet } from './faults.js';
import type { RateLimiter } from './rate-limit.js';
import type { Referee, HeartbeatAttempt } from './referee.js';
import type { Clock, CloudState } from './state.js';
import type { Ctx, Route, Router } from './router.js';

export interface JournalEntry {
  /** Fake agent-time ms since start (monotonic). */
  t: number;
  method: string;
  /** Path without query string (presigned signatures stay out of the journal). */
  path: string;
  deviceId?: string;
  authValid: boolean;
  clientVersion?: string;
  /** 0 until answered, and for a reset connection. */
  status: number;
  /** Fault kinds that hit this request. */
  faults?: string[];
  /** Test-only, storage requests only: whether the request carried an Authorization header (presigned URLs must not). */
  authorization?: boolean;
  /** Test-only, storage PUTs only: body bytes the fake read, counted as they arrive (a cut PUT counts what came). */
  bodyBytes?: number;
}

export const HEARTBEAT_PATH = '/v2/devices/heartbeat';
const MAX_BODY = 1024 * 1024;

export interface PipelineDeps {
  clock: Clock;
  state: CloudState;
  router: Router;
  limiter: RateLimiter;
  faults: FaultSet;
  referee: Referee;
  journal: JournalEntry[];
  journalLimit: number;
  /** Requests under this prefix go to `storage` (presigned upload URLs). */
  storagePrefix: string;
  storage: (req: IncomingMessage, res: ServerResponse, entry: JournalEntry, faults: Fault[]) => void;
  /** The device whose asset an upload URL path belongs to (for device-scoped faults). */
  storageOwner: (path: string) => string | undefined;
}

export class Pipeline {
  private readonly timers = new Set<{ cancel(): void }>();
  private closed = false;

  constructor(private readonly d: PipelineDeps) {}

  /** Cancels every delayed response (their sockets are destroyed by the server close). */
  close(): void {
    this.closed = true;
    for (const t of this.timers) t.cancel();
    this.timers.clear();
  }

  /** Runs fn after `agentMs` of agent time; cancelled by close(). */
  defer(fn: () => void, agentMs: number): void {
    if (this.closed) return;
    const fire = (): void => {
      this.timers.delete(timer);
      fn();
    };
    const timer = this.d.clock.setTimer?.(fire, agentMs) ?? realTimer(fire, agentMs / this.d.clock.timeScale);
    this.timers.add(timer);
  }

  record(entry: JournalEntry): void {
    const j = this.d.journal;
    j.push(entry);
    // Bounded for long simulator runs; the oldest half goes in one splice.
    if (j.length > this.d.journalLimit) j.splice(0, j.length - Math.floor(this.d.journalLimit / 2));
  }

  handle = (req: IncomingMessage, res: ServerResponse): void => {
    this.run(req, res).catch((err: unknown) => {
      if (!res.headersSent && !res.destroyed) send(res, legacyError(500, undefined, String(err)), {});
    });
  };

  private async run(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { clock, state, referee } = this.d;
    const t = clock.now();
    const method = req.method ?? 'GET';
    const { path, query } = splitUrl(req.url);
    const entry: JournalEntry = { t, method, path, authValid: false, status: 0 };
    const clientVersion = header(req, 'x-client-version');
    if (clientVersion !== undefined) entry.clientVersion = clientVersion;
    this.record(entry);

    if (path.startsWith(this.d.storagePrefix)) {
      // Storage is not the API host: no bearer, no rate-limit headers, not "seen".
      entry.authorization = header(req, 'authorization') !== undefined;
      const owner = this.d.storageOwner(path);
      this.d.storage(req, res, entry, this.d.faults.match({ method, path, t, ...(owner !== undefined ? { deviceId: owner } : {}) }));
      return;
    }

    const bearer = state.checkBearer(header(req, 'authorization'));
    const match = this.d.router.match(method, path);
    const routeKey = match.route?.pattern ?? path;
    const rl = this.d.limiter.take(bearer.deviceId ?? 'anonymous', routeKey, t);
    const rlHeaders: Record<string, string> = {
      'x-ratelimit-limit': String(rl.config.limit),
      'x-ratelimit-remaining': String(rl.remaining),
      'x-ratelimit-window': String(rl.config.windowMs),
    };
    const ctx: Ctx = { req, method, path, query, t, authValid: bearer.valid, params: match.params, body: Buffer.alloc(0) };
    if (clientVersion !== undefined) ctx.clientVersion = clientVersion;
    if (bearer.deviceId !== undefined) ctx.deviceId = entry.deviceId = bearer.deviceId;

    const attempt =
      bearer.deviceId !== undefined && match.route?.pattern === HEARTBEAT_PATH ? referee.heartbeat(bearer.deviceId, t) : undefined;

    const hits = this.d.faults.match({ method, path, t, ...(bearer.deviceId !== undefined ? { deviceId: bearer.deviceId } : {}) });
    if (hits.length > 0) {
      entry.faults = hits.map((f) => f.kind);
      referee.disturbed(bearer.deviceId, t);
    }
    if (hits.some((f) => f.kind === 'reset')) {
      this.finish(entry, ctx, attempt, 0);
      req.socket.destroy();
      return;
    }

    let reply: Reply | undefined;
    for (const f of hits) reply ??= faultReply(f);
    // An injected 429 storm must look like an empty bucket.
    if (reply?.status === 429) rlHeaders['x-ratelimit-remaining'] = '0';
    if (!reply && !rl.allowed) {
      reply = legacyError(429);
      reply.headers['retry-after'] = String(Math.max(1, Math.ceil(rl.retryAfterMs / 1000)));
    }
    reply ??= await this.dispatch(ctx, match.route, match.methodMismatch).catch((err: unknown) =>
      legacyError(500, undefined, `fake cloud bug: ${String(err)}`),
    );
    for (const f of hits) reply = transformReply(reply, f);

    const delay = hits.find((f) => f.kind === 'delay');
    const stream = hits.find((f) => f.kind === 'truncated' || f.kind === 'huge');
    const final = reply;
    const deliver = () => {
      this.finish(entry, ctx, attempt, final.status);
      if (stream?.kind === 'truncated') sendTruncated(res, final, rlHeaders);
      else if (stream?.kind === 'huge') sendHuge(res, final, rlHeaders, stream.bytes ?? DEFAULT_HUGE_BYTES);
      else send(res, final, rlHeaders);
    };
    if (delay && !this.closed) {
      const ms = delay.delayMs ?? 0;
      referee.disturbed(bearer.deviceId, t, t + ms);
      this.defer(deliver, ms);
    } else {
      deliver();
    }
  }

  private finish(entry: JournalEntry, ctx: Ctx, attempt: HeartbeatAttempt | undefined, status: number): void {
    entry.status = status;
    entry.authValid = ctx.authValid;
    if (ctx.deviceId !== undefined) {
      entry.deviceId = ctx.deviceId;
      this.d.referee.request(ctx.deviceId, ctx.clientVersion !== undefined);
    }
    if (attempt) attempt.status = status;
  }

  private async dispatch(ctx: Ctx, route: Route | undefined, mismatch: boolean): Promise<Reply> {
    if (!route) return legacyError(mismatch ? 405 : 404);
    if (route.auth === 'bearer' && !ctx.authValid) return legacyError(401);
    if (route.auth !== 'public' && ctx.clientVersion !== undefined && !SEMVER.test(ctx.clientVersion)) {
      return legacyError(422, undefined, 'x-client-version must be a valid semantic version (semver.org)');
    }
    if (route.auth === 'bearer' && ctx.deviceId !== undefined) this.d.state.seen(ctx.deviceId, ctx.clientVersion);
    const body = await readBody(ctx.req, MAX_BODY);
    if (body === null) return legacyError(413);
    ctx.body = body;
    return route.handler(ctx);
  }
}

function realTimer(fn: () => void, ms: number): { cancel(): void } {
  const handle = setTimeout(fn, ms);
  return { cancel: () => clearTimeout(handle) };
}

function sendTruncated(res: ServerResponse, reply: Reply, extra: Record<string, string>): void {
  if (res.destroyed) return;
  const full = ensureBody(reply);
  const body = Buffer.from(full.body ?? '');
  res.writeHead(full.status, { ...extra, ...full.headers, 'content-length': body.length });
  // Promise the whole body, deliver half, then drop the connection.
  res.write(body.subarray(0, Math.floor(body.length / 2)), () => res.destroy());
}

function sendHuge(res: ServerResponse, reply: Reply, extra: Record<string, string>, bytes: number): void {
  if (res.destroyed) return;
  const head = '{"padding":"';
  const tail = '"}';
  const fill = Math.max(0, bytes - head.length - tail.length);
  const status = reply.status === 204 ? 200 : reply.status;
  res.writeHead(status, { ...extra, 'content-type': JSON_TYPE, 'content-length': head.length + fill + tail.length });
  res.write(head);
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let left = fill;
  const pump = () => {
    while (left > 0 && !res.destroyed) {
      const n = Math.min(left, chunk.length);
      left -= n;
      if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
        res.once('drain', pump);
        return;
      }
    }
    if (!res.destroyed) res.end(tail);
  };
  pump();
}
