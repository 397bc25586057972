// The local API's server on a real unix socket: the handler map, the error
// shape, the socket's mode, the events stream, and what it does with a
// client that sends garbage, too much, nothing, or never reads.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { EventBus } from '../../agent/core/event-bus.js';
import type { DaemonSnapshot } from '../../agent/core/state.js';
import { statusDocument, type StatusDocument } from '../../agent/core/status-document.js';
import { EventsHub } from '../../agent/localapi/events.js';
import { apiEvents, apiRequest, LocalApiUnreachable } from '../../agent/localapi/client.js';
import { HandlerMap, type StreamSink } from '../../agent/localapi/handlers.js';
import type { UploadRow } from '../../agent/uploads/upload-rows.js';
import { LocalApiServer } from '../../agent/localapi/server.js';
import { registerStatusHandlers } from '../../agent/localapi/status-handlers.js';
import { LOCAL_API } from '../../agent/lib/timing.js';
import { registerSecret } from '../../agent/lib/secrets.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';

const moment = { at: '2026-01-01T00:00:00.000Z', monotonic: 1 };
const snapshot = (state: DaemonSnapshot['state'], beat?: number): DaemonSnapshot => ({
  state,
  reason: `now ${state}`,
  since: moment,
  pid: 1,
  started: moment,
  consecutiveFailures: 0,
  firmwareVersion: '1.0.0',
  agentVersion: '0.0.0',
  timeScale: 1,
  updated: moment,
  ...(beat !== undefined && { lastHeartbeat: { at: moment.at, monotonic: beat, result: 'ok' } }),
});

/** Raw bytes to the socket; resolves with everything the server sent before it closed (or after `waitMs`). */
function raw(socketPath: string, data: string | Buffer, waitMs = 2_000): Promise<string> {
  return new Promise((resolve) => {
    const s = net.createConnection(socketPath);
    let got = '';
    s.on('data', (c) => (got += c.toString()));
    s.on('connect', () => s.write(data));
    const t = setTimeout(() => {
      s.destroy();
      resolve(got);
    }, waitMs);
    s.on('close', () => {
      clearTimeout(t);
      resolve(got);
    });
    s.on('error', () => undefined);
  });
}

describe('local API server', () => {
  let dir: string;
  let sock: string;
  let server: LocalApiServer;
  let bus: EventBus;
  let hub: EventsHub;
  let clock: FakeClock;
  let current: StatusDocument | undefined;
  let routes: HandlerMap;

  async function serve(limits: Partial<Record<keyof typeof LOCAL_API, number>> = {}): Promise<void> {
    bus = new EventBus();
    clock = new FakeClock();
    current = statusDocument(snapshot('online'), {});
    hub = new EventsHub({ bus, clock, status: () => current, uploads: () => [] });
    hub.start();
    routes = new HandlerMap();
    registerStatusHandlers(routes, { status: () => current, events: hub });
    routes.add('POST', '/v1/echo', 'write', (req) => ({ status: 200, body: { got: req.body } }));
    routes.add('GET', '/v1/things/{id}', 'read', (req) => ({ status: 200, body: { id: req.params.id } }));
    routes.add('GET', '/v1/boom', 'read', () => {
      throw new Error('a bug');
    });
    server = new LocalApiServer({ socketPath: sock, routes, clock, limits });
    await server.start();
  }

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'localapi-'));
    sock = path.join(dir, 'api.sock');
  });
  afterEach(async () => {
    await hub?.stop();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers GET /v1/status with the status document; the socket is 0660', async () => {
    await serve();
    expect(statSync(sock).mode & 0o777).toBe(0o660);
    const r = await apiRequest(sock, 'GET', '/v1/status');
    expect(r).toEqual({ status: 200, body: current });
  });

  it('routes path parameters; unknown paths are 404 and other methods 405, each with the error shape', async () => {
    await serve();
    expect((await apiRequest(sock, 'GET', '/v1/things/a%20b')).body).toEqual({ id: 'a b' });
    const nf = await apiRequest(sock, 'GET', '/v1/nothing');
    expect(nf.status).toBe(404);
    expect(nf.body).toEqual({ error: { kind: 'not-found', message: expect.stringContaining('/v1/nothing') } });
    const na = await apiRequest(sock, 'DELETE', '/v1/status');
    expect(na.status).toBe(405);
    expect((na.body as { error: { kind: string } }).error.kind).toBe('method-not-allowed');
    const boom = await apiRequest(sock, 'GET', '/v1/boom');
    expect(boom.status).toBe(500);
    expect((boom.body as { error: { kind: string } }).error.kind).toBe('internal');
  });

  it('a body that is not JSON is 400; one over the cap is 413 and nothing reaches the handler', async () => {
    await serve({ maxBodyBytes: 1024 });
    expect((await apiRequest(sock, 'POST', '/v1/echo', { a: 1 })).body).toEqual({ got: { a: 1 } });
    const garbage = await raw(sock, 'POST /v1/echo HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\n\r\n{{{');
    expect(garbage).toMatch(/^HTTP\/1\.1 400/);
    expect(garbage).toContain('"kind":"bad-request"');
    const big = await apiRequest(sock, 'POST', '/v1/echo', { pad: 'x'.repeat(5000) });
    expect(big.status).toBe(413);
    expect((big.body as { error: { kind: string } }).error.kind).toBe('too-large');
    // Sizes in the binary units the docs promise, not raw byte counts (issue 29).
    expect((big.body as { error: { message: string } }).error.message).toMatch(/cap of 1\.0 KiB$/);
    // Chunked, no length given: cut off as it passes the cap.
    const chunked = await raw(sock, `POST /v1/echo HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n800\r\n${'x'.repeat(0x800)}\r\n0\r\n\r\n`);
    expect(chunked).toMatch(/^HTTP\/1\.1 413/);
  });

  it('a body declared over the cap and sent whole gets its 413 (read away after the answer, not a reset), and the connection serves the next request', async () => {
    await serve({ maxBodyBytes: 1024 });
    const body = `{"paths":["${'a'.repeat(300 * 1024)}"]}`;
    const got = await raw(sock, `POST /v1/echo HTTP/1.1\r\nhost: x\r\ncontent-length: ${body.length}\r\n\r\n${body}GET /v1/status HTTP/1.1\r\nhost: x\r\n\r\n`, 1_000);
    expect(got).toMatch(/^HTTP\/1\.1 413 /);
    expect(got).toContain('"kind":"too-large"');
  });

  it('garbage that is not HTTP, and a head over the cap, are refused with a JSON error and the connection closed', async () => {
    await serve();
    const g = await raw(sock, Buffer.from([0, 1, 2, 255, 13, 10, 13, 10]));
    expect(g).toMatch(/^HTTP\/1\.1 400/);
    expect(g).toContain('"kind":"bad-request"');
    const huge = await raw(sock, `GET /v1/status HTTP/1.1\r\nx-pad: ${'a'.repeat(LOCAL_API.maxHeaderBytes + 100)}\r\n\r\n`);
    expect(huge).toMatch(/^HTTP\/1\.1 431/);
    // The server still answers others.
    expect((await apiRequest(sock, 'GET', '/v1/status')).status).toBe(200);
  });

  it('a stale socket left by a dead daemon is replaced; a file that is not a socket is left alone and listening fails', async () => {
    await serve();
    await server.stop();
    // stop() removed it; a process killed while it listened leaves its socket file behind.
    spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(sock)}, () => process.kill(process.pid, 'SIGKILL'))`]);
    expect(statSync(sock).isSocket()).toBe(true);
    await serve();
    expect((await apiRequest(sock, 'GET', '/v1/status')).status).toBe(200);
    await server.stop();
    writeFileSync(sock, 'not a socket');
    const other = new LocalApiServer({ socketPath: sock, routes: new HandlerMap(), clock: new FakeClock() });
    await expect(other.start()).rejects.toThrow(/not a socket/);
    expect(statSync(sock).isFile()).toBe(true);
  });

  it('a socket path too long for a unix socket is refused before anything is bound (libuv would bind a shortened path elsewhere)', async () => {
    const long = path.join(dir, 'x'.repeat(120), 'api.sock');
    const other = new LocalApiServer({ socketPath: long, routes: new HandlerMap(), clock: new FakeClock() });
    await expect(other.start()).rejects.toThrow(/over the 107 bytes|shorter --runtime-dir/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('no daemon: the client says the socket cannot be reached, with the code', async () => {
    await expect(apiRequest(path.join(dir, 'none.sock'), 'GET', '/v1/status')).rejects.toBeInstanceOf(LocalApiUnreachable);
    await expect(apiRequest(path.join(dir, 'none.sock'), 'GET', '/v1/status')).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(apiRequest(path.join(dir, 'x'.repeat(120), 'api.sock'), 'GET', '/v1/status')).rejects.toMatchObject({ code: 'ENAMETOOLONG' });
    await expect(apiEvents(path.join(dir, 'x'.repeat(120), 'api.sock'), () => undefined)).rejects.toMatchObject({ code: 'ENAMETOOLONG' });
  });

  it('events: the status first, then state, heartbeat and pairing lines, each with type and at', async () => {
    await serve();
    const lines: Array<Record<string, unknown>> = [];
    const ac = new AbortController();
    const reading = apiEvents(sock, (e) => lines.push(e), { signal: ac.signal });
    await waitFor(() => lines.length >= 1);
    expect(lines[0]).toEqual({ type: 'status', at: expect.any(String), status: current });
    bus.emit('stateChanged', { snapshot: snapshot('offline', 5), transition: true });
    bus.emit('pairing', { phase: 'waiting', expires_in: 60 });
    bus.emit('prefsChanged', { prefs: { autoUpload: false } });
    await waitFor(() => lines.length >= 5);
    expect(lines.slice(1)).toEqual([
      { type: 'state', at: expect.any(String), from: null, to: 'offline', reason: 'now offline' },
      { type: 'heartbeat', at: moment.at, outcome: 'ok' },
      { type: 'pairing', at: expect.any(String), phase: 'waiting', expires_in: 60 },
      { type: 'prefs', at: expect.any(String), autoUpload: false },
    ]);
    ac.abort();
    await reading;
  });

  it('no registered secret leaves the socket: not in an answer, an error message or an events line', async () => {
    const secret = 'sekret-token-4f9a2c1e';
    registerSecret(secret, { rotating: 'tokens' });
    await serve();
    routes.add('GET', '/v1/leaky', 'read', () => ({ status: 200, body: { nested: [{ url: `https://storage.example/p?sig=${secret}` }] } }));
    routes.add('GET', '/v1/leaky-error', 'read', () => {
      throw new Error(`the service said: bearer ${secret}`);
    });
    const ok = await apiRequest(sock, 'GET', '/v1/leaky');
    expect(ok.body).toEqual({ nested: [{ url: 'https://storage.example/p?sig=[redacted]' }] });
    const failed = await apiRequest(sock, 'GET', '/v1/leaky-error');
    expect(failed.status).toBe(500);
    expect(JSON.stringify(failed.body)).toContain('[redacted]');
    expect(JSON.stringify(failed.body)).not.toContain(secret);
    const lines: Array<Record<string, unknown>> = [];
    const ac = new AbortController();
    const reading = apiEvents(sock, (e) => lines.push(e), { signal: ac.signal });
    await waitFor(() => lines.length >= 1);
    bus.emit('pairing', { phase: 'retrying', error: { kind: 'network', message: `refused ${secret}` } });
    await waitFor(() => lines.length >= 2);
    expect(lines[1]).toEqual({ type: 'pairing', at: expect.any(String), phase: 'retrying', error: { kind: 'network', message: 'refused [redacted]' } });
    ac.abort();
    await reading;
  });

  it('a reader that never reads is cut off after its buffer fills; another reader and requests go on', async () => {
    await serve({ eventsBufferBytes: 64 * 1024 });
    // A raw client that sends the request and then never reads a byte.
    const stuck = net.createConnection(sock);
    stuck.on('error', () => undefined);
    await new Promise<void>((r) => stuck.on('connect', () => r()));
    stuck.pause();
    stuck.write('GET /v1/events HTTP/1.1\r\nhost: x\r\n\r\n');
    const good: Array<Record<string, unknown>> = [];
    const ac = new AbortController();
    const reading = apiEvents(sock, (e) => good.push(e), { signal: ac.signal });
    await waitFor(() => hub.readerCount === 2 && good.length >= 1);
    const reason = 'x'.repeat(4096);
    for (let i = 0; i < 2_000 && hub.readerCount === 2; i++) {
      bus.emit('pairing', { phase: 'failed', exitCode: 69, error: { kind: 'network', message: reason } });
      await new Promise((r) => setImmediate(r));
    }
    expect(hub.readerCount).toBe(1);
    await waitFor(() => good.length > 10);
    expect(good.every((e) => e.type !== 'overflow')).toBe(true);
    expect((await apiRequest(sock, 'GET', '/v1/status')).status).toBe(200);
    ac.abort();
    await reading;
    stuck.destroy();
  });

  it('a slow reader gets one last line saying it fell behind, then the stream ends', async () => {
    await serve({ eventsBufferBytes: 1 });
    const lines: Array<Record<string, unknown>> = [];
    const reading = apiEvents(sock, (e) => lines.push(e));
    await waitFor(() => lines.length >= 1);
    // Two lines at once: the second finds the first still buffered (the limit is one byte).
    bus.emit('pairing', { phase: 'waiting', expires_in: 60 });
    bus.emit('pairing', { phase: 'waiting', expires_in: 60 });
    await reading;
    expect(lines.at(-1)).toMatchObject({ type: 'overflow', message: expect.stringContaining('behind') });
    expect(hub.readerCount).toBe(0);
  });

  it('connections over the cap: the oldest idle one makes room, so a newcomer is served', async () => {
    await serve({ maxConnections: 8 });
    const idle: net.Socket[] = [];
    for (let i = 0; i < 20; i++) {
      const s = net.createConnection(sock);
      s.on('error', () => undefined);
      idle.push(s);
      await new Promise<void>((r) => s.on('connect', () => r()));
    }
    await waitFor(() => server.connections <= 8);
    expect((await apiRequest(sock, 'GET', '/v1/status')).status).toBe(200);
    expect(server.connections).toBeLessThanOrEqual(8);
    for (const s of idle) s.destroy();
  });

  it('over the cap, a connection that never sent a byte makes room before one whose request is on its way', async () => {
    await serve({ maxConnections: 4 });
    // The oldest connection has sent part of a head: a request on its way, not yet parsed.
    const started = net.createConnection(sock);
    started.on('error', () => undefined);
    let answer = '';
    started.on('data', (c) => (answer += c.toString()));
    await new Promise<void>((r) => started.on('connect', () => r()));
    started.write('GET /v1/status HTTP/1.1\r\nhost: x\r\n');
    await waitFor(() => server.connections === 1);
    // The server has read those bytes once a request on another connection, sent after them, is answered
    // (the server reads every socket that has data whenever it looks; this one's came first).
    const probe = net.createConnection(sock);
    probe.on('error', () => undefined);
    let probed = '';
    probe.on('data', (c) => (probed += c.toString()));
    probe.write('GET /v1/status HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
    await new Promise<void>((r) => probe.on('close', () => r()));
    expect(probed).toMatch(/^HTTP\/1\.1 200 /);
    await waitFor(() => server.connections === 1);
    const empty: net.Socket[] = [];
    for (let i = 0; i < 10; i++) {
      const s = net.createConnection(sock);
      s.on('error', () => undefined);
      empty.push(s);
      await new Promise<void>((r) => s.on('connect', () => r()));
    }
    await waitFor(() => empty.filter((s) => s.destroyed).length >= 7);
    expect(started.destroyed).toBe(false);
    started.write('connection: close\r\n\r\n');
    await new Promise<void>((r) => started.on('close', () => r()));
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    for (const s of empty) s.destroy();
  });

  it('a connection that sends nothing is dropped after the idle time', async () => {
    await serve({ idleTimeoutMs: 300 });
    const s = net.createConnection(sock);
    s.on('error', () => undefined);
    const closed = new Promise<void>((r) => s.on('close', () => r()));
    await closed;
    await waitFor(() => server.connections === 0);
    expect(s.destroyed).toBe(true);
    expect(server.connections).toBe(0);
  });

  it('while stopping, streams get a last line and close', async () => {
    await serve();
    const lines: Array<Record<string, unknown>> = [];
    const reading = apiEvents(sock, (e) => lines.push(e));
    await waitFor(() => lines.length >= 1);
    await server.stop();
    await reading;
    expect(lines.at(-1)).toMatchObject({ type: 'bye' });
  });
});

const waitFor = (cond: () => boolean, ms = 5_000): Promise<unknown> => until('the condition', cond, { hangMs: ms, everyMs: 10 });

describe('events hub: upload and channels lines', () => {
  it('an upload line per change (state, bytes, priority), at most one look a second; channels when the section changes; nothing looked at without a reader', async () => {
    const bus = new EventBus();
    const clock = new FakeClock();
    let looks = 0;
    let rows: UploadRow[] = [];
    let channels = { detected: ['video'], known: null as string[] | null, pendingSyncs: 1 };
    const hub = new EventsHub({
      bus,
      clock,
      status: () => statusDocument(snapshot('online'), { channels }),
      uploads: () => {
        looks++;
        return rows;
      },
    });
    hub.start();
    bus.emit('bytesSent', { bytes: 1 });
    await clock.advance(5_000);
    expect(looks).toBe(0);
    const lines: unknown[] = [];
    const sink: StreamSink = { send: (o) => (lines.push(o), true), end: () => undefined, buffered: 0, onClose: () => undefined };
    const row = (state: UploadRow['state'], bytesDone: number, priority: UploadRow['priority'] = 'normal'): UploadRow => ({ id: 'b:1', name: 'a.mp4', path: '/m/a.mp4', state, bytesDone, bytesTotal: 10, priority });
    rows = [row('queued', 0)];
    hub.attach(sink);
    expect(lines).toHaveLength(1);
    rows = [row('uploading', 5)];
    bus.emit('bytesSent', { bytes: 5 });
    bus.emit('bytesSent', { bytes: 5 });
    await clock.advance(0);
    expect(lines.slice(1)).toEqual([{ type: 'upload', at: expect.any(String), id: 'b:1', name: 'a.mp4', state: 'uploading', bytesDone: 5, bytesTotal: 10, priority: 'normal' }]);
    // Within the second: one more look, once the second is over.
    rows = [row('done', 10, 'high')];
    bus.emit('outboxSettled', {});
    await clock.advance(500);
    expect(lines).toHaveLength(2);
    await clock.advance(500);
    expect(lines.at(-1)).toMatchObject({ type: 'upload', state: 'done', bytesDone: 10, priority: 'high' });
    // Nothing changed: no line.
    bus.emit('statusChanged', {});
    await clock.advance(2_000);
    expect(lines).toHaveLength(3);
    channels = { detected: ['video'], known: ['video'], pendingSyncs: 0 };
    bus.emit('channelsSynced', { map: { video: 'c1' } });
    bus.emit('channelsDetected', { keys: new Set(['video']) });
    expect(lines.slice(3)).toEqual([{ type: 'channels', at: expect.any(String), detected: ['video'], known: ['video'], pendingSyncs: 0 }]);
    await hub.stop();
  });
});
