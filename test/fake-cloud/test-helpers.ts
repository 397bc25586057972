// Shared by the fake cloud's own tests: small HTTP helpers. (Their clock is
// the one virtual clock, test/support/virtual-clock.ts.)
import { request } from 'node:http';
import type { FakeCloud } from './index.js';

export const LEGACY_401 = {
  code: 401,
  errors: [{ code: 401, detail: 'You are not allowed to access that resource', status: 401, title: 'Not Authorized' }],
  message: 'Not Authorized',
};

export interface CallOptions {
  method?: string;
  token?: string;
  version?: string | null;
  headers?: Record<string, string>;
  body?: string | URLSearchParams | FormData | Uint8Array;
}

export async function call(base: string, path: string, o: CallOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  if (o.token !== undefined) headers.authorization = `Bearer ${o.token}`;
  if (o.version !== null) headers['x-client-version'] = o.version ?? '1.0.0';
  return fetch(base + path, { method: o.method ?? 'GET', headers, ...(o.body !== undefined ? { body: o.body } : {}) });
}

export async function heartbeat(cloud: FakeCloud, i = 0, version: string | null = '1.0.0'): Promise<number> {
  const r = await call(cloud.url, '/v2/devices/heartbeat', { method: 'POST', token: cloud.devices[i]!.accessToken, version });
  await r.arrayBuffer();
  return r.status;
}

export interface RawResult {
  status?: number;
  headers?: Record<string, string | string[] | undefined>;
  body: Buffer;
  error?: string;
}

/** node:http without retries or body checks, to observe resets and truncation as they are. */
export function raw(url: string, o: { method?: string; headers?: Record<string, string>; body?: Buffer } = {}): Promise<RawResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const req = request(url, { method: o.method ?? 'GET', headers: o.headers ?? {}, agent: false }, (res) => {
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', (e) => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks), error: e.message }));
      res.on('aborted', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks), error: 'aborted' }));
    });
    req.on('error', (e) => resolve({ body: Buffer.concat(chunks), error: (e as NodeJS.ErrnoException).code ?? e.message }));
    req.end(o.body);
  });
}
