import { afterEach, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { startFakeCloud } from './index.js';
import type { FakeCloud, FakeCloudOptions } from './index.js';
import { call, raw } from './test-helpers.js';
import { VirtualClock } from '../support/virtual-clock.js';

let cloud: FakeCloud | undefined;
afterEach(async () => {
  await cloud?.close();
  cloud = undefined;
});

type Json = Record<string, any>;

async function start(o: FakeCloudOptions = {}): Promise<FakeCloud> {
  cloud = await startFakeCloud({ devices: 2, ...o });
  return cloud;
}

async function postJson(c: FakeCloud, path: string, body: unknown, i = 0): Promise<{ status: number; body: Json }> {
  const r = await call(c.url, path, {
    method: 'POST',
    token: c.devices[i]!.accessToken,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: text ? (JSON.parse(text) as Json) : {} };
}

function put(url: string, body: Buffer, headers: Record<string, string> = {}) {
  return raw(url, {
    method: 'PUT',
    body,
    headers: { 'content-type': 'video/mp4', 'x-amz-acl': 'private', 'content-length': String(body.length), ...headers },
  });
}

describe('channels', () => {
  it('connects, lists, refuses a duplicate (409) and disconnects one or all', async () => {
    const c = await start();
    const d = c.devices[0]!;
    const cam = await postJson(c, '/v2/devices/channels', { client_id: d.clientId, device_model_id: 'cam-hd' });
    expect(cam.status).toBe(200);
    expect(cam.body).toMatchObject({ _type: 'project_device_channel', asset_type: 'video', project_device_id: d.id, external_index: 0 });
    expect((await postJson(c, '/v2/devices/channels', { client_id: d.clientId, device_model_id: 'cam-hd' })).status).toBe(409);
    const mic = await postJson(c, '/v2/devices/channels', { client_id: d.clientId, device_model_id: 'audio-mic' });
    expect(mic.body.asset_type).toBe('audio');
    const second = await postJson(c, '/v2/devices/channels', { client_id: d.clientId, device_model_id: 'cam-hd', external_index: 1 });
    expect(second.status).toBe(200);
    expect(c.device(d.id)).toMatchObject({ channel_count: 3 });
    // Another unit's client_id, and malformed bodies.
    expect((await postJson(c, '/v2/devices/channels', { client_id: c.devices[1]!.clientId, device_model_id: 'x' })).status).toBe(409);
    expect((await postJson(c, '/v2/devices/channels', { client_id: d.clientId })).status).toBe(422);

    const one = await call(c.url, `/v2/devices/channels/${cam.body.id}/disconnect`, { method: 'POST', token: d.accessToken });
    expect(one.status).toBe(204);
    expect(c.device(d.id)!.channel_count).toBe(2);
    const again = await call(c.url, `/v2/devices/channels/${cam.body.id}/disconnect`, { method: 'POST', token: d.accessToken });
    expect(again.status).toBe(404);
    // Channels of one device are not another's to disconnect.
    const other = await call(c.url, `/v2/devices/channels/${mic.body.id}/disconnect`, { method: 'POST', token: c.devices[1]!.accessToken });
    expect(other.status).toBe(404);
    const all = await call(c.url, '/v2/devices/channels/disconnect', { method: 'POST', token: d.accessToken });
    expect(all.status).toBe(204);
    expect(c.device(d.id)!.channels).toEqual([]);
    expect((await call(c.url, '/v2/devices/channels/disconnect', { method: 'POST' })).status).toBe(401);
  });
});

describe('assets and presigned uploads', () => {
  it('splits a file evenly over upload URLs and accepts each chunk with the right type and size', async () => {
    const c = await start({ uploadPartBytes: 1000 });
    const file = Buffer.alloc(2500, 7);
    const a = await postJson(c, '/v2/devices/assets', { name: 'clip.mp4', filetype: 'video/mp4', filesize: file.length, offset: 12 });
    expect(a.status).toBe(200);
    expect(a.body.upload_urls).toHaveLength(3);
    // chunk = ceil(2500 / 3) = 834; the last one to EOF: 832.
    const chunks = [file.subarray(0, 834), file.subarray(834, 1668), file.subarray(1668)];
    for (let i = 0; i < 3; i++) {
      const r = await put(a.body.upload_urls[i], chunks[i]!);
      expect(r.status).toBe(200);
      expect(r.headers!.etag).toBeDefined();
    }
    const view = c.asset(a.body.id)!;
    expect(view).toMatchObject({ complete: true, bytesReceived: 2500, filesize: 2500 });
    expect(view.parts[2]!.sha256).toBe(createHash('sha256').update(chunks[2]!).digest('hex'));
    // Storage is not the API: no rate-limit headers, and it journals without the signature.
    const entry = c.journal[c.journal.length - 1]!;
    expect(entry).toMatchObject({ method: 'PUT', deviceId: c.devices[0]!.id, authValid: true, status: 200 });
    expect(entry.path).not.toContain('Signature');
  });

  it('refuses wrong Content-Type, wrong size, a wrong x-amz-acl, a bad signature and GET', async () => {
    const c = await start({ uploadPartBytes: 1000 });
    const a = await postJson(c, '/v2/devices/assets', { name: 'a.mp4', filetype: 'video/mp4', filesize: 100, offset: 0 });
    const url: string = a.body.upload_urls[0];
    const body = Buffer.alloc(100);
    const typeR = await put(url, body, { 'content-type': 'application/octet-stream' });
    expect(typeR.status).toBe(403);
    expect(typeR.body.toString()).toContain('SignatureDoesNotMatch');
    expect((await put(url, Buffer.alloc(99))).status).toBe(400);
    expect((await put(url, Buffer.alloc(101))).status).toBe(400);
    expect((await put(url, body, { 'x-amz-acl': 'public-read' })).status).toBe(403);
    expect((await put(url.replace(/Signature=[0-9a-f]+/, 'Signature=00'), body)).status).toBe(403);
    expect((await raw(url)).status).toBe(405);
    expect(c.asset(a.body.id)!.complete).toBe(false);
    expect((await put(url, body)).status).toBe(200);
    expect(c.asset(a.body.id)!.complete).toBe(true);
  });

  it('expires upload URLs after 24 agent hours', async () => {
    const clock = new VirtualClock();
    const c = await start({ clock: clock.now });
    const a = await postJson(c, '/v2/devices/assets', { name: 'a.mp4', filetype: 'video/mp4', filesize: 10, offset: 0 });
    await clock.advance(24 * 3600_000 + 1);
    const r = await put(a.body.upload_urls[0], Buffer.alloc(10));
    expect(r.status).toBe(403);
    expect(r.body.toString()).toContain('expired');
  });

  it('validates asset creation and answers 409 Channel Paused for a paused device', async () => {
    const c = await start();
    expect((await postJson(c, '/v2/devices/assets', { name: 'a', filetype: 'video/mp4', filesize: -1, offset: 0 })).status).toBe(422);
    expect((await postJson(c, '/v2/devices/assets', { name: 'a', filetype: 'mp4', filesize: 1, offset: 0 })).status).toBe(422);
    expect((await postJson(c, '/v2/devices/assets', { name: 'a', filetype: 'video/mp4', filesize: 1 })).status).toBe(422);
    c.control.pause(c.devices[0]!.id);
    const paused = await postJson(c, '/v2/devices/assets', { name: 'a', filetype: 'video/mp4', filesize: 1, offset: 0 });
    expect(paused.status).toBe(409);
    expect(paused.body).toMatchObject({ code: 409, errors: [{ code: 409, status: 409, title: 'Channel Paused' }], message: 'Channel Paused' });
    c.control.unpause(c.devices[0]!.id);
    expect((await postJson(c, '/v2/devices/assets', { name: 'a', filetype: 'video/mp4', filesize: 1, offset: 0 })).status).toBe(200);
  });

  it('hands out real-time part URLs in part order and enforces the part rules', async () => {
    const c = await start();
    const a = await postJson(c, '/v2/devices/assets', { name: 'live.mp4', filetype: 'video/mp4', offset: 0, is_realtime_upload: true });
    expect(a.status).toBe(200);
    expect(a.body.upload_urls).toEqual([]);
    const parts = `/v2/devices/assets/${a.body.id}/realtime_upload/parts`;
    const MiB = 1024 * 1024;
    const r = await postJson(c, parts, { parts: [{ number: 2, size: 5 * MiB, is_final: false }, { number: 1, size: 6 * MiB, is_final: false }] });
    expect(r.status).toBe(200);
    expect(r.body.upload_urls).toHaveLength(2);
    expect(r.body.upload_urls[0]).toContain('/rt-2?');
    expect(r.body.upload_urls[1]).toContain('/rt-1?');
    // The service's errors are 400s (docs/service-api.md, "Real-time uploads").
    expect((await postJson(c, parts, { parts: [{ number: 3, size: MiB, is_final: false }] })).status).toBe(400);
    expect((await postJson(c, parts, { parts: [{ number: 3, size: 10, is_final: true }] })).status).toBe(400);
    expect((await postJson(c, parts, { parts: [{ number: 3, size: 10, is_final: true }], asset_filesize: 0 })).status).toBe(400);
    expect((await postJson(c, parts, { parts: [{ number: 0, size: 10, is_final: true }], asset_filesize: 10 })).status).toBe(400);
    expect((await postJson(c, parts, { parts: [{ number: 10001, size: 5 * MiB }] })).status).toBe(400);
    expect((await postJson(c, parts, { parts: [{ number: 4, size: 5 * MiB }, { number: 4, size: 5 * MiB }] })).status).toBe(400);
    // Not the highest number: part 2 was asked for already.
    expect((await postJson(c, parts, { parts: [{ number: 1, size: 10, is_final: true }], asset_filesize: 10 })).status).toBe(400);
    const fin = await postJson(c, parts, { parts: [{ number: 3, size: 10, is_final: true }], asset_filesize: 11 * MiB + 10 });
    expect(fin.status).toBe(200);
    expect((await put(fin.body.upload_urls[0], Buffer.alloc(10))).status).toBe(200);
    expect(c.asset(a.body.id)).toMatchObject({ realtime: true, filesize: 11 * MiB + 10, complete: false });
    // Nothing after the final part; parts 1 and 2 complete the asset, and a re-sent part replaces its bytes.
    expect((await postJson(c, parts, { parts: [{ number: 4, size: 5 * MiB }] })).status).toBe(400);
    expect((await put(r.body.upload_urls[1], Buffer.alloc(6 * MiB, 1))).status).toBe(200);
    expect((await put(r.body.upload_urls[0], Buffer.alloc(5 * MiB, 2))).status).toBe(200);
    expect(c.asset(a.body.id)).toMatchObject({ complete: true, bytesReceived: 11 * MiB + 10 });
    const again = await postJson(c, parts, { parts: [{ number: 1, size: 6 * MiB }], asset_name: 'renamed.mp4' });
    expect(again.status).toBe(200);
    expect((await put(again.body.upload_urls[0], Buffer.alloc(6 * MiB, 3))).status).toBe(200);
    const rt1 = c.asset(a.body.id)!.parts.find((p) => p.key === 'rt-1')!;
    expect(rt1.sha256).toBe(createHash('sha256').update(Buffer.alloc(6 * MiB, 3)).digest('hex'));
    expect(c.asset(a.body.id)).toMatchObject({ name: 'renamed.mp4', complete: true });
    // Not real-time, or another device's asset.
    const plain = await postJson(c, '/v2/devices/assets', { name: 'b', filetype: 'video/mp4', filesize: 1, offset: 0 });
    expect((await postJson(c, `/v2/devices/assets/${plain.body.id}/realtime_upload/parts`, { parts: [] })).status).toBe(400);
    expect((await postJson(c, parts, { parts: [{ number: 4, size: 10, is_final: true }], asset_filesize: 1 }, 1)).status).toBe(404);
  });

  it('applies status, delay and reset faults to storage URLs', async () => {
    const c = await start({ timeScale: 1000 });
    const a = await postJson(c, '/v2/devices/assets', { name: 'a.mp4', filetype: 'video/mp4', filesize: 10, offset: 0 });
    const url: string = a.body.upload_urls[0];
    // Scoped to the other device: this upload is not hit.
    c.control.addFault({ kind: 'status', status: 500, path: '/_storage/*', deviceId: c.devices[1]!.id });
    const f = c.control.addFault({ kind: 'status', status: 503, path: '/_storage/*', deviceId: c.devices[0]!.id, count: 1 });
    expect((await put(url, Buffer.alloc(10))).status).toBe(503);
    f.remove();
    c.control.addFault({ kind: 'reset', path: '/_storage/*', count: 1 });
    expect((await put(url, Buffer.alloc(10))).error).toBeDefined();
    c.control.addFault({ kind: 'delay', path: '/_storage/*', delayMs: 100_000, count: 1 });
    const t0 = performance.now();
    expect((await put(url, Buffer.alloc(10))).status).toBe(200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(90);
  });
});
