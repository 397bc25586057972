// Fault injection: which faults hit a request, and how a fault rewrites a reply.
import { legacyError, JSON_TYPE } from './http.js';
import type { Reply } from './http.js';

export type FaultKind =
  | 'reset' | 'delay' | 'status' | 'rate-limit' | 'malformed-json' | 'wrong-types'
  | 'truncated' | 'huge' | 'wrong-content-type';

export const FAULT_KINDS: readonly FaultKind[] = [
  'reset', 'delay', 'status', 'rate-limit', 'malformed-json', 'wrong-types', 'truncated', 'huge', 'wrong-content-type',
];

export interface Fault {
  kind: FaultKind;
  /** Exact path, or a prefix ending in '*' ('/v2/devices/*'). Query strings are ignored. */
  path?: string;
  method?: string;
  deviceId?: string;
  /** Share of matching requests hit, 0..1 (default 1). */
  fraction?: number;
  /** Stop after this many hits. */
  count?: number;
  /** Window in fake agent-time ms since the fake started. */
  fromMs?: number;
  untilMs?: number;
  /** For 'status' (default 500). */
  status?: number;
  /** For 'delay', agent ms. */
  delayMs?: number;
  /** For 'rate-limit': the Retry-After value; omitted = no header. */
  retryAfter?: string;
  /** For 'huge': body size in bytes (default 64 MiB). */
  bytes?: number;
}

export interface RequestFacts {
  method: string;
  path: string;
  deviceId?: string;
  t: number;
}

interface Active {
  id: number;
  fault: Fault;
  hits: number;
}

export const DEFAULT_HUGE_BYTES = 64 * 1024 * 1024;

/** Throws on a fault that cannot mean anything, so a typo in a test fails loudly. */
export function validateFault(value: unknown): Fault {
  if (value === null || typeof value !== 'object') throw new Error('fault must be an object');
  const f = value as Record<string, unknown>;
  if (!FAULT_KINDS.includes(f.kind as FaultKind)) throw new Error(`unknown fault kind: ${String(f.kind)}`);
  const strings = ['path', 'method', 'deviceId', 'retryAfter'];
  const numbers = ['fraction', 'count', 'fromMs', 'untilMs', 'status', 'delayMs', 'bytes'];
  for (const k of strings) if (f[k] !== undefined && typeof f[k] !== 'string') throw new Error(`fault.${k} must be a string`);
  for (const k of numbers) if (f[k] !== undefined && typeof f[k] !== 'number') throw new Error(`fault.${k} must be a number`);
  if (typeof f.fraction === 'number' && (f.fraction < 0 || f.fraction > 1)) throw new Error('fault.fraction must be in 0..1');
  if (f.kind === 'status' && typeof f.status === 'number' && (f.status < 100 || f.status > 599)) throw new Error('fault.status must be an HTTP status');
  if (f.kind === 'delay' && (typeof f.delayMs !== 'number' || f.delayMs < 0)) throw new Error('a delay fault needs delayMs >= 0');
  return f as unknown as Fault;
}

export class FaultSet {
  private active: Active[] = [];
  private nextId = 1;

  constructor(private readonly random: () => number = Math.random) {}

  get size(): number {
    return this.active.length;
  }

  add(fault: Fault): { id: number; remove(): void } {
    const entry = { id: this.nextId++, fault: validateFault(fault), hits: 0 };
    this.active.push(entry);
    return { id: entry.id, remove: () => this.remove(entry.id) };
  }

  remove(id: number): boolean {
    const before = this.active.length;
    this.active = this.active.filter((a) => a.id !== id);
    return this.active.length !== before;
  }

  clear(): void {
    this.active = [];
  }

  list(): Array<Fault & { id: number; hits: number }> {
    return this.active.map((a) => ({ ...a.fault, id: a.id, hits: a.hits }));
  }

  /** Every fault that hits this request, in the order they were added; counts the hits. */
  match(req: RequestFacts): Fault[] {
    if (this.active.length === 0) return [];
    const hit: Fault[] = [];
    for (const a of this.active) {
      const f = a.fault;
      if (f.count !== undefined && a.hits >= f.count) continue;
      if (f.method !== undefined && f.method.toUpperCase() !== req.method) continue;
      if (f.path !== undefined && !pathMatches(f.path, req.path)) continue;
      if (f.deviceId !== undefined && f.deviceId !== req.deviceId) continue;
      if (f.fromMs !== undefined && req.t < f.fromMs) continue;
      if (f.untilMs !== undefined && req.t >= f.untilMs) continue;
      if (f.fraction !== undefined && f.fraction < 1 && !(this.random() < f.fraction)) continue;
      a.hits++;
      hit.push(f);
    }
    return hit;
  }
}

export function pathMatches(pattern: string, path: string): boolean {
  return pattern.endsWith('*') ? path.startsWith(pattern.slice(0, -1)) : pattern === path;
}

/** The reply a short-circuiting fault gives instead of the handler's. */
export function faultReply(f: Fault): Reply | undefined {
  if (f.kind === 'status') return legacyError(f.status ?? 500);
  if (f.kind === 'rate-limit') {
    const r = legacyError(429);
    if (f.retryAfter !== undefined) r.headers['retry-after'] = f.retryAfter;
    return r;
  }
  return undefined;
}

// Body faults need a body; a 204 becomes a 200 carrying the damaged body,
// which a client must tolerate as well as any other garbage.
function bodyOf(reply: Reply): string {
  if (reply.body !== undefined && reply.status !== 204) return reply.body.toString();
  return JSON.stringify({ status: 'ok' });
}

function withBody(reply: Reply, body: string, contentType = JSON_TYPE): Reply {
  return { status: reply.status === 204 ? 200 : reply.status, headers: { ...reply.headers, 'content-type': contentType }, body };
}

function wrongType(v: unknown): unknown {
  if (typeof v === 'string') return 12345;
  if (typeof v === 'number') return String(v);
  if (typeof v === 'boolean') return v ? 'yes' : 0;
  if (v === null) return { unexpected: true };
  if (Array.isArray(v)) return 'not-a-list';
  return ['not', 'an', 'object'];
}

/** Applies 'malformed-json', 'wrong-types' and 'wrong-content-type' (the byte-stream faults are done at send time). */
export function transformReply(reply: Reply, f: Fault): Reply {
  const body = bodyOf(reply);
  switch (f.kind) {
    case 'malformed-json':
      return withBody(reply, body.slice(0, Math.max(1, Math.floor(body.length / 2))) + '<html>');
    case 'wrong-types': {
      let value: unknown;
      try {
        value = JSON.parse(body);
      } catch {
        value = body;
      }
      const out =
        value !== null && typeof value === 'object' && !Array.isArray(value)
          ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, wrongType(v)]))
          : wrongType(value);
      return withBody(reply, JSON.stringify(out));
    }
    case 'wrong-content-type':
      return withBody(reply, reply.body === undefined ? '<html><body>OK</body></html>' : body, 'text/html; charset=utf-8');
    default:
      return reply;
  }
}

export function ensureBody(reply: Reply): Reply {
  return reply.body !== undefined && reply.status !== 204 ? reply : withBody(reply, bodyOf(reply));
}
