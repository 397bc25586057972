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

export interface AssetEndpoints {
  /** POST /v2/devices/assets. A paused device rejects with kind 'paused', a refused body with 'protocol'. */
  create(req: AssetRequest, signal?: AbortSignal): Promise<ApiResult<CreatedAsset>>;
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

function createdAssetOf(t: Transport, res: RawResponse): CreatedAsset {
  const body = t.readJson(res);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw bad(res, 'answer is not a JSON object');
  const rec = body as Rec;
  const urls = rec.upload_urls;
  if (Array.isArray(urls)) for (const u of urls) if (typeof u === 'string') registerSecret(u, { rotating: 'upload-urls' });
  if (typeof rec.id !== 'string' || rec.id === '') throw bad(res, "field 'id' is not a non-empty string");
  if (!Array.isArray(urls) || urls.length === 0) throw bad(res, "field 'upload_urls' is not a non-empty array");
  if (urls.length > MAX_UPLOAD_PARTS) throw bad(res, `field 'upload_urls' has ${urls.length} URLs, more than the ${MAX_UPLOAD_PARTS} parts an upload can have`);
  // Messages name the index, never the value: a URL shorter than the
  // scrubber's minimum would not be registered.
  urls.forEach((u, i) => {
    if (typeof u !== 'string' || !isHttpUrl(u)) throw bad(res, `field 'upload_urls[${i}]' is not an absolute http(s) URL`);
  });
  return { id: rec.id, uploadUrls: [...(urls as string[])] };
}

export function assetEndpoints(t: Transport): AssetEndpoints {
  return {
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
