// Response building for the fake. Handlers return a Reply (a plain value)
// instead of writing to the socket, so the pipeline can still apply faults
// (rewrite, truncate, delay) after the handler has decided what to answer.
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface Reply {
  status: number;
  headers: Record<string, string>;
  body?: Buffer | string;
}

export const JSON_TYPE = 'application/json';

// Titles as the service's legacy device errors spell them; 401 uses the exact
// wording of the service's example body, docs/service-api.md, "Error bodies" ("Not Authorized", not "Unauthorized").
const LEGACY: Record<number, { title: string; detail: string }> = {
  400: { title: 'Bad Request', detail: 'The request is malformed' },
  401: { title: 'Not Authorized', detail: 'You are not allowed to access that resource' },
  402: { title: 'Usage exceeded', detail: 'The plan limits are exceeded' },
  403: { title: 'Forbidden', detail: 'You do not have access to that resource' },
  404: { title: 'Not Found', detail: 'The resource was moved or deleted' },
  405: { title: 'Method Not Allowed', detail: 'The method is not allowed for this resource' },
  409: { title: 'Conflict', detail: 'The resource already exists' },
  413: { title: 'Payload Too Large', detail: 'The request body is too large' },
  422: { title: 'Invalid arguments', detail: 'One or more parameters are invalid' },
  429: { title: 'Rate Limited', detail: 'The rate limit of this path is exceeded' },
  500: { title: 'Server Error', detail: 'The request could not be completed' },
  502: { title: 'Bad Gateway', detail: 'The upstream service failed' },
  503: { title: 'Service Unavailable', detail: 'The service is temporarily unavailable' },
  504: { title: 'Gateway Timeout', detail: 'The upstream service timed out' },
};

export function json(status: number, value: unknown): Reply {
  return { status, headers: { 'content-type': JSON_TYPE }, body: JSON.stringify(value) };
}

export function noContent(): Reply {
  return { status: 204, headers: {} };
}

export function legacyError(status: number, title?: string, detail?: string): Reply {
  const known = LEGACY[status] ?? { title: 'Error', detail: 'The request failed' };
  const t = title ?? known.title;
  return json(status, {
    code: status,
    errors: [{ code: status, detail: detail ?? known.detail, status, title: t }],
    message: t,
  });
}

export function oauthError(error: string, status = 400): Reply {
  return json(status, { error });
}

// The official strict regex from semver.org. The fake deliberately does not use
// the agent's semver package: both sides sharing one parser hides its bugs.
export const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

export function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The scheme and host a client reached this request at: https over the TLS front. */
export function baseUrlOf(req: IncomingMessage): string {
  const tls = (req.socket as { encrypted?: boolean } | undefined)?.encrypted === true;
  return `${tls ? 'https' : 'http'}://${header(req, 'host') ?? '127.0.0.1'}`;
}

/** Splits '/a/b?x=1' without URL parsing (hot path): path and raw query. */
export function splitUrl(url: string | undefined): { path: string; query: string } {
  const u = url ?? '/';
  const q = u.indexOf('?');
  return q < 0 ? { path: u, query: '' } : { path: u.slice(0, q), query: u.slice(q + 1) };
}

export function hasBody(req: IncomingMessage): boolean {
  const len = req.headers['content-length'];
  return (len !== undefined && len !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/** Buffers a request body up to `limit` bytes; null when it is larger. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  if (!hasBody(req)) return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) over = true;
      else chunks.push(c);
    });
    req.on('end', () => resolve(over ? null : Buffer.concat(chunks)));
    req.on('error', reject);
    req.on('aborted', () => reject(new Error('request aborted')));
  });
}

/** JSON object bodies only; anything else is undefined (the caller answers 422/400). */
export function parseJsonObject(body: Buffer): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(body.toString('utf8'));
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export function send(res: ServerResponse, reply: Reply, extra: Record<string, string>): void {
  if (res.destroyed || res.headersSent) return;
  const headers: Record<string, string | number> = { ...extra, ...reply.headers };
  if (reply.body !== undefined && reply.status !== 204) {
    headers['content-length'] = Buffer.byteLength(reply.body);
    res.writeHead(reply.status, headers);
    res.end(reply.body);
  } else {
    res.writeHead(reply.status, headers);
    res.end();
  }
}
