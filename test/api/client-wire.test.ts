// What the client puts on the wire and how it reads odd answers, against a
// scripted server (the fake cloud answers correctly; these answers are the
// ones a proxy, a bad deploy or a skewed server clock produce).
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServiceApi, type ServiceApi } from '../../agent/api/service.js';
import { SystemClock } from '../../agent/lib/clock.js';
import { failure } from './failure.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;
let handler: Handler = (_req, res) => res.end();
const seen: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
let server: http.Server;
let api: ServiceApi;
const TOKEN = 'wire-secret-token-0123456789';

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  api = createServiceApi({ baseUrl: `http://127.0.0.1:${port}`, token: TOKEN, firmwareVersion: '1.4.2', agentVersion: '0.1.0', clock: new SystemClock() });
});
afterAll(async () => {
  api.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function json(res: http.ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(typeof value === 'string' ? value : JSON.stringify(value));
}


describe('request headers', () => {
  test('device calls carry bearer, x-client-version and the User-Agent; nothing asks for compression', async () => {
    handler = (_req, res) => json(res, 200, { id: 'd' });
    await api.getDevice();
    const h = seen.at(-1)!.headers;
    expect(h.authorization).toBe(`Bearer ${TOKEN}`);
    expect(h['x-client-version']).toBe('1.4.2');
    expect(h['user-agent']).toBe(`c2c-agent/0.1.0 firmware/1.4.2 node/${process.versions.node}`);
    expect(h['accept-encoding']).toBeUndefined();
  });

  test('an API URL with a path prefix puts the prefix before every path', async () => {
    handler = (_req, res) => json(res, 200, { id: 'd' });
    const { port } = server.address() as AddressInfo;
    const prefixed = createServiceApi({ baseUrl: `http://127.0.0.1:${port}/api`, token: TOKEN, firmwareVersion: '1.4.2', agentVersion: '0.1.0', clock: new SystemClock() });
    try {
      await prefixed.getDevice();
      expect(seen.at(-1)!.url).toBe('/api/v2/devices/me');
    } finally {
      prefixed.close();
    }
  });

  test('health and form posts go without the bearer but with the version', async () => {
    handler = (_req, res) => json(res, 200, { status: 'ok' });
    await api.health();
    expect(seen.at(-1)!.headers.authorization).toBeUndefined();
    const res = await api.transport.postForm('/v2/auth/device/code', { client_id: 'c', scope: 'asset_create offline' });
    const last = seen.at(-1)!;
    expect(last).toMatchObject({ method: 'POST', url: '/v2/auth/device/code', body: 'client_id=c&scope=asset_create+offline' });
    expect(last.headers.authorization).toBeUndefined();
    expect(last.headers['x-client-version']).toBe('1.4.2');
    expect(last.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(api.transport.readJson(res)).toEqual({ status: 'ok' });
  });
});

describe('reading answers', () => {
  test('clock offset from a server whose clock is two minutes ahead', async () => {
    handler = (_req, res) => json(res, 200, { id: 'd' }, { date: new Date(Date.now() + 120_000).toUTCString() });
    const { meta } = await api.getDevice();
    expect(meta.clockOffsetMs).toBeGreaterThan(119_000);
    expect(meta.clockOffsetMs).toBeLessThan(121_000);
  });

  test('the offset also rides on errors', async () => {
    handler = (_req, res) => json(res, 500, {}, { date: new Date(Date.now() - 300_000).toUTCString() });
    const err = await failure(api.getDevice());
    expect(err.details.clockOffsetMs).toBeLessThan(-299_000);
  });

  test.each([
    ['an HTML page', '<html><h1>502 Bad Gateway</h1></html>'],
    ['an empty body', ''],
    ['a JSON array', '[1,2,3]'],
    ['wrong-typed fields', '{"code":"x","errors":{"title":5},"message":["a"]}'],
    ['errors of nulls and numbers', '{"errors":[null,7,{"title":null,"detail":{"x":1}}]}'],
    ['control characters', '{"message":"line one\\nline two\\u0007\\r\\nthree"}'],
  ])('a 401 with %s is still unauthorized, in one line', async (_label, body) => {
    handler = (_req, res) => json(res, 401, body);
    const err = await failure(api.getDevice());
    expect(err.kind).toBe('unauthorized');
    expect(err.message).toMatch(/^GET \/v2\/devices\/me: HTTP 401/);
    expect(err.message).not.toMatch(/[\n\r\u0007]/);
  });

  test('a 409 "Channel Paused" legacy body is the paused kind', async () => {
    handler = (_req, res) => json(res, 409, { code: 409, errors: [{ code: 409, detail: 'The channel is paused', status: 409, title: 'Channel Paused' }], message: 'Channel Paused' });
    const err = await failure(api.heartbeat());
    expect(err).toMatchObject({ kind: 'paused', details: { status: 409 } });
    expect(err.message).toContain('Channel Paused');
  });

  test('a Content-Length over 1 MiB is refused before the body is read', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(2 * 1024 * 1024) });
      res.write('{"id":"'); // and never the rest
    };
    const err = await failure(api.getDevice());
    expect(err.message).toContain('larger than 1048576 bytes');
  });

  test('an endless chunked body is cut at 1 MiB', async () => {
    let written = 0;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = (): void => {
        while (!res.destroyed && written < 16 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    };
    const err = await failure(api.getDevice());
    expect(err.kind).toBe('protocol');
    expect(written).toBeLessThan(16 * 1024 * 1024);
  });

  test('a redirect is not followed: the device API never redirects', async () => {
    handler = (_req, res) => {
      res.writeHead(302, { location: 'http://127.0.0.1:9/elsewhere' });
      res.end();
    };
    const err = await failure(api.getDevice());
    expect(err).toMatchObject({ kind: 'protocol', details: { status: 302 } });
  });

  test('a 200 without a JSON content type is a protocol error', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('{"id":"d"}');
    };
    expect((await failure(api.getDevice())).message).toContain("content-type 'text/plain'");
  });

  test('a 2xx body that fails validation or is not JSON is a protocol error carrying the 2xx status (the token was accepted)', async () => {
    handler = (_req, res) => json(res, 200, { id: 5 });
    expect(await failure(api.getDevice())).toMatchObject({ kind: 'protocol', status: 200, details: { status: 200 } });
    handler = (_req, res) => json(res, 203, '{"id": "d"');
    expect(await failure(api.getDevice())).toMatchObject({ kind: 'protocol', status: 203 });
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>portal</html>');
    };
    expect(await failure(api.getDevice())).toMatchObject({ kind: 'protocol', status: 200 });
    handler = (_req, res) => json(res, 200, { status: 3 });
    expect(await failure(api.health())).toMatchObject({ kind: 'protocol', status: 200 });
  });

  test('a Device with null optional fields, as the real service sends, is accepted', async () => {
    handler = (_req, res) => json(res, 200, { id: 'd', name: null, last_seen_at: null, last_known_firmware_version: null, project_id: null });
    const { value } = await api.getDevice();
    expect(value).toEqual({ id: 'd' });
  });

  test.each([12, -12])('a 429 Retry-After date is measured in server time with the local wall clock %d h off', async (hours) => {
    const skewed = new (class extends SystemClock {
      override wallNow(): number {
        return super.wallNow() + hours * 3600_000;
      }
    })();
    const { port } = server.address() as AddressInfo;
    const skewedApi = createServiceApi({ baseUrl: `http://127.0.0.1:${port}`, token: TOKEN, firmwareVersion: '1.4.2', agentVersion: '0.1.0', clock: skewed });
    // 60 s after the server's own Date (set here, from the same instant), which is what the server meant.
    const second = (): number => Math.floor(Date.now() / 1000) * 1000;
    const retryAt = (now: number): string => new Date(now + 60_000).toUTCString();
    try {
      handler = (_req, res) => {
        const now = second();
        json(res, 429, {}, { date: new Date(now).toUTCString(), 'retry-after': retryAt(now) });
      };
      const withDate = await failure(skewedApi.heartbeat());
      expect(withDate.kind).toBe('rate-limited');
      expect(withDate.details.retryAfterMs).toBe(60_000);

      // A proxy's 429 without Date: the offset from the answer before still anchors it.
      handler = (_req, res) => {
        res.sendDate = false;
        json(res, 429, {}, { 'retry-after': retryAt(second()) });
      };
      const noDate = await failure(skewedApi.heartbeat());
      expect(noDate.details.retryAfterMs).toBeGreaterThanOrEqual(58_000);
      expect(noDate.details.retryAfterMs).toBeLessThanOrEqual(61_000);
    } finally {
      skewedApi.close();
    }
  });

  test('heartbeat accepts 204 and rejects a captive portal redirect', async () => {
    handler = (_req, res) => {
      res.writeHead(204);
      res.end();
    };
    await expect(api.heartbeat()).resolves.toMatchObject({ meta: { status: 204 } });
    handler = (_req, res) => {
      res.writeHead(302, { location: 'http://portal/' });
      res.end();
    };
    expect((await failure(api.heartbeat())).kind).toBe('protocol');
  });
});
