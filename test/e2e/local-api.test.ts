// The acceptance test of issue 20, in agent time (rig.ts): a UI-style client
// (plain node:http on the daemon's unix socket, not the CLI and not the
// agent's own client) steers the daemon against the fake cloud: it pairs
// through the daemon, watches the events stream, turns auto-upload off,
// queues a batch, raises one file's priority, cancels one upload mid-flight,
// turns auto-upload on again; the service ends with exactly the expected
// assets, byte-identical, the heartbeat spacing clean by the fake's referee on
// the same clock (no slack); after a restart the cancelled file is not sent (a
// clip written after the restart is). The socket is the daemon's own, served
// in this process; `status` as a process against a running daemon:
// integration/cli-local-api.test.ts and upload-blocks.test.ts.
import http from 'node:http';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { PART, assetsNamed, completeNamed, describeAssets, storagePuts, storedProblems } from '../support/assets.js';
import { until } from '../support/until.js';
import { HOUR, MINUTE, Rig, SECOND } from './rig.js';

type Json = Record<string, unknown>;
/** What the fake's tokens, device codes and client secret look like: never in an answer or a line. */
const FAKE_SECRET = /\bfc[dars]_[A-Za-z0-9_-]{8,}/;

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/** One request as a UI process would send it: plain HTTP/1.1 over the socket; agent time moves only if its handler waits on it (Rig.answered). */
async function call(r: Rig, socketPath: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await r.answered(`${method} ${path}`, new Promise<{ status: number; body: Json }>((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({ socketPath, method, path, headers: data === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text === '' ? {} : (JSON.parse(text) as Json) }));
    });
    req.on('error', reject);
    req.end(data);
  }));
  return res;
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

describe('local API in agent time: a UI client steers the daemon', () => {
  it('pairs, watches, queues a batch, raises one, cancels one mid-flight, toggles autoUpload; the service ends with exactly the expected assets', async () => {
    const r = (rig = await Rig.up({ credentials: 'none', cloud: { devices: 0, uploadPartBytes: PART } }));
    const env = r.mediaEnv(1);
    r.start(env);
    const sock = join(r.runtimeDir, 'api.sock');
    await r.until('the API socket', () => statSync(sock, { throwIfNoEntry: false })?.isSocket() === true, MINUTE);
    expect(statSync(sock).mode & 0o777).toBe(0o660);

    const events = watch(sock);
    // Real I/O: the stream's first line, time standing still.
    await until('the first line', () => events.lines[0], { hangMs: 10_000 });
    expect(events.lines[0]).toMatchObject({ type: 'status', status: { state: expect.any(String) } });

    // Not paired yet: the status document has the contract's keys, `device` null. (The queue section comes once the outbox is replayed, moments after start.)
    // Asked once an agent second, as a UI polls.
    let unpaired: Json = {};
    for (let s = 0; s < 60 && !(unpaired.state === 'needs-pairing' && unpaired.queue !== undefined); s++) {
      if (s > 0) await r.advance(SECOND);
      unpaired = (await call(r, sock, 'GET', '/v1/status')).body;
    }
    expect(unpaired).toMatchObject({ state: 'needs-pairing', device: null });
    expectContractKeys(unpaired);
    expect(unpaired).not.toHaveProperty('outbox');
    expect((events.lines[0]!.status as Json).device).toBeNull();

    // Pairing through the daemon: the UI shows the code, a person approves it.
    const pair = await call(r, sock, 'POST', '/v1/pair', {});
    expect(pair.status).toBe(202);
    expect(pair.body).toMatchObject({ user_code: expect.any(String), verification_uri: expect.any(String), expires_in: expect.any(Number) });
    expect(JSON.stringify(pair.body)).not.toMatch(/device_code|fcd_/);
    expect(r.cloud.control.approve(pair.body.user_code as string)).toBe(true);
    const line = (want: (l: Json) => boolean) => (): boolean => events.lines.some(want);
    await r.until('paired', line((l) => l.type === 'pairing' && l.phase === 'paired'), 5 * MINUTE);
    await r.until('online', line((l) => l.type === 'state' && l.to === 'online'), 5 * MINUTE);
    const st = await call(r, sock, 'GET', '/v1/status');
    expect(st.status).toBe(200);
    expectContractKeys(st.body);
    expect(st.body).toMatchObject({ state: 'online', device: { id: expect.any(String) }, queue: { byKind: expect.any(Object), inFlight: expect.any(Array) } });
    const deviceId = (st.body.device as { id: string }).id;
    expect(st.body.network).toMatchObject({ serviceRttMs: expect.any(Number), lastContactAt: expect.any(String), uploadBytesPerSecond: expect.any(Number) });
    await r.until('a heartbeat line', line((l) => l.type === 'heartbeat' && l.outcome !== undefined), 10 * MINUTE);

    // Auto-upload off: a clip landing in the media dir waits.
    expect((await call(r, sock, 'PATCH', '/v1/prefs', { autoUpload: false })).body).toEqual({ autoUpload: false });
    await r.until('the prefs line', line((l) => l.type === 'prefs' && l.autoUpload === false), MINUTE);
    expect((await call(r, sock, 'GET', '/v1/status')).body.prefs).toEqual({ autoUpload: false });
    const auto = r.writeMedia('auto.mp4', 300_000, HOUR);
    // Slow storage down (each part answered 18 agent s late), so an upload is caught in flight.
    r.cloud.control.addFault({ kind: 'delay', path: '/_storage/*', method: 'PUT', delayMs: 18 * SECOND });
    const files = new Map<string, Buffer>();
    for (const [name, size] of [['b1.mp4', 3 * PART], ['b2.mp4', 12 * PART], ['b3.mp4', 2 * PART], ['b4.mp4', 2 * PART]] as const) files.set(name, r.writeMedia(name, size, HOUR));
    const media = r.media;

    // Refused: a path out of the media dir; nothing of that batch is queued.
    const refused = await call(r, sock, 'POST', '/v1/uploads', { paths: [join(media, 'b1.mp4'), join(r.stateDir, 'credentials.json')] });
    expect(refused.status).toBe(403);
    expect((refused.body.error as Json).kind).toBe('forbidden');
    expect((await call(r, sock, 'GET', '/v1/uploads')).body.uploads).toEqual([]);

    const queued = await call(r, sock, 'POST', '/v1/uploads', { paths: ['b1.mp4', 'b2.mp4', 'b3.mp4', 'b4.mp4'].map((n) => join(media, n)) });
    expect(queued.status).toBe(202);
    const ids = Object.fromEntries((queued.body.uploads as Array<{ path: string; id: string; duplicate: boolean }>).map((u) => [u.path.split('/').pop()!, u]));
    expect(Object.values(ids).map((u) => u.duplicate)).toEqual([false, false, false, false]);
    // Raised while b1 and b2 hold the two slots: b4 goes before b3.
    const raised = await call(r, sock, 'PATCH', `/v1/uploads/${encodeURIComponent(ids['b4.mp4']!.id)}`, { priority: 'high' });
    expect(raised.status).toBe(200);
    expect(raised.body.upload).toMatchObject({ priority: 'high' });
    // Asked again: the same id, duplicate.
    const again = await call(r, sock, 'POST', '/v1/uploads', { paths: [join(media, 'b1.mp4')] });
    expect(again.body.uploads).toEqual([{ path: join(media, 'b1.mp4'), id: ids['b1.mp4']!.id, duplicate: true }]);

    // b2 in flight (some of its bytes sent): cancelled; it stops within seconds.
    const b2 = ids['b2.mp4']!.id;
    await r.until('b2 under way', line((l) => l.type === 'upload' && l.id === b2 && (l.bytesDone as number) > 0), 10 * MINUTE);
    const cancelled = await call(r, sock, 'DELETE', `/v1/uploads/${encodeURIComponent(b2)}`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.upload).toMatchObject({ id: b2, state: 'cancelled' });
    const b2Asset = assetsNamed(r.cloud, 'b2.mp4')[0]!;
    const putsAtCancel = storagePuts(r.cloud, b2Asset.id).length;
    await r.until('b1, b3, b4 stored', () => ['b1.mp4', 'b3.mp4', 'b4.mp4'].every((n) => completeNamed(r.cloud, n).length === 1), 30 * MINUTE).catch((e: Error) => {
      throw new Error(`${e.message}\n${describeAssets(r.cloud)}`);
    });
    // At most the part that was on the way when the cancel came.
    expect(storagePuts(r.cloud, b2Asset.id).length).toBeLessThanOrEqual(putsAtCancel + 1);
    expect(r.cloud.asset(b2Asset.id)?.complete).toBe(false);
    const created = r.cloud.assets().map((a) => a.name);
    expect(created.indexOf('b4.mp4')).toBeLessThan(created.indexOf('b3.mp4'));
    expect(completeNamed(r.cloud, 'auto.mp4')).toEqual([]);

    // Auto-upload on again: the clip that waited goes.
    expect((await call(r, sock, 'PATCH', '/v1/prefs', { autoUpload: true })).body).toEqual({ autoUpload: true });
    files.set('auto.mp4', auto);
    files.delete('b2.mp4');
    await r.until('auto.mp4 stored', () => completeNamed(r.cloud, 'auto.mp4').length === 1, 10 * MINUTE);

    const list = (await call(r, sock, 'GET', '/v1/uploads')).body.uploads as Json[];
    expect(list.find((u) => u.id === b2)).toMatchObject({ state: 'cancelled', name: 'b2.mp4', reason: expect.stringContaining('cancelled') });
    expect(list.find((u) => u.id === ids['b4.mp4']!.id)).toMatchObject({ state: 'done', bytesDone: 2 * PART, bytesTotal: 2 * PART });
    // The stream told the story (upload lines at most once a second): each upload's end, with type and at on every line.
    for (const name of ['b1.mp4', 'b3.mp4', 'b4.mp4', 'auto.mp4']) await r.until(`${name} done on the stream`, line((l) => l.type === 'upload' && l.name === name && l.state === 'done'), MINUTE);
    expect(events.lines.some((l) => l.type === 'upload' && l.id === b2 && l.state === 'cancelled')).toBe(true);
    expect(events.lines.every((l) => typeof l.type === 'string' && typeof l.at === 'string')).toBe(true);

    // No answer and no line carried a token, a refresh token, the client secret or a device code.
    const said = JSON.stringify([events.lines, list, (await call(r, sock, 'GET', '/v1/status')).body, (await call(r, sock, 'GET', '/v1/prefs')).body]);
    expect(said).not.toMatch(FAKE_SECRET);
    expect(said).not.toContain(r.cloud.clientSecret);

    // A restart: the cancelled file, still in the media dir, is not sent again; nothing else is either.
    events.close();
    await r.stop();
    r.start(env);
    await r.until('the API again, online', () => r.status()?.pid === r.daemonPid() && r.state() === 'online', 5 * MINUTE);
    expect((await call(r, sock, 'GET', '/v1/status')).body.state).toBe('online');
    // A clip written after the restart, stored: the restarted daemon has looked at its media dir (b2.mp4 there,
    // older) and worked its queue before this one's last part, so a b2 it took again would have an asset by now.
    files.set('late.mp4', r.writeMedia('late.mp4', PART));
    await r.until('late.mp4 stored', () => completeNamed(r.cloud, 'late.mp4').length === 1, 10 * MINUTE);
    expect(assetsNamed(r.cloud, 'b2.mp4')).toHaveLength(1);
    expect(storagePuts(r.cloud, b2Asset.id).length).toBeLessThanOrEqual(putsAtCancel + 1);

    // Exactly the expected assets complete, byte-identical.
    expect(r.cloud.assets().filter((a) => a.complete).map((a) => a.name).sort()).toEqual([...files.keys()].sort());
    for (const [name, data] of files) expect(storedProblems(r.cloud, name, data)).toEqual([]);
    // Heartbeats went on through it all, and the referee on the same clock finds none too soon or too late.
    await r.until('a third heartbeat', () => r.cloud.referee(deviceId).heartbeats > 2, 30 * MINUTE);
    const ref = r.cloud.referee(deviceId);
    expect({ tooSoon: ref.tooSoon, tooLate: ref.tooLate }).toEqual({ tooSoon: 0, tooLate: 0 });
  });
});
