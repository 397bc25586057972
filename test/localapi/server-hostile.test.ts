// Issue 27: what a seeded hostile client found on the local API's socket,
// each reproduced against the server on a real unix socket. Pipelined
// requests are answered one at a time, in order, each after the one before
// took effect, with the connection not read meanwhile and its backlog
// bounded; a value nested 100,000 deep is a 400, not a 500; the answers node
// would give itself (no Host, an unknown Expect, CONNECT) are JSON too;
// events streams cannot take every connection, and a reader that takes
// nothing is dropped even while the daemon is quiet.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { EventBus } from '../../agent/core/event-bus.js';
import type { DaemonSnapshot } from '../../agent/core/state.js';
import { statusDocument, type StatusDocument } from '../../agent/core/status-document.js';
import { apiEvents, apiRequest } from '../../agent/localapi/client.js';
import { EventsHub } from '../../agent/localapi/events.js';
import { HandlerMap } from '../../agent/localapi/handlers.js';
import { registerPairHandlers } from '../../agent/auth/pair-handlers.js';
import { registerPrefsHandlers } from '../../agent/prefs/prefs-handlers.js';
import { PrefsStore } from '../../agent/prefs/prefs-store.js';
import { LocalApiServer } from '../../agent/localapi/server.js';
import { registerStatusHandlers } from '../../agent/localapi/status-handlers.js';
import { registerUploadHandlers } from '../../agent/uploads/upload-handlers.js';
import { LOCAL_API } from '../../agent/lib/timing.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';

const moment = { at: '2026-01-01T00:00:00.000Z', monotonic: 1 };
const snapshot: DaemonSnapshot = { state: 'online', reason: 'now online', since: moment, pid: 1, started: moment, consecutiveFailures: 0, firmwareVersion: '1.0.0', agentVersion: '0.0.0', timeScale: 1, updated: moment };

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  text: string;
}

/**
 * A raw client: writes bytes and splits what comes back into answers by
 * their content-length (every answer here has one), each body parsed as
 * JSON (`body` undefined when it is not JSON).
 */
function rawClient(sock: string) {
  const s = net.createConnection(sock);
  s.on('error', () => undefined);
  const answers: Answer[] = [];
  let buf = Buffer.alloc(0);
  let closed = false;
  const watchers: Array<() => void> = [];
  const poke = (): void => {
    for (const w of watchers.splice(0)) w();
  };
  s.on('data', (c: Buffer) => {
    buf = Buffer.concat([buf, c]);
    for (;;) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) break;
      const head = buf.subarray(0, end).toString('latin1').split('\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head[0] ?? '')?.[1] ?? 0);
      const headers = Object.fromEntries(head.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      const length = Number(headers['content-length'] ?? 0);
      if (buf.length < end + 4 + length) break;
      const text = buf.subarray(end + 4, end + 4 + length).toString('utf8');
      buf = buf.subarray(end + 4 + length);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      answers.push({ status, headers, body, text });
    }
    poke();
  });
  s.on('close', () => {
    closed = true;
    poke();
  });
  const connected = new Promise<void>((r) => s.once('connect', () => r()));
  return {
    socket: s,
    answers,
    get closed() {
      return closed;
    },
    async send(data: string | Buffer): Promise<void> {
      await connected;
      s.write(data);
    },
    /** Resolves once `cond` holds (checked at each arrival), or with false once the connection closed without it. */
    until(cond: () => boolean): Promise<boolean> {
      return new Promise((resolve) => {
        const check = (): void => {
          if (cond()) resolve(true);
          else if (closed) resolve(false);
          else watchers.push(check);
        };
        check();
      });
    },
  };
}

const get = (p: string): string => `GET ${p} HTTP/1.1\r\nhost: x\r\n\r\n`;
const withBody = (method: string, p: string, body: string): string => `${method} ${p} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

const waitFor = (cond: () => boolean, ms = 10_000): Promise<unknown> => until('the condition', cond, { hangMs: ms });

describe('local API server against a hostile client (issue 27)', () => {
  let dir: string;
  let sock: string;
  let server: LocalApiServer | undefined;
  let hub: EventsHub | undefined;
  let bus: EventBus;
  let clock: FakeClock;
  let routes: HandlerMap;
  let current: StatusDocument;
  const clients: net.Socket[] = [];

  async function serve(limits: Partial<Record<keyof typeof LOCAL_API, number>> = {}, more?: (r: HandlerMap) => void): Promise<void> {
    bus = new EventBus();
    clock = new FakeClock();
    current = statusDocument(snapshot, {});
    hub = new EventsHub({ bus, clock, status: () => current, uploads: () => [] });
    hub.start();
    routes = new HandlerMap();
    registerStatusHandlers(routes, { status: () => current, events: hub });
    more?.(routes);
    server = new LocalApiServer({ socketPath: sock, routes, clock, limits });
    await server.start();
  }

  function client() {
    const c = rawClient(sock);
    clients.push(c.socket);
    return c;
  }

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'localapi-hostile-'));
    sock = path.join(dir, 'api.sock');
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.destroy();
    await hub?.stop();
    await server?.stop();
    server = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  /** GET /v1/list/{n}: a few hundred rows, as GET /v1/uploads answers with a full queue; `built` counts answers built. */
  function listRoute(counter: { built: number }) {
    return (r: HandlerMap): void => {
      r.add('GET', '/v1/list/{n}', 'read', (req) => {
        counter.built++;
        return { status: 200, body: { n: Number(req.params.n), rows: Array.from({ length: 300 }, (_, i) => ({ id: `b:${i}`, name: `clip-${i}.mp4`, state: 'queued', bytesDone: 0, bytesTotal: 1_000_000 })) } };
      });
    };
  }

  it('1,000 pipelined requests in one write: answered in order, one at a time, the backlog bounded; another connection is answered before the first one is done', async () => {
    const counter = { built: 0 };
    await serve({}, listRoute(counter));
    const a = client();
    await a.send(Array.from({ length: 1_000 }, (_, i) => get(`/v1/list/${i}`)).join(''));
    await a.until(() => a.answers.length >= 1);
    // A second connection asks for the status while the first one's requests wait.
    const b = client();
    let aAnswersWhenBAnswered = -1;
    void b.until(() => b.answers.length >= 1).then(() => (aAnswersWhenBAnswered = a.answers.length));
    await b.send(get('/v1/status'));
    await a.until(() => a.closed);
    await b.until(() => b.answers.length >= 1);
    expect(b.answers[0]!.status).toBe(200);
    // The first connection: every answer JSON and in order, until the backlog's bound; the request past it is
    // refused in its turn and the connection closed, nothing after it built.
    const served = a.answers.filter((x) => x.status === 200);
    expect(served.map((x) => (x.body as { n: number }).n)).toEqual(served.map((_, i) => i));
    expect(served.length).toBeLessThanOrEqual(LOCAL_API.maxPipelined + 1);
    expect(a.answers.at(-1)).toMatchObject({ status: 503, headers: { connection: 'close' }, body: { error: { kind: 'unavailable', message: expect.stringContaining('wait on this connection') } } });
    expect(a.answers.every((x) => x.body !== undefined)).toBe(true);
    expect(counter.built).toBe(served.length);
    // The other connection was not made to wait for all of them.
    expect(aAnswersWhenBAnswered).toBeLessThan(a.answers.length);
  });

  it('a client that pipelines and never reads: answers are built only as fast as it takes them (none piled up in memory); once it reads, all come in order', async () => {
    const counter = { built: 0 };
    await serve({ maxPipelined: 2_000 }, listRoute(counter));
    const a = client();
    a.socket.pause();
    await a.send(Array.from({ length: 1_000 }, (_, i) => get(`/v1/list/${i}`)).join(''));
    await waitFor(() => counter.built >= 1);
    // Give the server every chance to build more: the kernel takes a few answers of ~30 KB, then nothing.
    for (let i = 0; i < 200; i++) await new Promise((r) => setImmediate(r));
    expect(counter.built).toBeLessThan(50);
    a.socket.resume();
    await a.until(() => a.answers.length >= 1_000);
    expect(a.answers.map((x) => (x.body as { n: number }).n)).toEqual(Array.from({ length: 1_000 }, (_, i) => i));
    expect(counter.built).toBe(1_000);
  }, 30_000);

  it('a pipelined GET after a PATCH answers the value the PATCH left: each request after the one before it took effect', async () => {
    let value = 0;
    await serve({}, (r) => {
      r.add('GET', '/v1/value', 'read', () => ({ status: 200, body: { value } }));
      r.add('PATCH', '/v1/value', 'write', async (req) => {
        // A write that takes a while, as the preferences' write to flash does.
        for (let i = 0; i < 5; i++) await new Promise((res) => setImmediate(res));
        value = (req.body as { value: number }).value;
        return { status: 200, body: { value } };
      });
    });
    const a = client();
    const steps = [1, 2, 3, 4];
    await a.send(steps.map((v) => withBody('PATCH', '/v1/value', JSON.stringify({ value: v })) + get('/v1/value')).join(''));
    await a.until(() => a.answers.length >= steps.length * 2);
    expect(a.answers.map((x) => x.body)).toEqual(steps.flatMap((v) => [{ value: v }, { value: v }]));
  });

  it('a request refused at once (its body never read) and others behind it in the same read: each served exactly once, in order', async () => {
    // node runs the microtasks between two requests of one read (and between the pieces of a body): the
    // refusal's answer was done, and the next request read, before the turn that follows that answer. The
    // fuzzer found the next one served twice (its second answer read an empty body and reset the connection).
    const seen: number[] = [];
    await serve({}, (r) =>
      r.add('POST', '/v1/count', 'write', async (req) => {
        await new Promise((res) => setImmediate(res));
        seen.push((req.body as { i: number }).i);
        return { status: 200, body: { i: (req.body as { i: number }).i } };
      }),
    );
    const a = client();
    const n = 10;
    const count = (i: number): string => withBody('POST', '/v1/count', JSON.stringify({ i }));
    // Refusals with a body the handler never reads, first and between the others.
    const refused = withBody('PUT', '/v1/status', JSON.stringify({ pad: 'x'.repeat(600) }));
    await a.send([refused, count(0), refused, get('/v1/nothing'), ...Array.from({ length: n - 1 }, (_, i) => count(i + 1))].join(''));
    await a.until(() => a.answers.length >= n + 3);
    expect(a.answers.map((x) => x.status)).toEqual([405, 200, 405, 404, ...Array<number>(n - 1).fill(200)]);
    expect(a.answers.filter((x) => x.status === 200).map((x) => (x.body as { i: number }).i)).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(seen).toEqual(Array.from({ length: n }, (_, i) => i));
  });

  it('the same with the preferences: PATCH /v1/prefs then GET /v1/prefs in one write', async () => {
    const store = new PrefsStore({ stateDir: dir, bus: new EventBus(), clock: new FakeClock() });
    store.start();
    await serve({}, (r) => registerPrefsHandlers(r, store));
    const a = client();
    await a.send(withBody('PATCH', '/v1/prefs', '{"autoUpload":false}') + get('/v1/prefs') + withBody('PATCH', '/v1/prefs', '{"autoUpload":true}') + get('/v1/prefs'));
    await a.until(() => a.answers.length >= 4);
    expect(a.answers.map((x) => x.body)).toEqual([{ autoUpload: false }, { autoUpload: false }, { autoUpload: true }, { autoUpload: true }]);
    await store.stop();
  });

  it('a value nested 100,000 deep is a 400 with one line on every endpoint that takes a body, not a 500', async () => {
    const store = new PrefsStore({ stateDir: dir, bus: new EventBus(), clock: new FakeClock() });
    store.start();
    const asked: string[] = [];
    await serve({}, (r) => {
      registerPrefsHandlers(r, store);
      registerPairHandlers(r, {
        pairing: {
          begin: async () => (asked.push('begin'), { phase: 'code', user_code: '1', verification_uri: 'u', verification_uri_complete: 'u', expires_in: 1, interval: 1 }),
          cancel: () => 'cancelled',
          unpair: async () => (asked.push('unpair'), { revoked: true, removed: true, warnings: [] }),
        },
      });
      registerUploadHandlers(r, {
        uploads: { queueByHand: async () => (asked.push('queue'), []), cancel: async () => 'cancelled', cancelAll: async () => [], setPriority: async () => (asked.push('priority'), 'ok') },
        rows: () => [],
        roots: { roots: [dir] },
      });
    });
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const cases: Array<[string, string, string]> = [
      ['PATCH', '/v1/prefs', `{"autoUpload":${deep}}`],
      ['PATCH', '/v1/uploads/b%3A1', `{"priority":${deep}}`],
      ['POST', '/v1/pair', `{"timeoutSeconds":${deep}}`],
      ['POST', '/v1/unpair', `{"local":${deep}}`],
      ['POST', '/v1/uploads', `{"paths":${deep}}`],
      ['PATCH', '/v1/prefs', deep],
      // Brackets inside a string are not nesting.
      ['PATCH', '/v1/prefs', `{"autoUpload":"${'['.repeat(1_000)}"}`],
    ];
    for (const [method, p, body] of cases) {
      const c = client();
      await c.send(withBody(method, p, body));
      await c.until(() => c.answers.length >= 1);
      const a = c.answers[0]!;
      expect({ method, p, status: a.status }).toEqual({ method, p, status: 400 });
      expect(a.body).toEqual({ error: { kind: 'bad-request', message: expect.any(String) } });
      expect((a.body as { error: { message: string } }).error.message).not.toMatch(/\n|internal/);
    }
    // Nothing reached the daemon, and nothing changed.
    expect(asked).toEqual([]);
    expect(store.prefs()).toEqual({ autoUpload: true });
    await store.stop();
  });

  it('a request without Host, an Expect node does not know, and CONNECT each get a JSON answer (and CONNECT the connection closed), after the answers before them', async () => {
    await serve();
    const noHost = client();
    await noHost.send('GET /v1/status HTTP/1.1\r\n\r\n');
    await noHost.until(() => noHost.answers.length >= 1);
    expect(noHost.answers[0]).toMatchObject({ status: 400, body: { error: { kind: 'bad-request', message: expect.stringContaining('Host') } } });
    // HTTP/1.0 needs no Host.
    const old = client();
    await old.send('GET /v1/status HTTP/1.0\r\n\r\n');
    await old.until(() => old.answers.length >= 1);
    expect(old.answers[0]!.status).toBe(200);

    const expectFoo = client();
    await expectFoo.send('GET /v1/status HTTP/1.1\r\nhost: x\r\nexpect: foo\r\n\r\n');
    await expectFoo.until(() => expectFoo.answers.length >= 1);
    expect(expectFoo.answers[0]).toMatchObject({ status: 417, body: { error: { kind: 'bad-request', message: expect.stringContaining('Expect') } } });

    const connect = client();
    await connect.send('CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n');
    expect(await connect.until(() => connect.closed)).toBe(true);
    expect(connect.answers).toEqual([expect.objectContaining({ status: 405, headers: expect.objectContaining({ allow: expect.stringContaining('GET') }), body: { error: { kind: 'method-not-allowed', message: expect.stringContaining('CONNECT') } } })]);

    // In a pipeline: the answers before it first, in order.
    const piped = client();
    await piped.send(`${get('/v1/status')}${get('/v1/nothing')}CONNECT example.com:443 HTTP/1.1\r\nhost: x\r\n\r\n`);
    await piped.until(() => piped.closed);
    expect(piped.answers.map((x) => x.status)).toEqual([200, 404, 405]);
    // Past the backlog's bound, then CONNECT: the answers up to the bound's 503, then the connection closed (the fuzzer
    // found the CONNECT's refusal cutting the connection before the answers queued ahead of it).
    const over = client();
    await over.send(`${get('/v1/status').repeat(LOCAL_API.maxPipelined + 10)}CONNECT example.com:443 HTTP/1.1\r\nhost: x\r\n\r\n`);
    await over.until(() => over.closed);
    expect(over.answers.map((x) => x.status)).toEqual([...Array<number>(LOCAL_API.maxPipelined + 1).fill(200), 503]);
    const garbage = client();
    await garbage.send(`${get('/v1/status')}\x00\x01 not http\r\n\r\n`);
    await garbage.until(() => garbage.closed);
    expect(garbage.answers.map((x) => [x.status, x.body !== undefined])).toEqual([
      [200, true],
      [400, true],
    ]);
  });

  it('64 events streams: only maxStreams are served, the rest refused with JSON; GET /v1/status and a write are still answered', async () => {
    await serve({}, (r) => r.add('POST', '/v1/echo', 'write', (req) => ({ status: 200, body: { got: req.body } })));
    const streams: Array<ReturnType<typeof rawClient>> = [];
    for (let i = 0; i < LOCAL_API.maxConnections; i++) {
      const c = client();
      await c.send(get('/v1/events'));
      streams.push(c);
    }
    // Every one answered: a stream's head (its lines are not parsed here), or a refusal.
    await waitFor(() => streams.every((c) => c.answers.length >= 1));
    expect(hub!.readerCount).toBe(LOCAL_API.maxStreams);
    const refused = streams.filter((c) => c.answers[0]!.status !== 200);
    expect(refused).toHaveLength(LOCAL_API.maxConnections - LOCAL_API.maxStreams);
    for (const c of refused) expect(c.answers[0]).toMatchObject({ status: 503, body: { error: { kind: 'unavailable', message: expect.stringContaining('events streams') } } });
    expect((await apiRequest(sock, 'GET', '/v1/status')).status).toBe(200);
    expect(await apiRequest(sock, 'POST', '/v1/echo', { a: 1 })).toEqual({ status: 200, body: { got: { a: 1 } } });
  });

  it('an events reader that takes nothing is dropped on a quiet daemon (keep-alive lines fill its socket, then it stalls); a reader that reads stays', async () => {
    await serve({ eventsKeepAliveMs: 1_000, eventsStallMs: 5_000 });
    const stuck = client();
    stuck.socket.pause();
    await stuck.send(get('/v1/events'));
    const good: Array<Record<string, unknown>> = [];
    const ac = new AbortController();
    const reading = apiEvents(sock, (e) => good.push(e), { signal: ac.signal });
    await waitFor(() => hub!.readerCount === 2 && good.length >= 1);
    // Nothing happens on the bus: only time passes (the fake clock's), in keep-alive steps.
    for (let i = 0; i < 5_000 && hub!.readerCount === 2; i++) {
      await clock.advance(1_000);
      await new Promise((r) => setImmediate(r));
    }
    expect(hub!.readerCount).toBe(1);
    // Its connection is gone (seen once it reads what was left in its socket).
    stuck.socket.resume();
    expect(await stuck.until(() => false)).toBe(false);
    expect(good.length).toBeGreaterThan(10);
    expect(good.slice(1).every((l) => l.type === 'keepalive' && typeof l.at === 'string')).toBe(true);
    // The reader left is served on.
    const before = good.length;
    bus.emit('prefsChanged', { prefs: { autoUpload: false } });
    await waitFor(() => good.length > before);
    expect(good.at(-1)).toMatchObject({ type: 'prefs', autoUpload: false });
    ac.abort();
    await reading;
  }, 30_000);
});
