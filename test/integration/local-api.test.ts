// The acceptance test of issue 20: a UI-style client (plain node:http on the
// daemon's unix socket, not the CLI and not the agent's own client) steers a
// real daemon against the fake cloud: it pairs through the daemon, watches
// the events stream, turns auto-upload off, queues a batch, raises one
// file's priority, cancels one upload mid-flight, turns auto-upload on
// again; the service ends with exactly the expected assets, byte-identical,
// the heartbeat spacing clean by the fake's referee; after a restart the
// cancelled file is not sent (a clip written after the restart is).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type FakeCloud } from '../fake-cloud/index.js';
import { ensureBuilt, killAll, makeDirs, removeDirs, startAgent, status, waitFor, type AgentDirs, type AgentProcess, startTestCloud } from './agent-process.js';
import { FAKE_SECRET, writeSecretFile } from './pair-process.js';
import { assetsNamed, completeNamed, describeAssets, storedProblems, storagePuts, writeMedia, PART } from './uploads-harness.js';

const SCALE = 60;
const HOUR = 3600_000;

type Json = Record<string, unknown>;

/** One request as a UI process would send it: plain HTTP/1.1 over the socket. */
function call(socketPath: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({ socketPath, method, path, headers: data === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text === '' ? {} : (JSON.parse(text) as Json) }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

/** The keys of GET /v1/status that /work/shared/design/contract.md ("The local API") names, and the network section's. */
function expectContractKeys(doc: Json): void {
  for (const key of ['state', 'device', 'uploads', 'channels', 'queue', 'network']) expect({ key, has: key in doc }).toEqual({ key, has: true });
  const network = doc.network as Json;
  for (const key of ['interface', 'type', 'serviceRttMs', 'uploadBytesPerSecond', 'lastContactAt']) expect({ key, has: key in network }).toEqual({ key, has: true });
  expect([null, 'ethernet', 'wifi', 'cellular', 'other']).toContain(network.type);
}

/** The events stream, every line kept. */
function watch(socketPath: string): { lines: Json[]; close(): void } {
  const lines: Json[] = [];
  const req = http.request({ socketPath, method: 'GET', path: '/v1/events' }, (res) => {
    let rest = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => {
      rest += c;
      for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
        lines.push(JSON.parse(rest.slice(0, nl)) as Json);
        rest = rest.slice(nl + 1);
      }
    });
  });
  req.on('error', () => undefined);
  req.end();
  return { lines, close: () => req.destroy() };
}

describe('local API: a UI client steers the daemon', () => {
  let cloud: FakeCloud;
  let dirs: AgentDirs;
  beforeAll(async () => {
    await ensureBuilt();
    cloud = await startTestCloud({ timeScale: SCALE, devices: 0, uploadPartBytes: PART });
    dirs = makeDirs();
  }, 120_000);
  afterAll(async () => {
    await killAll();
    await cloud?.close();
    if (dirs) removeDirs(dirs);
  });

  it('pairs, watches, queues a batch, raises one, cancels one mid-flight, toggles autoUpload; the service ends with exactly the expected assets', async () => {
    const media = join(dirs.root, 'media');
    mkdirSync(media, { recursive: true });
    const secretFile = writeSecretFile(dirs, cloud.clientSecret);
    const env = { C2C_CLIENT_SECRET_FILE: secretFile, C2C_MEDIA_DIR: media, C2C_MEDIA_SETTLE_SECONDS: '1' };
    const start = (): AgentProcess => startAgent({ apiUrl: cloud.url, dirs, timeScale: SCALE, env });
    let agent = start();
    const sock = join(dirs.runtimeDir, 'api.sock');
    await waitFor('the API socket', () => statSync(sock, { throwIfNoEntry: false })?.isSocket(), 15_000);
    expect(statSync(sock).mode & 0o777).toBe(0o660);

    const events = watch(sock);
    await waitFor('the first line', () => events.lines[0], 5_000);
    expect(events.lines[0]).toMatchObject({ type: 'status', status: { state: expect.any(String) } });

    // Not paired yet: the status document has the contract's keys, `device` null. (The queue section comes once the outbox is replayed, moments after start.)
    const unpaired = await waitFor('needs-pairing with the queue section', async () => {
      const r = await call(sock, 'GET', '/v1/status');
      return r.body.state === 'needs-pairing' && r.body.queue !== undefined && r.body;
    }, 5_000, 50);
    expect(unpaired).toMatchObject({ state: 'needs-pairing', device: null });
    expectContractKeys(unpaired);
    expect(unpaired).not.toHaveProperty('outbox');
    expect((events.lines[0]!.status as Json).device).toBeNull();
    // `status --json` prints the same object: the same keys, device null.
    const cli = await status(dirs, cloud.url, SCALE);
    expect(cli).toMatchObject({ exitCode: 77, json: { running: true, state: 'needs-pairing', device: null } });
    expectContractKeys(cli.json);

    // Pairing through the daemon: the UI shows the code, a person approves it.
    const pair = await call(sock, 'POST', '/v1/pair', {});
    expect(pair.status).toBe(202);
    expect(pair.body).toMatchObject({ user_code: expect.any(String), verification_uri: expect.any(String), expires_in: expect.any(Number) });
    expect(JSON.stringify(pair.body)).not.toMatch(/device_code|fcd_/);
    expect(cloud.control.approve(pair.body.user_code as string)).toBe(true);
    await waitFor('paired', () => events.lines.find((l) => l.type === 'pairing' && l.phase === 'paired'), 20_000);
    await waitFor('online', () => events.lines.find((l) => l.type === 'state' && l.to === 'online'), 20_000);
    const st = await call(sock, 'GET', '/v1/status');
    expect(st.status).toBe(200);
    expectContractKeys(st.body);
    expect(st.body).toMatchObject({ state: 'online', device: { id: expect.any(String) }, queue: { byKind: expect.any(Object), inFlight: expect.any(Array) } });
    const deviceId = (st.body.device as { id: string }).id;
    expect(st.body.network).toMatchObject({ serviceRttMs: expect.any(Number), lastContactAt: expect.any(String), uploadBytesPerSecond: expect.any(Number) });
    await waitFor('a heartbeat line', () => events.lines.find((l) => l.type === 'heartbeat' && l.outcome !== undefined), 20_000);

    // Auto-upload off: a clip landing in the media dir waits.
    expect((await call(sock, 'PATCH', '/v1/prefs', { autoUpload: false })).body).toEqual({ autoUpload: false });
    await waitFor('the prefs line', () => events.lines.find((l) => l.type === 'prefs' && l.autoUpload === false), 5_000);
    expect((await call(sock, 'GET', '/v1/status')).body.prefs).toEqual({ autoUpload: false });
    const auto = writeMedia(join(media, 'auto.mp4'), 300_000, HOUR);
    // Slow storage down (each part answered after 0.3 real s), so an upload is caught in flight.
    cloud.control.addFault({ kind: 'delay', path: '/_storage/*', method: 'PUT', delayMs: 300 * SCALE });
    const files = new Map<string, Buffer>();
    for (const [name, size] of [['b1.mp4', 3 * PART], ['b2.mp4', 12 * PART], ['b3.mp4', 2 * PART], ['b4.mp4', 2 * PART]] as const) files.set(name, writeMedia(join(media, name), size, HOUR));

    // Refused: a path out of the media dir; nothing of that batch is queued.
    const refused = await call(sock, 'POST', '/v1/uploads', { paths: [join(media, 'b1.mp4'), join(dirs.stateDir, 'credentials.json')] });
    expect(refused.status).toBe(403);
    expect((refused.body.error as Json).kind).toBe('forbidden');
    expect((await call(sock, 'GET', '/v1/uploads')).body.uploads).toEqual([]);

    const queued = await call(sock, 'POST', '/v1/uploads', { paths: ['b1.mp4', 'b2.mp4', 'b3.mp4', 'b4.mp4'].map((n) => join(media, n)) });
    expect(queued.status).toBe(202);
    const ids = Object.fromEntries((queued.body.uploads as Array<{ path: string; id: string; duplicate: boolean }>).map((u) => [u.path.split('/').pop()!, u]));
    expect(Object.values(ids).map((u) => u.duplicate)).toEqual([false, false, false, false]);
    // Raised while b1 and b2 hold the two slots: b4 goes before b3.
    const raised = await call(sock, 'PATCH', `/v1/uploads/${encodeURIComponent(ids['b4.mp4']!.id)}`, { priority: 'high' });
    expect(raised.status).toBe(200);
    expect(raised.body.upload).toMatchObject({ priority: 'high' });
    // Asked again: the same id, duplicate.
    const again = await call(sock, 'POST', '/v1/uploads', { paths: [join(media, 'b1.mp4')] });
    expect(again.body.uploads).toEqual([{ path: join(media, 'b1.mp4'), id: ids['b1.mp4']!.id, duplicate: true }]);

    // b2 in flight (some of its bytes sent): cancelled; it stops within seconds.
    const b2 = ids['b2.mp4']!.id;
    await waitFor('b2 under way', () => events.lines.find((l) => l.type === 'upload' && l.id === b2 && (l.bytesDone as number) > 0), 20_000);
    const cancelled = await call(sock, 'DELETE', `/v1/uploads/${encodeURIComponent(b2)}`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.upload).toMatchObject({ id: b2, state: 'cancelled' });
    const b2Asset = assetsNamed(cloud, 'b2.mp4')[0]!;
    const putsAtCancel = storagePuts(cloud, b2Asset.id).length;
    await waitFor('b1, b3, b4 stored', () => ['b1.mp4', 'b3.mp4', 'b4.mp4'].every((n) => completeNamed(cloud, n).length === 1), 60_000, 50).catch((e: Error) => {
      throw new Error(`${e.message}\n${describeAssets(cloud)}\n${agent.output()}`);
    });
    // At most the part that was on the way when the cancel came.
    expect(storagePuts(cloud, b2Asset.id).length).toBeLessThanOrEqual(putsAtCancel + 1);
    expect(cloud.asset(b2Asset.id)?.complete).toBe(false);
    const created = cloud.assets().map((a) => a.name);
    expect(created.indexOf('b4.mp4')).toBeLessThan(created.indexOf('b3.mp4'));
    expect(completeNamed(cloud, 'auto.mp4')).toEqual([]);

    // Auto-upload on again: the clip that waited goes.
    expect((await call(sock, 'PATCH', '/v1/prefs', { autoUpload: true })).body).toEqual({ autoUpload: true });
    files.set('auto.mp4', auto);
    files.delete('b2.mp4');
    await waitFor('auto.mp4 stored', () => completeNamed(cloud, 'auto.mp4').length === 1, 30_000, 50);

    const list = (await call(sock, 'GET', '/v1/uploads')).body.uploads as Json[];
    expect(list.find((u) => u.id === b2)).toMatchObject({ state: 'cancelled', name: 'b2.mp4', reason: expect.stringContaining('cancelled') });
    expect(list.find((u) => u.id === ids['b4.mp4']!.id)).toMatchObject({ state: 'done', bytesDone: 2 * PART, bytesTotal: 2 * PART });
    // The stream told the story (upload lines at most once a second): each upload's end, with type and at on every line.
    for (const name of ['b1.mp4', 'b3.mp4', 'b4.mp4', 'auto.mp4']) await waitFor(`${name} done on the stream`, () => events.lines.some((l) => l.type === 'upload' && l.name === name && l.state === 'done'), 5_000);
    expect(events.lines.some((l) => l.type === 'upload' && l.id === b2 && l.state === 'cancelled')).toBe(true);
    expect(events.lines.every((l) => typeof l.type === 'string' && typeof l.at === 'string')).toBe(true);

    // No answer and no line carried a token, a refresh token, the client secret or a device code.
    const said = JSON.stringify([events.lines, list, (await call(sock, 'GET', '/v1/status')).body, (await call(sock, 'GET', '/v1/prefs')).body]);
    expect(said).not.toMatch(FAKE_SECRET);
    expect(said).not.toContain(cloud.clientSecret);

    // A restart: the cancelled file, still in the media dir, is not sent again; nothing else is either.
    events.close();
    agent.child.kill('SIGTERM');
    await agent.exited;
    agent = start();
    await waitFor('the API again', async () => (await call(sock, 'GET', '/v1/status').catch(() => ({ status: 0, body: {} as Json }))).body.state === 'online', 20_000, 100);
    // A clip written after the restart, stored: the restarted daemon has looked at its media dir (b2.mp4 there,
    // older) and worked its queue before this one's last part, so a b2 it took again would have an asset by now.
    files.set('late.mp4', writeMedia(join(media, 'late.mp4'), PART));
    await waitFor('late.mp4 stored', () => completeNamed(cloud, 'late.mp4').length === 1, 30_000, 50);
    expect(assetsNamed(cloud, 'b2.mp4')).toHaveLength(1);
    expect(storagePuts(cloud, b2Asset.id).length).toBeLessThanOrEqual(putsAtCancel + 1);

    // Exactly the expected assets complete, byte-identical.
    expect(cloud.assets().filter((a) => a.complete).map((a) => a.name).sort()).toEqual([...files.keys()].sort());
    for (const [name, data] of files) expect(storedProblems(cloud, name, data)).toEqual([]);
    // Heartbeats went on through it all: three at least, waited for (how many came meanwhile is the machine's pace).
    await waitFor('a third heartbeat', () => cloud.referee(deviceId).heartbeats > 2, 30_000, 50);
    const ref = cloud.referee(deviceId);
    expect({ tooSoon: ref.tooSoon, tooLate: ref.tooLate }).toEqual({ tooSoon: 0, tooLate: 0 });
  }, 180_000);
});
