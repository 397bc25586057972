// Asset creation: the service records the file and answers with one
// presigned storage URL per part. Those URLs carry their signature in the
// query string, so each is registered for scrubbing the moment it is parsed,
// before validation can fail and an error or log line can echo it. The
// bytes themselves never go through here (storage.ts).
import { AgentError } from '../lib/errors.js';
import { registerSecret } from '../lib/secrets.js';
import type { RawResponse, Transport } from './transport.js';
import type { ApiResult } from './types.js';

export interface AssetRequest {
  /** The name shown at the service; need not match the file on disk. */
  name: string;
  /** MIME type; storage refuses a part whose Content-Type differs from it. */
  filetype: string;
  filesize: number;
  /** How many seconds ago the media was made: the service uses it to refuse media made while the device was paused. */
  offset: number;
  channel?: string;
  /** '.ext'; the service reads it only for real-time uploads. */
  extension?: string;
}

export interface CreatedAsset {
  id: string;
  /** Secret (signed); in part order, parts split evenly with the last one to EOF. */
  uploadUrls: string[];
}

/** A real-time asset: no size yet (docs/service-api.md, "Real-time uploads"). */
export type RealtimeAssetRequest = Omit<AssetRequest, 'filesize'>;

/** One part of a real-time upload: its number (1..10,000), its exact size, and whether it ends the file. */
export interface RealtimePart {
  number: number;
  size: number;
  final?: boolean;
}

/** The service's floor for every real-time part but the final one: 5 MiB. */
export const MIN_REALTIME_PART_BYTES = 5 * 1024 * 1024;

export interface AssetEndpoints {
  /** POST /v2/devices/assets. A paused device rejects with kind 'paused', a refused body with 'protocol'. */
  create(req: AssetRequest, signal?: AbortSignal): Promise<ApiResult<CreatedAsset>>;
  /** POST /v2/devices/assets with `is_realtime_upload: true` and no `filesize`; the answer's URLs (none expected) are ignored. */
  createRealtime(req: RealtimeAssetRequest, signal?: AbortSignal): Promise<ApiResult<{ id: string }>>;
  /**
   * POST /v2/devices/assets/{id}/realtime_upload/parts: one presigned URL per
   * part, in the order asked. `assetFilesize` goes with a final part.
   */
  realtimeParts(assetId: string, parts: RealtimePart[], assetFilesize?: number, signal?: AbortSignal): Promise<ApiResult<string[]>>;
}

type Rec = Record<string, unknown>;

function bad(res: RawResponse, text: string): AgentError {
  return new AgentError('protocol', `${res.what}: ${text}`, { status: res.status, source: res.what });
}

/** An absolute http(s) URL; anything else cannot be a place to PUT a part. */
function isHttpUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === 'https:' || u.protocol === 'http:') && u.host !== '';
  } catch {
    return false;
  }
}

/** The service numbers the parts of an upload 1 to 10,000: no asset has more URLs than this. */
export const MAX_UPLOAD_PARTS = 10_000;

/** `upload_urls` of an answer: every entry registered as a secret first, then checked to be `want` absolute URLs (any count when undefined). */
function urlsOf(res: RawResponse, urls: unknown, want?: number): string[] {
  if (Array.isArray(urls)) for (const u of urls) if (typeof u === 'string') registerSecret(u, { rotating: 'upload-urls' });
  if (!Array.isArray(urls) || urls.length === 0) throw bad(res, "field 'upload_urls' is not a non-empty array");
  if (want !== undefined && urls.length !== want) throw bad(res, `field 'upload_urls' has ${urls.length} URLs for the ${want} parts asked`);
  if (urls.length > MAX_UPLOAD_PARTS) throw bad(res, `field 'upload_urls' has ${urls.length} URLs, more than the ${MAX_UPLOAD_PARTS} parts an upload can have`);
  // Messages name the index, never the value: a URL shorter than the
  // scrubber's minimum would not be registered.
  urls.forEach((u, i) => {
    if (typeof u !== 'string' || !isHttpUrl(u)) throw bad(res, `field 'upload_urls[${i}]' is not an absolute http(s) URL`);
  });
  return [...(urls as string[])];
}

function objectOf(t: Transport, res: RawResponse): Rec {
  const body = t.readJson(res);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw bad(res, 'answer is not a JSON object');
  return body as Rec;
}

function createdAssetOf(t: Transport, res: RawResponse): CreatedAsset {
  const rec = objectOf(t, res);
  const urls = rec.upload_urls;
  // Registered before anything else can fail and echo one.
  if (Array.isArray(urls)) for (const u of urls) if (typeof u === 'string') registerSecret(u, { rotating: 'upload-urls' });
  if (typeof rec.id !== 'string' || rec.id === '') throw bad(res, "field 'id' is not a non-empty string");
  return { id: rec.id, uploadUrls: urlsOf(res, urls) };
}

export function assetEndpoints(t: Transport): AssetEndpoints {
  return {
    async createRealtime(req, signal) {
      const json: Rec = { name: req.name, filetype: req.filetype, offset: req.offset, is_realtime_upload: true };
      if (req.channel !== undefined) json.channel = req.channel;
      if (req.extension !== undefined) json.extension = req.extension;
      const res = await t.request({ method: 'POST', path: '/v2/devices/assets', json, ...(signal ? { signal } : {}) });
      if (res.status < 200 || res.status > 299) throw t.errorFor(res);
      return {
        value: t.validated(res, () => {
          const rec = objectOf(t, res);
          if (Array.isArray(rec.upload_urls)) for (const u of rec.upload_urls) if (typeof u === 'string') registerSecret(u, { rotating: 'upload-urls' });
          if (typeof rec.id !== 'string' || rec.id === '') throw bad(res, "field 'id' is not a non-empty string");
          return { id: rec.id };
        }),
        meta: res.meta,
      };
    },
    async realtimeParts(assetId, parts, assetFilesize, signal) {
      const json: Rec = { parts: parts.map((p) => ({ number: p.number, size: p.size, is_final: p.final === true })) };
      if (assetFilesize !== undefined) json.asset_filesize = assetFilesize;
      const res = await t.request({ method: 'POST', path: `/v2/devices/assets/${encodeURIComponent(assetId)}/realtime_upload/parts`, json, ...(signal ? { signal } : {}) });
      if (res.status < 200 || res.status > 299) throw t.errorFor(res);
      return { value: t.validated(res, () => urlsOf(res, objectOf(t, res).upload_urls, parts.length)), meta: res.meta };
    },
    async create(req, signal) {
      const json: Rec = { name: req.name, filetype: req.filetype, filesize: req.filesize, offset: req.offset };
      if (req.channel !== undefined) json.channel = req.channel;
      if (req.extension !== undefined) json.extension = req.extension;
      const res = await t.request({ method: 'POST', path: '/v2/devices/assets', json, ...(signal ? { signal } : {}) });
      if (res.status < 200 || res.status > 299) throw t.errorFor(res);
      return { value: t.validated(res, () => createdAssetOf(t, res)), meta: res.meta };
    },
  };
}
