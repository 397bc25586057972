// Pooled connections: calls made back to back share one, a call made after
// the socket sat idle opens a fresh one (a load balancer may have closed the
// old one meanwhile, which would fail the call with ECONNRESET).
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createServiceApi, type ServiceApi } from '../../agent/api/service.js';
import { IDLE_SOCKET_MS } from '../../agent/api/transport.js';
import { SystemClock } from '../../agent/lib/clock.js';
import { until } from '../support/until.js';

let server: http.Server;
let baseUrl: string;
let delayMs = 0;
const connections: Socket[] = [];
const clients: ServiceApi[] = [];

beforeAll(async () => {
  server = http.createServer((_req, res) => {
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":"ok"}');
    }, delayMs);
  });
  // Like the fake cloud and most servers: far longer than the agent's idle limit.
  server.keepAliveTimeout = 600_000;
  server.on('connection', (s: Socket) => connections.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const c of clients) c.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function client(idleSocketMs?: number): ServiceApi {
  const api = createServiceApi({
    baseUrl,
    token: 't',
    firmwareVersion: '1.0.0',
    agentVersion: '0.0.0',
    clock: new SystemClock(),
    ...(idleSocketMs !== undefined ? { idleSocketMs } : {}),
  });
  clients.push(api);
  return api;
}

test('the default idle limit is short: well under any load balancer idle timeout', () => {
  expect(IDLE_SOCKET_MS).toBeLessThanOrEqual(5_000);
  expect(IDLE_SOCKET_MS).toBeGreaterThan(0);
});

test('back-to-back calls share one connection', async () => {
  const api = client();
  const before = connections.length;
  await api.health();
  await api.health();
  await api.health();
  expect(connections.length - before).toBe(1);
});

test('a call after the pooled socket sat idle past the limit opens a fresh connection', async () => {
  const api = client(50);
  const before = connections.length;
  await api.health();
  const first = connections.at(-1)!;
  // The agent closes the idle socket; without an idle limit it never would
  // (the server keeps it 10 minutes), and the next call would reuse it.
  await until('the idle socket closed by the agent', () => first.destroyed);
  await api.health();
  expect(connections.length - before).toBe(2);
});

test('the idle limit does not cut a request that waits longer for its answer', async () => {
  const api = client(20);
  delayMs = 200;
  try {
    await expect(api.health()).resolves.toMatchObject({ value: { status: 'ok' } });
  } finally {
    delayMs = 0;
  }
});
