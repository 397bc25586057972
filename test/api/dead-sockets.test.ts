// Sockets that die without a word (issue 22; the network itself is in
// test/net/): every request to the service and every storage PUT turns TCP
// keepalive on while it waits (node's Agent only does so for idle pooled
// sockets), and a network failure empties the pool of idle sockets, so the
// retry opens a fresh connection instead of taking another dead one.
import { afterAll, afterEach, beforeAll, expect, jest, test } from '@jest/globals';
import http from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';
import { createServiceApi, type ServiceApi } from '../../agent/api/service.js';
import { createStorageClient, type StorageClient } from '../../agent/api/storage.js';
import { SystemClock } from '../../agent/lib/clock.js';
import { TCP_KEEPALIVE_IDLE_MS } from '../../agent/lib/timing.js';
import { until } from '../support/until.js';
import { failure } from './failure.js';

let server: http.Server;
let base: string;
/** Requests the server cuts (socket destroyed, no answer) while > 0. */
let cut = 0;
let delayMs = 0;
const connections: Socket[] = [];
const keepAliveAtAnswer: boolean[] = [];
const closers: Array<{ close(): void }> = [];

const spy = jest.spyOn(net.Socket.prototype, 'setKeepAlive');

beforeAll(async () => {
  server = http.createServer((req, res) => {
    // Whether the client's socket had keepalive set by the time its request arrived.
    keepAliveAtAnswer.push(spy.mock.calls.some(([on, delay]) => on === true && delay === TCP_KEEPALIVE_IDLE_MS));
    if (cut > 0) {
      cut--;
      req.socket.destroy();
      return;
    }
    req.resume();
    req.on('end', () =>
      // unref: an answer held a minute must not keep jest waiting after the last test.
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"status":"ok"}');
      }, delayMs).unref(),
    );
  });
  server.keepAliveTimeout = 600_000;
  server.on('connection', (s: Socket) => connections.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterEach(() => {
  spy.mockClear();
  keepAliveAtAnswer.length = 0;
  cut = 0;
  delayMs = 0;
});
afterAll(async () => {
  for (const c of closers) c.close();
  spy.mockRestore();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function api(): ServiceApi {
  const a = createServiceApi({ baseUrl: base, token: 't', firmwareVersion: '1.0.0', agentVersion: '0.0.0', clock: new SystemClock(), idleSocketMs: 600_000 });
  closers.push(a);
  return a;
}

function storage(): StorageClient {
  const s = createStorageClient({ clock: new SystemClock(), idleSocketMs: 600_000 });
  closers.push(s);
  return s;
}

const put = (s: StorageClient, i: number): Promise<unknown> => s.put({ url: `${base}/_storage/a/${i}?sig=x`, body: Buffer.from('hello'), length: 5, contentType: 'video/mp4' });
const closed = (s: Socket): Promise<boolean> =>
  new Promise((r) => {
    if (s.destroyed) return r(true);
    const t = setTimeout(() => r(false), 5_000);
    s.once('close', () => (clearTimeout(t), r(true)));
  });

test('a request to the service probes its socket with TCP keepalive while it waits for the answer', async () => {
  delayMs = 30;
  await api().health();
  expect(keepAliveAtAnswer).toEqual([true]);
});

test('a storage PUT probes its socket with TCP keepalive while it is sent and answered', async () => {
  await put(storage(), 1);
  expect(keepAliveAtAnswer).toEqual([true]);
});

test('a network failure on a service request closes the idle pooled sockets; the next request opens a fresh connection', async () => {
  const a = api();
  delayMs = 30;
  // Two at once: two connections, both idle in the pool afterwards.
  await Promise.all([a.health(), a.health()]);
  const pooled = connections.slice(-2);
  cut = 1;
  await expect(a.health()).rejects.toMatchObject({ kind: 'network' });
  // One pooled socket was the cut one; the other, idle, is closed by the agent (the server would keep it ten minutes).
  expect(await Promise.all(pooled.map(closed))).toEqual([true, true]);
  const before = connections.length;
  await a.health();
  expect(connections.length).toBe(before + 1);
});

test('a network failure on a storage PUT closes the idle pooled sockets', async () => {
  const s = storage();
  delayMs = 30;
  await Promise.all([put(s, 1), put(s, 2)]);
  const pooled = connections.slice(-2);
  cut = 1;
  await expect(put(s, 3)).rejects.toMatchObject({ kind: 'network' });
  expect(await Promise.all(pooled.map(closed))).toEqual([true, true]);
});

test('without a failure the pooled sockets stay', async () => {
  const a = api();
  delayMs = 30;
  await Promise.all([a.health(), a.health()]);
  const pooled = connections.slice(-2);
  // One more round trip, after the first two answers were handled: it takes a pooled socket, no new one.
  const before = connections.length;
  await a.health();
  expect(connections.length).toBe(before);
  expect(pooled.map((s) => s.destroyed)).toEqual([false, false]);
});

test('closing the connections on an address that went away fails the request in flight at once, leaving other addresses alone', async () => {
  const a = api();
  delayMs = 60_000;
  const arrived = keepAliveAtAnswer.length;
  const pending = a.health();
  await until('the request at the server', () => keepAliveAtAnswer.length > arrived);
  expect(a.transport.dropConnectionsOn(new Set(['10.9.9.9']))).toBe(0);
  expect(a.transport.dropConnectionsOn(new Set(['127.0.0.1']))).toBe(1);
  // Ended by the drop, not by a limit: the answer is a minute away, the request's limit 30 s (this test's timeout is 10).
  const err = await failure(pending);
  expect(err.kind).toBe('network');
  expect(err.details.code).not.toBe('ETIMEDOUT');
}, 10_000);

test('the same for a storage PUT in flight', async () => {
  const s = storage();
  delayMs = 60_000;
  const arrived = keepAliveAtAnswer.length;
  const pending = put(s, 9);
  await until('the PUT at the server', () => keepAliveAtAnswer.length > arrived);
  expect(s.dropConnectionsOn(new Set(['127.0.0.1']))).toBe(1);
  const err = await failure(pending);
  expect(err.kind).toBe('network');
  expect(err.details.code).not.toBe('ETIMEDOUT');
}, 10_000);
