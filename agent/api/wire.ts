// The transport's seam below got: one request as it would go on the wire,
// every header already set, the body encoded as got encodes it. Only the
// fleet simulator plugs a wire in (many units in one process on a virtual
// clock); everything above it in transport.ts runs unchanged.
import type { HeaderBag } from './rate-limit.js';

export interface WireRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Path below the base URL, with its leading slash. */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** The answer must be complete within this many agent ms, else reject with a timeout (code ETIMEDOUT). */
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface WireResponse {
  status: number;
  headers: HeaderBag;
  body: Buffer;
}

/** Resolves with any answer, whatever its status; rejects as a socket would, with an error carrying a `code` (ECONNREFUSED, ECONNRESET, ETIMEDOUT). */
export type Wire = (req: WireRequest) => Promise<WireResponse>;

/** What got would send for this spec: a form urlencoded, JSON as JSON, with their content types and length. */
export function wireRequest(
  spec: { method: WireRequest['method']; path: string; form?: Record<string, string>; json?: unknown; signal?: AbortSignal },
  headers: Record<string, string>,
  timeoutMs: number,
): WireRequest {
  const out: Record<string, string> = { ...headers };
  let body: Buffer | undefined;
  if (spec.form !== undefined) {
    body = Buffer.from(new URLSearchParams(spec.form).toString());
    out['content-type'] ??= 'application/x-www-form-urlencoded';
  } else if (spec.json !== undefined) {
    body = Buffer.from(JSON.stringify(spec.json));
    out['content-type'] ??= 'application/json';
  }
  if (body !== undefined) out['content-length'] = String(body.length);
  const path = `/${spec.path.replace(/^\/+/, '')}`;
  return { method: spec.method, path, headers: out, ...(body !== undefined && { body }), timeoutMs, ...(spec.signal !== undefined && { signal: spec.signal }) };
}
