// Answers a proxy, a load balancer or a captive portal gives, against scripted
// loopback servers (issue 18, causes 2 and 4):
// - an error page larger than the size cap: the status decides the kind (a
//   503 stays temporary, a 404 stays not-found); only a 2xx that is too
//   large is a protocol error;
// - 101 Switching Protocols: a protocol error at once, whether the
//   connection stays open or closes, and no socket outlives the request;
// - any other 1xx (100, 102, 103, unknown ones) read past to the final
//   answer (RFC 9110, 15.2; issue 27);
// - a 2xx without the body the caller needs: a protocol error.
// Over got (the service transport), over a wire (the fleet simulator) and for
// presigned storage PUTs.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createServiceApi, type ServiceApi } from '../../agent/api/service.js';
import { createStorageClient } from '../../agent/api/storage.js';
import { createTransport, MAX_RESPONSE_BYTES, type WireResponse } from '../../agent/api/transport.js';
import { SystemClock } from '../../agent/lib/clock.js';
import { classify } from '../../agent/outbox/outcome.js';
import { AgentError } from '../../agent/lib/errors.js';
import { FakeClock } from '../support/fake-clock.js';
import { failure } from './failure.js';
import { until } from '../support/until.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
let handler: Handler = (_req, res) => res.end();
let server: http.Server;
let baseUrl: string;
/** Server-side sockets not yet closed. */
const open = new Set<Socket>();
const apis: ServiceApi[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => handler(req, res));
  });
  server.on('connection', (s: Socket) => {
    open.add(s);
    s.once('close', () => open.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const a of apis) a.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function api(): ServiceApi {
  const a = createServiceApi({ baseUrl, token: 'hostile-token-0123456789', firmwareVersion: '1.0.0', agentVersion: '0.0.0', clock: new SystemClock() });
  apis.push(a);
  return a;
}

const BIG = Math.floor(MAX_RESPONSE_BYTES * 1.5);
const page = (bytes: number): Buffer => {
  const head = Buffer.from('<!DOCTYPE html><html><body><h1>503 Service Temporarily Unavailable</h1><pre>');
  return Buffer.concat([head, Buffer.alloc(bytes - head.length, 'x')]);
};

/** Sends `status` with a big HTML page, with Content-Length or chunked (in 64 KiB writes). */
function bigPage(status: number, opts: { chunked: boolean; headers?: Record<string, string> }): Handler {
  return (_req, res) => {
    const body = page(BIG);
    const headers: Record<string, string> = { 'content-type': 'text/html', ...opts.headers };
    if (!opts.chunked) headers['content-length'] = String(body.length);
    res.writeHead(status, headers);
    if (!opts.chunked) {
      res.end(body);
      return;
    }
    let at = 0;
    const pump = (): void => {
      while (at < body.length) {
        const piece = body.subarray(at, at + 64 * 1024);
        at += piece.length;
        if (!res.write(piece)) return void res.once('drain', pump);
      }
      res.end();
    };
    res.on('error', () => undefined);
    pump();
  };
}

const RAW_101 = 'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n';

/** Answers 101 on the raw socket, then keeps the connection open or closes it. */
const upgrade =
  (keepOpen: boolean): Handler =>
  (req) => {
    req.socket.write(RAW_101);
    if (!keepOpen) req.socket.end();
  };

describe('cause 2: an error page larger than the size cap keeps its status kind', () => {
  for (const chunked of [false, true]) {
    const how = chunked ? 'chunked' : 'with Content-Length';
    for (const status of [500, 503, 504]) {
      test(`a ${status} with a 1.5 MB HTML page (${how}) is a temporary server error (75)`, async () => {
        handler = bigPage(status, { chunked });
        const err = await failure(api().heartbeat());
        expect(err).toMatchObject({ kind: 'server', exitCode: 75, details: { status } });
        expect(err.message).not.toContain('larger than');
      });
    }

    test(`a 503 with Retry-After and a big page (${how}) keeps its retry delay`, async () => {
      handler = bigPage(503, { chunked, headers: { 'retry-after': '42' } });
      const err = await failure(api().getDevice());
      expect(err).toMatchObject({ kind: 'server', exitCode: 75, details: { status: 503, retryAfterMs: 42_000 } });
    });

    test(`a 429 with a big page (${how}) is rate-limited with a retry delay`, async () => {
      handler = bigPage(429, { chunked, headers: { 'retry-after': '7' } });
      const err = await failure(api().heartbeat());
      expect(err).toMatchObject({ kind: 'rate-limited', exitCode: 75, details: { status: 429, retryAfterMs: 7_000 } });
    });

    test(`401, 403, 404 and 409 with a big page (${how}) keep their kinds`, async () => {
      const a = api();
      for (const [status, kind] of [[401, 'unauthorized'], [403, 'forbidden'], [404, 'not-found'], [409, 'conflict']] as const) {
        handler = bigPage(status, { chunked });
        expect(await failure(a.heartbeat())).toMatchObject({ kind, details: { status } });
      }
    });

    test(`a 200 larger than the cap (${how}) is still a protocol error (76)`, async () => {
      handler = bigPage(200, { chunked, headers: { 'content-type': 'application/json' } });
      const err = await failure(api().getDevice());
      expect(err).toMatchObject({ kind: 'protocol', exitCode: 76 });
      expect(err.message).toContain(`larger than ${MAX_RESPONSE_BYTES} bytes`);
    });
  }

  test('the token endpoint answering a big 502 page while pairing polls is temporary', async () => {
    handler = bigPage(502, { chunked: true });
    const err = await failure(api().oauth.pollDeviceCode({ clientId: 'c', clientSecret: 's' }, 'dc'));
    expect(err).toMatchObject({ kind: 'server', exitCode: 75 });
  });

  test('a connection whose big error page was dropped is not reused: the next call works', async () => {
    const a = api();
    handler = bigPage(503, { chunked: true });
    await failure(a.heartbeat());
    handler = (_req, res) => res.writeHead(204).end();
    await expect(a.heartbeat()).resolves.toMatchObject({ meta: { status: 204 } });
  });
});

describe('cause 4: an answer the contract does not expect is a protocol error', () => {
  for (const keepOpen of [true, false]) {
    const how = keepOpen ? 'the connection kept open' : 'the connection closed';
    test(`101 Switching Protocols with ${how}: protocol (76) for GET, POST and form posts`, async () => {
      handler = upgrade(keepOpen);
      const a = api();
      for (const call of [() => a.getDevice(), () => a.heartbeat(), () => a.health(), () => a.oauth.pollDeviceCode({ clientId: 'c', clientSecret: 's' }, 'dc'), () => a.oauth.revoke({ clientId: 'c', clientSecret: 's' }, 't')]) {
        const err = await failure(call());
        expect(err).toMatchObject({ kind: 'protocol', exitCode: 76, details: { status: 101 } });
        expect(err.message).toMatch(/HTTP 101/);
      }
    });
  }

  test('a 101 with a shorter limit than the default still fails at once, as protocol', async () => {
    handler = upgrade(true);
    const err = await failure(api().health(undefined, 1_000));
    expect(err).toMatchObject({ kind: 'protocol' });
  });

  // RFC 9110, 15.2: a client reads past any 1xx before the final answer, asked for or not (issue 27).
  describe('interim answers (102 Processing, 103 Early Hints, any other 1xx) are read past to the final answer', () => {
    /** Writes raw 1xx heads on the socket, then the final answer through `res`. */
    const interimThen =
      (heads: string[], final: (res: http.ServerResponse) => void): Handler =>
      (req, res) => {
        for (const h of heads) req.socket.write(h);
        final(res);
      };
    const device = (res: http.ServerResponse): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'dev-1', name: 'Unit 1' }));
    const PROCESSING = 'HTTP/1.1 102 Processing\r\n\r\n';
    const HINTS = 'HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\nLink: </app.js>; rel=preload; as=script\r\n\r\n';

    test('102 then a device record: GET /v2/devices/me succeeds', async () => {
      handler = interimThen([PROCESSING], device);
      await expect(api().getDevice()).resolves.toMatchObject({ value: { id: 'dev-1' }, meta: { status: 200 } });
    });

    test('103 with Link headers (node\'s writeEarlyHints and raw) then the answer: GET, POST and form posts succeed', async () => {
      const a = api();
      handler = (_req, res) => {
        res.writeEarlyHints({ link: ['</x.css>; rel=preload; as=style', '</y.js>; rel=preload; as=script'] });
        device(res);
      };
      await expect(a.getDevice()).resolves.toMatchObject({ value: { id: 'dev-1' } });
      handler = interimThen([HINTS], (res) => void res.writeHead(204).end());
      await expect(a.heartbeat()).resolves.toMatchObject({ meta: { status: 204 } });
      handler = interimThen([HINTS], (res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}'));
      await expect(a.health()).resolves.toBeDefined();
      handler = interimThen([PROCESSING, HINTS], (res) => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: 'at-123456', refresh_token: 'rt-123456', token_type: 'bearer', expires_in: 3600 })));
      await expect(a.oauth.refresh({ clientId: 'c', clientSecret: 's' }, 'rt')).resolves.toMatchObject({ accessToken: 'at-123456' });
    });

    test('several 1xx of every kind (100, 102, 103, an unknown 150, 199), then the answer, on one kept-alive connection twice', async () => {
      const a = api();
      handler = interimThen(['HTTP/1.1 100 Continue\r\n\r\n', PROCESSING, PROCESSING, HINTS, 'HTTP/1.1 150 Whatever\r\nX-Odd: 1\r\n\r\n', 'HTTP/1.1 199 Misc\r\n\r\n', PROCESSING], device);
      for (let i = 0; i < 2; i++) await expect(a.getDevice()).resolves.toMatchObject({ value: { id: 'dev-1' } });
    });

    test('a 1xx before an error answer keeps that answer\'s kind: a 503 stays temporary', async () => {
      handler = interimThen([PROCESSING], (res) => void res.writeHead(503, { 'content-type': 'text/html', 'retry-after': '9' }).end('<html>down</html>'));
      expect(await failure(api().heartbeat())).toMatchObject({ kind: 'server', exitCode: 75, details: { status: 503, retryAfterMs: 9_000 } });
    });

    test('a 102 and then nothing is a request still waiting: it ends at its time limit as a network failure, not as a protocol error', async () => {
      handler = (req) => void req.socket.write(PROCESSING);
      const err = await failure(api().health(undefined, 300));
      expect(err).toMatchObject({ kind: 'network', exitCode: 69 });
    });

    test('a 101 after a 102 is still refused at once', async () => {
      handler = interimThen([PROCESSING], (res) => void res.socket?.write(RAW_101));
      expect(await failure(api().health(undefined, 30_000))).toMatchObject({ kind: 'protocol', exitCode: 76, details: { status: 101 } });
    });
  });

  test('100 Continue is read past as HTTP intends', async () => {
    handler = (_req, res) => {
      res.writeContinue();
      res.writeHead(204).end();
    };
    await expect(api().heartbeat()).resolves.toMatchObject({ meta: { status: 204 } });
  });

  test('repeated 101s on kept-open connections leave no socket behind', async () => {
    handler = upgrade(true);
    const a = api();
    const sockets = (): number => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
    await until('every server socket closed', () => open.size === 0);
    const before = sockets();
    for (let i = 0; i < 25; i++) expect(await failure(a.heartbeat())).toMatchObject({ kind: 'protocol' });
    // Every server-side socket closes only when the agent destroyed its end.
    await until('every server socket closed', () => open.size === 0);
    await until('the pooled sockets closed', () => sockets() <= before);
    expect(open.size).toBe(0);
  });

  test('GET /v2/devices/me answering 204 (no body) is a protocol error', async () => {
    handler = (_req, res) => res.writeHead(204).end();
    expect(await failure(api().getDevice())).toMatchObject({ kind: 'protocol', exitCode: 76 });
    handler = (_req, res) => res.writeHead(204, { 'content-type': 'application/json' }).end();
    expect(await failure(api().getDevice())).toMatchObject({ kind: 'protocol', exitCode: 76 });
  });

  test('the token endpoint answering 200 with an empty or an HTML body is a protocol error, never a grant', async () => {
    const a = api();
    const client = { clientId: 'c', clientSecret: 's' };
    for (const [type, body] of [['application/json', ''], ['text/html', '<html><body>Welcome to the hotel Wi-Fi</body></html>'], [undefined, '']] as const) {
      handler = (_req, res) => res.writeHead(200, type ? { 'content-type': type } : {}).end(body);
      expect(await failure(a.oauth.pollDeviceCode(client, 'dc'))).toMatchObject({ kind: 'protocol', exitCode: 76 });
      expect(await failure(a.oauth.refresh(client, 'rt'))).toMatchObject({ kind: 'protocol', exitCode: 76 });
    }
  });

  test('a grant or a device code with a lifetime no service gives (1e308 s, ten years and more) is a protocol error, not a crash on its date', async () => {
    const a = api();
    const client = { clientId: 'c', clientSecret: 's' };
    for (const expires of [1e308, 400_000_000, 0, -5]) {
      handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: 'at-123456', refresh_token: 'rt-123456', token_type: 'bearer', expires_in: expires }));
      expect(await failure(a.oauth.refresh(client, 'rt'))).toMatchObject({ kind: 'protocol', exitCode: 76 });
    }
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ device_code: 'dc', user_code: '123456', verification_uri: 'https://x/pair', expires_in: 120, interval: 1e300 }));
    expect(await failure(a.oauth.requestDeviceCode(client))).toMatchObject({ kind: 'protocol', exitCode: 76 });
  });
});

describe('what the outbox makes of them: never a dead clip', () => {
  test('a big 503, a big 200 and a 101 are each retried, not dead-lettered', async () => {
    const a = api();
    handler = bigPage(503, { chunked: true });
    expect(classify(await failure(a.heartbeat()))).toMatchObject({ result: 'retry', error: { kind: 'server' } });
    handler = bigPage(200, { chunked: true, headers: { 'content-type': 'application/json' } });
    expect(classify(await failure(a.getDevice()))).toMatchObject({ result: 'retry', error: { kind: 'protocol', details: { status: 200 } } });
    handler = upgrade(true);
    expect(classify(await failure(a.heartbeat()))).toMatchObject({ result: 'retry', error: { kind: 'protocol', details: { status: 101 } } });
  });
});

describe('over a wire (the fleet simulator): the same rules', () => {
  const rig = (answer: WireResponse) =>
    createTransport({ baseUrl: 'http://service.invalid', token: 'tok-1234567890', firmwareVersion: '2.0.0', agentVersion: '0.1.0', clock: new FakeClock(0, Date.UTC(2026, 0, 1)), wire: () => Promise.resolve(answer) });

  test('a 503 or 504 whose body is over the cap is a server error; its body is not parsed', async () => {
    for (const status of [503, 504]) {
      const t = rig({ status, headers: { 'content-type': 'text/html' }, body: page(BIG) });
      const res = await t.request({ method: 'POST', path: '/v2/devices/heartbeat' });
      expect(res.status).toBe(status);
      expect(res.body.length).toBeLessThanOrEqual(MAX_RESPONSE_BYTES);
      expect(t.errorFor(res)).toMatchObject({ kind: 'server', exitCode: 75 });
    }
  });

  test('a 429 over the cap is rate-limited; a 200 over the cap is a protocol error', async () => {
    const limited = rig({ status: 429, headers: { 'retry-after': '3' }, body: page(BIG) });
    expect(limited.errorFor(await limited.request({ method: 'GET', path: '/x' }))).toMatchObject({ kind: 'rate-limited', details: { retryAfterMs: 3_000 } });
    const big = rig({ status: 200, headers: { 'content-type': 'application/json' }, body: page(BIG) });
    await expect(big.getJson('/v2/devices/me')).rejects.toMatchObject({ kind: 'protocol' });
  });

  test('a 101 from the wire is a protocol error', async () => {
    const t = rig({ status: 101, headers: { upgrade: 'websocket' }, body: Buffer.alloc(0) });
    const err = await t.request({ method: 'POST', path: '/v2/devices/heartbeat' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentError);
    expect(err).toMatchObject({ kind: 'protocol', details: { status: 101 } });
  });
});

describe('presigned storage PUTs', () => {
  const storage = createStorageClient({ clock: new SystemClock() });
  afterAll(() => storage.close());
  const put = () => storage.put({ url: `${baseUrl}/bucket/clip.mp4?X-Amz-Signature=0123456789abcdef`, body: Buffer.alloc(1000, 1), length: 1000, contentType: 'video/mp4' });

  test('a 503 or 500 with a big page (chunked or not) is temporary', async () => {
    for (const chunked of [false, true]) {
      handler = bigPage(500, { chunked });
      expect(await failure(put())).toMatchObject({ kind: 'server', exitCode: 75 });
      handler = bigPage(503, { chunked, headers: { 'retry-after': '5' } });
      expect(await failure(put())).toMatchObject({ kind: 'rate-limited', exitCode: 75 });
    }
  });

  test('102, 103 and other 1xx before the answer are read past: the PUT succeeds with its ETag, and a 503 after them stays temporary', async () => {
    const heads = ['HTTP/1.1 102 Processing\r\n\r\n', 'HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\n', 'HTTP/1.1 150 Whatever\r\n\r\n'];
    for (const first of [[heads[0]], [heads[1]], heads] as string[][]) {
      handler = (req, res) => {
        for (const h of first) req.socket.write(h as string);
        res.writeHead(200, { etag: '"abc123"' }).end();
      };
      await expect(put()).resolves.toMatchObject({ status: 200, etag: '"abc123"' });
    }
    handler = (req, res) => {
      req.socket.write(heads[0] as string);
      res.writeHead(503, { 'retry-after': '5' }).end();
    };
    expect(await failure(put())).toMatchObject({ kind: 'rate-limited', exitCode: 75 });
  });

  for (const keepOpen of [true, false]) {
    test(`a 101 with the connection ${keepOpen ? 'kept open' : 'closed'} is a protocol error and leaves no socket`, async () => {
      handler = upgrade(keepOpen);
      await until('every server socket closed', () => open.size === 0);
      for (let i = 0; i < 5; i++) expect(await failure(put())).toMatchObject({ kind: 'protocol', exitCode: 76, details: { status: 101 } });
      await until('every server socket closed', () => open.size === 0);
    });
  }
});
