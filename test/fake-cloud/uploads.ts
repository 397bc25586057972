// Assets, their presigned storage URLs (served by the fake itself, S3-like)
// and real-time upload parts.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { baseUrlOf, header, json, legacyError, parseJsonObject, splitUrl } from './http.js';
import type { Router } from './router.js';
import type { Clock, CloudState } from './state.js';
import type { Fault } from './faults.js';
import type { JournalEntry, Pipeline } from './pipeline.js';

export const STORAGE_PREFIX = '/_storage/';
export const UPLOAD_LIFETIME_MS = 24 * 3600_000;
export const MIN_REALTIME_PART = 5 * 1024 * 1024;
/** The largest asset_filesize the service takes: 5 TiB. */
export const MAX_REALTIME_FILESIZE = 5 * 1024 ** 4;
const FILETYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/i;

interface Part {
  key: string;
  expectedBytes: number;
  signature: string;
  received?: { bytes: number; sha256: string; t: number };
}

interface Asset {
  id: string;
  deviceId: string;
  name: string;
  filetype: string;
  filesize: number;
  offset: number;
  realtime: boolean;
  /** A real-time asset's final part number, once one was asked for. */
  finalPart?: number;
  createdAt: number;
  parts: Map<string, Part>;
  body: Record<string, unknown>;
}

export interface AssetView {
  id: string;
  deviceId: string;
  name: string;
  filetype: string;
  filesize: number;
  realtime: boolean;
  /** The create body's channel (null when none was sent) and offset, as sent. */
  channel: string | number | null;
  offset: number;
  /** Fake agent-time ms of the create. */
  createdAt: number;
  parts: Array<{ key: string; expectedBytes: number; receivedBytes?: number; sha256?: string }>;
  bytesReceived: number;
  complete: boolean;
}

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

export class Uploads {
  private readonly assets = new Map<string, Asset>();

  constructor(private readonly state: CloudState, private readonly clock: Clock, private readonly partBytes: number) {}

  view(id: string): AssetView | undefined {
    const a = this.assets.get(id);
    if (!a) return undefined;
    const parts = [...a.parts.values()].map((p) => ({
      key: p.key,
      expectedBytes: p.expectedBytes,
      ...(p.received ? { receivedBytes: p.received.bytes, sha256: p.received.sha256 } : {}),
    }));
    const bytesReceived = parts.reduce((n, p) => n + (p.receivedBytes ?? 0), 0);
    return {
      id: a.id, deviceId: a.deviceId, name: a.name, filetype: a.filetype, filesize: a.filesize, realtime: a.realtime,
      channel: (a.body.channel as string | number | undefined) ?? null, offset: a.offset, createdAt: a.createdAt,
      parts, bytesReceived,
      // A real-time asset is complete once its final part was asked for and every part holds the bytes its URL declared.
      complete: parts.length > 0 && (!a.realtime || a.finalPart !== undefined) && parts.every((p) => p.receivedBytes === p.expectedBytes) && bytesReceived === a.filesize,
    };
  }

  /** Every asset, in creation order (test-only introspection). */
  all(): AssetView[] {
    return [...this.assets.keys()].map((id) => this.view(id)!);
  }

  ownerOf(path: string): string | undefined {
    const assetId = path.slice(STORAGE_PREFIX.length).split('/')[0];
    return assetId ? this.assets.get(assetId)?.deviceId : undefined;
  }

  private url(req: IncomingMessage, a: Asset, p: Part): string {
    const base = baseUrlOf(req);
    return `${base}${STORAGE_PREFIX}${a.id}/${p.key}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=86400&X-Amz-Signature=${p.signature}`;
  }

  private part(key: string, expectedBytes: number): Part {
    return { key, expectedBytes, signature: randomBytes(16).toString('hex') };
  }

  routes(router: Router): void {
    router
      .add({ method: 'POST', pattern: '/v2/devices/assets', auth: 'bearer', handler: (ctx) => {
        const device = this.state.devices.get(ctx.deviceId!)!;
        if (device.paused) return legacyError(409, 'Channel Paused', 'The device is paused: assets are not accepted');
        if (!device.scopes.has('asset_create')) return legacyError(403);
        const b = parseJsonObject(ctx.body);
        if (!b) return legacyError(422, undefined, 'the body must be a JSON object');
        const realtime = b.is_realtime_upload === true;
        const problems: string[] = [];
        // A real-time asset may be created with only an extension and named by its final part's asset_name.
        const nameless = realtime && b.name === undefined && typeof b.extension === 'string' && b.extension !== '';
        if (!nameless && (typeof b.name !== 'string' || b.name === '')) problems.push('name');
        if (typeof b.filetype !== 'string' || !FILETYPE.test(b.filetype)) problems.push('filetype');
        if (!(isInt(b.filesize) || (realtime && b.filesize === undefined))) problems.push('filesize');
        if (typeof b.offset !== 'number' || !Number.isFinite(b.offset) || b.offset < 0) problems.push('offset');
        if (b.channel !== undefined && typeof b.channel !== 'string' && typeof b.channel !== 'number') problems.push('channel');
        if (b.extension !== undefined && typeof b.extension !== 'string') problems.push('extension');
        if (b.is_realtime_upload !== undefined && typeof b.is_realtime_upload !== 'boolean') problems.push('is_realtime_upload');
        if (problems.length > 0) return legacyError(422, undefined, `invalid: ${problems.join(', ')}`);
        const filesize = (b.filesize as number | undefined) ?? 0;
        const a: Asset = {
          id: randomUUID(), deviceId: device.id, name: nameless ? `untitled${b.extension as string}` : (b.name as string), filetype: b.filetype as string, filesize,
          offset: b.offset as number, realtime, createdAt: ctx.t, parts: new Map(), body: b,
        };
        if (!realtime) {
          // The agent splits evenly: chunk = ceil(size / n), the last chunk to EOF.
          const n = Math.max(1, Math.ceil(filesize / this.partBytes));
          const chunk = Math.ceil(filesize / n);
          for (let i = 1; i <= n; i++) {
            const p = this.part(String(i), Math.max(0, Math.min(chunk, filesize - (i - 1) * chunk)));
            a.parts.set(p.key, p);
          }
        }
        this.assets.set(a.id, a);
        return json(200, {
          _type: 'file', id: a.id, name: a.name, filetype: a.filetype, filesize, offset: a.offset,
          channel: b.channel ?? null, extension: b.extension ?? null, is_realtime_upload: realtime,
          project_id: device.projectId, project_device_id: device.id, inserted_at: this.clock.iso(ctx.t),
          upload_urls: [...a.parts.values()].map((p) => this.url(ctx.req, a, p)),
        });
      } })
      .add({ method: 'POST', pattern: '/v2/devices/assets/{id}/realtime_upload/parts', auth: 'bearer', handler: (ctx) => {
        // The service's rules (docs/service-api.md, "Real-time uploads"); its errors are 400, 401, 404 and 429.
        const a = this.assets.get(ctx.params[0]!);
        if (!a || a.deviceId !== ctx.deviceId) return legacyError(404);
        // An upload not finished within 24 h is gone.
        if (ctx.t - a.createdAt > UPLOAD_LIFETIME_MS) return legacyError(404, undefined, 'the upload expired (24 h)');
        if (!a.realtime) return legacyError(400, undefined, 'the asset was not created with is_realtime_upload');
        const b = parseJsonObject(ctx.body);
        const parts = b?.parts;
        if (!b || !Array.isArray(parts) || parts.length === 0 || parts.length > 10000) return legacyError(400, undefined, 'parts must be a non-empty list');
        let final: number | undefined;
        const asked = new Set<number>();
        for (const raw of parts as unknown[]) {
          const p = raw as Record<string, unknown> | null;
          if (!p || typeof p !== 'object' || !isInt(p.number) || p.number < 1 || p.number > 10000 || !isInt(p.size)) {
            return legacyError(400, undefined, 'each part needs number (1..10000) and size (bytes)');
          }
          if (asked.has(p.number)) return legacyError(400, undefined, `part ${p.number} is listed twice`);
          asked.add(p.number);
          if (p.is_final !== undefined && typeof p.is_final !== 'boolean') return legacyError(400, undefined, 'is_final must be a boolean');
          if (p.is_final === true) {
            if (final !== undefined) return legacyError(400, undefined, 'only one part can be final');
            final = p.number;
          } else if (p.size < MIN_REALTIME_PART) {
            return legacyError(400, undefined, 'every part but the final one must be at least 5 MiB');
          }
        }
        if (b.asset_name !== undefined && (typeof b.asset_name !== 'string' || b.asset_name === '')) return legacyError(400, undefined, 'asset_name must be a non-empty string');
        const known = [...a.parts.keys()].map((k) => Number(k.slice(3)));
        if (final !== undefined) {
          if (!isInt(b.asset_filesize) || b.asset_filesize < 1 || b.asset_filesize > MAX_REALTIME_FILESIZE) {
            return legacyError(400, undefined, 'asset_filesize (1 B to 5 TiB) is required with the final part');
          }
          if ([...asked, ...known].some((n) => n > final!)) return legacyError(400, undefined, 'the final part must have the highest number');
        } else if (a.finalPart !== undefined && [...asked].some((n) => n > a.finalPart!)) {
          return legacyError(400, undefined, `part ${a.finalPart} is final: no part can come after it`);
        }
        if (final !== undefined) {
          a.finalPart = final;
          a.filesize = b.asset_filesize as number;
        }
        if (typeof b.asset_name === 'string') a.name = b.asset_name;
        const urls = (parts as Array<{ number: number; size: number }>).map((p) => {
          const key = `rt-${p.number}`;
          // Asked again: the part's next PUT replaces what it holds (storage multipart behaviour).
          const part = a.parts.get(key) ?? this.part(key, p.size);
          if (part.expectedBytes !== p.size) delete part.received;
          part.expectedBytes = p.size;
          a.parts.set(key, part);
          return this.url(ctx.req, a, part);
        });
        return json(200, { upload_urls: urls });
      } });
  }

  /** PUT of one presigned part. Honours the faults reset, delay, status and rate-limit. */
  storage(req: IncomingMessage, res: ServerResponse, entry: JournalEntry, hits: Fault[], pipeline: Pipeline): void {
    const { path, query } = splitUrl(req.url);
    const [assetId, key] = path.slice(STORAGE_PREFIX.length).split('/');
    const a = assetId ? this.assets.get(assetId) : undefined;
    const part = a && key ? a.parts.get(key) : undefined;
    if (a) entry.deviceId = a.deviceId;
    const signature = new URLSearchParams(query).get('X-Amz-Signature');
    entry.authValid = part !== undefined && signature === part.signature;
    if (hits.length > 0) entry.faults = hits.map((f) => f.kind);
    if (hits.some((f) => f.kind === 'reset')) {
      req.socket.destroy();
      return;
    }
    const reply = (status: number, code: string, message: string) => {
      entry.status = status;
      if (res.destroyed) return;
      const body = status === 200 ? '' : `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
      const headers: Record<string, string | number> = { 'content-length': Buffer.byteLength(body) };
      if (body) headers['content-type'] = 'application/xml';
      if (status === 200 && part?.received) headers.etag = `"${part.received.sha256.slice(0, 32)}"`;
      res.writeHead(status, headers);
      res.end(body);
    };
    const delay = hits.find((f) => f.kind === 'delay');
    const later = (fn: () => void) => (delay ? pipeline.defer(fn, delay.delayMs ?? 0) : fn());
    const short = hits.find((f) => f.kind === 'status' || f.kind === 'rate-limit');
    if (short) {
      if (short.kind === 'rate-limit') return later(() => reply(503, 'SlowDown', 'Please reduce your request rate.'));
      return later(() => reply(short.status ?? 500, 'InternalError', 'Injected fault.'));
    }
    if (req.method !== 'PUT') return reply(405, 'MethodNotAllowed', 'Only PUT is allowed on upload URLs.');
    if (!a || !part || !entry.authValid) return reply(403, 'AccessDenied', 'The signature or the URL is not valid.');
    if (this.clock.now() - a.createdAt > UPLOAD_LIFETIME_MS) return reply(403, 'AccessDenied', 'Request has expired');
    if (header(req, 'x-amz-acl') !== 'private') return reply(403, 'SignatureDoesNotMatch', 'x-amz-acl: private is a signed header.');
    if (header(req, 'content-type') !== a.filetype) {
      return reply(403, 'SignatureDoesNotMatch', `Content-Type must be ${a.filetype}, the asset's filetype.`);
    }
    const declared = header(req, 'content-length');
    if (declared === undefined) return reply(411, 'MissingContentLength', 'You must provide the Content-Length HTTP header.');
    if (Number(declared) !== part.expectedBytes) {
      return reply(400, Number(declared) < part.expectedBytes ? 'IncompleteBody' : 'EntityTooLarge',
        `This part takes exactly ${part.expectedBytes} bytes; Content-Length was ${declared}.`);
    }
    const hash = createHash('sha256');
    let bytes = 0;
    entry.bodyBytes = 0;
    req.on('data', (c: Buffer) => {
      bytes += c.length;
      entry.bodyBytes = bytes;
      hash.update(c);
    });
    req.on('end', () => {
      if (bytes !== part.expectedBytes) return later(() => reply(400, 'IncompleteBody', 'The body did not match Content-Length.'));
      part.received = { bytes, sha256: hash.digest('hex'), t: this.clock.now() };
      later(() => reply(200, 'OK', ''));
    });
    req.on('error', () => undefined);
  }
}
