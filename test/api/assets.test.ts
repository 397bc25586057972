// Asset creation against the fake cloud: one presigned URL per part, a
// paused device and a refused body as typed errors, x-client-version on
// every call, the signed URLs registered for scrubbing. Answers the fake
// never gives (a bad URL, an empty list) come from a stub server.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFakeCloud, type FakeCloud } from '../fake-cloud/index.js';
import { createServiceApi, type ServiceApi } from '../../agent/api/service.js';
import { assetEndpoints, type AssetEndpoints } from '../../agent/api/assets.js';
import { SystemClock } from '../../agent/lib/clock.js';
import { REDACTED, scrub } from '../../agent/lib/secrets.js';
import { failure } from './failure.js';

const VERSION = '2.3.4';
const PART = 1000;
let cloud: FakeCloud;
let api: ServiceApi;
let assets: AssetEndpoints;

const apiFor = (baseUrl: string, token: string): ServiceApi =>
  createServiceApi({ baseUrl, token, firmwareVersion: VERSION, agentVersion: '0.0.1', clock: new SystemClock() });

beforeAll(async () => {
  cloud = await startFakeCloud({ devices: 2, uploadPartBytes: PART });
  api = apiFor(cloud.url, cloud.devices[0]!.accessToken);
  assets = assetEndpoints(api.transport);
});
afterAll(async () => {
  api.close();
  await cloud.close();
});

const clip = (filesize: number) => ({ name: 'A001C002.mp4', filetype: 'video/mp4', filesize, offset: 0 });

describe('assetEndpoints against the fake cloud', () => {
  test.each([
    [2500, 3],
    [1000, 1],
    [1001, 2],
    [1, 1],
    [0, 1],
  ])('a file of %i bytes gets %i upload URL(s), one per part', async (size, parts) => {
    const { value, meta } = await assets.create({ ...clip(size), channel: 'video', extension: '.mp4' });
    expect(meta.status).toBe(200);
    expect(value.id).toEqual(expect.any(String));
    expect(value.uploadUrls).toHaveLength(Math.max(1, Math.ceil(size / PART)));
    expect(value.uploadUrls).toHaveLength(parts);
    expect(new Set(value.uploadUrls).size).toBe(parts);
    for (const u of value.uploadUrls) expect(new URL(u).protocol).toBe('http:');
    expect(cloud.asset(value.id)).toMatchObject({ filesize: size, filetype: 'video/mp4', parts: expect.any(Array) });
    expect(cloud.asset(value.id)!.parts).toHaveLength(parts);
  });

  test('the signed URLs are registered secrets: scrub() cuts them from any text', async () => {
    const { value } = await assets.create(clip(2 * PART));
    for (const u of value.uploadUrls) {
      const signature = new URL(u).searchParams.get('X-Amz-Signature')!;
      const text = scrub(`PUT ${u} failed`);
      expect(text).toBe(`PUT ${REDACTED} failed`);
      expect(text).not.toContain(signature);
    }
  });

  test('a paused device is kind paused (409 Channel Paused)', async () => {
    const d = cloud.devices[1]!;
    const theirs = apiFor(cloud.url, d.accessToken);
    cloud.control.pause(d.id);
    try {
      const err = await failure(assetEndpoints(theirs.transport).create(clip(10)));
      expect(err.kind).toBe('paused');
      expect(err.status).toBe(409);
    } finally {
      cloud.control.unpause(d.id);
      theirs.close();
    }
  });

  test.each([
    ['a filetype that is no MIME type', { ...clip(10), filetype: 'mp4 video' }],
    ['a negative offset', { ...clip(10), offset: -1 }],
    ['a fractional size', { ...clip(10.5) }],
  ])('%s is refused with 422: kind protocol', async (_, req) => {
    const err = await failure(assets.create(req));
    expect(err.kind).toBe('protocol');
    expect(err.status).toBe(422);
  });

  test('every call carries x-client-version and the device token', async () => {
    const before = cloud.journal.length;
    await assets.create(clip(5));
    await failure(assets.create({ ...clip(5), filetype: '' }));
    const entries = cloud.journal.slice(before);
    expect(entries.map((e) => `${e.method} ${e.path} ${e.status}`)).toEqual(['POST /v2/devices/assets 200', 'POST /v2/devices/assets 422']);
    for (const e of entries) expect(e).toMatchObject({ clientVersion: VERSION, deviceId: cloud.devices[0]!.id, authValid: true });
  });

  test('an answer of the wrong shape is a protocol error carrying the status', async () => {
    const fault = cloud.control.addFault({ kind: 'wrong-types', path: '/v2/devices/assets', method: 'POST', count: 1 });
    const err = await failure(assets.create(clip(5)));
    fault.remove();
    expect(err.kind).toBe('protocol');
    expect(err.status).toBe(200);
  });
});

describe('assetEndpoints: validation of the answer', () => {
  let server: http.Server;
  let answer: unknown;
  let lastBody: unknown;
  let stub: ServiceApi;
  let stubAssets: AssetEndpoints;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        lastBody = JSON.parse(body);
        const text = JSON.stringify(answer);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.end(text);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    stub = apiFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 'stub-token-for-assets');
    stubAssets = assetEndpoints(stub.transport);
  });
  afterAll(async () => {
    stub.close();
    await new Promise((r) => server.close(r));
  });

  test('sends only the fields given, and accepts https URLs', async () => {
    answer = { id: 'a-1', upload_urls: ['https://bucket.example/a-1/1?X-Amz-Signature=feedfacefeedface'] };
    const { value } = await stubAssets.create(clip(7));
    expect(lastBody).toEqual({ name: 'A001C002.mp4', filetype: 'video/mp4', filesize: 7, offset: 0 });
    expect(value).toEqual({ id: 'a-1', uploadUrls: ['https://bucket.example/a-1/1?X-Amz-Signature=feedfacefeedface'] });
    await stubAssets.create({ ...clip(7), offset: 12.5, channel: 'audio', extension: '.wav' });
    expect(lastBody).toEqual({ name: 'A001C002.mp4', filetype: 'video/mp4', filesize: 7, offset: 12.5, channel: 'audio', extension: '.wav' });
  });

  test.each([
    ['not an object', ['x'], 'answer is not a JSON object'],
    ['no id', { upload_urls: ['https://s.example/p?sig=1234567'] }, "field 'id'"],
    ['an empty id', { id: '', upload_urls: ['https://s.example/p?sig=1234567'] }, "field 'id'"],
    ['no URL list', { id: 'a' }, "field 'upload_urls' is not a non-empty array"],
    ['an empty URL list', { id: 'a', upload_urls: [] }, "field 'upload_urls' is not a non-empty array"],
    ['a relative URL', { id: 'a', upload_urls: ['https://s.example/1?sig=abcdefg', '/a/2?sig=abcdefgh'] }, "field 'upload_urls[1]'"],
    ['an ftp URL', { id: 'a', upload_urls: ['ftp://s.example/a/1?sig=abcdefg'] }, "field 'upload_urls[0]'"],
    ['a number', { id: 'a', upload_urls: [42] }, "field 'upload_urls[0]'"],
    ['more URLs than an upload has parts', { id: 'a', upload_urls: Array.from({ length: 10_001 }, (_, i) => `https://s.example/a/${i}?sig=abcdefg${i}`) }, "field 'upload_urls' has 10001 URLs, more than the 10000 parts"],
  ])('%s is a protocol error naming the field', async (_, body, text) => {
    answer = body;
    const err = await failure(stubAssets.create(clip(7)));
    expect(err.kind).toBe('protocol');
    expect(err.status).toBe(200);
    expect(err.message).toContain(text);
    expect(err.message).not.toContain('sig=');
  });

  test('real time: created with is_realtime_upload and no filesize; parts asked with their numbers, sizes and the final size', async () => {
    answer = { id: 'rt-1', upload_urls: [] };
    expect((await stubAssets.createRealtime({ name: 'take.mov', filetype: 'video/quicktime', offset: 0 })).value).toEqual({ id: 'rt-1' });
    expect(lastBody).toEqual({ name: 'take.mov', filetype: 'video/quicktime', offset: 0, is_realtime_upload: true });
    answer = { upload_urls: ['https://bucket.example/rt-1/3?X-Amz-Signature=0badc0de0badc0de', 'https://bucket.example/rt-1/1?X-Amz-Signature=0badf00d0badf00d'] };
    const { value } = await stubAssets.realtimeParts('rt-1', [{ number: 3, size: 10, final: true }, { number: 1, size: 8 * 1024 * 1024 }], 16_777_226);
    expect(lastBody).toEqual({ parts: [{ number: 3, size: 10, is_final: true }, { number: 1, size: 8 * 1024 * 1024, is_final: false }], asset_filesize: 16_777_226 });
    expect(value).toHaveLength(2);
    expect(scrub(`PUT ${value[1]} failed`)).not.toContain('0badf00d');
  });

  test('real time: an answer with another count of URLs than the parts asked is a protocol error, its URLs registered', async () => {
    answer = { upload_urls: ['https://bucket.example/rt-1/2?X-Amz-Signature=facadefacade1234'] };
    const err = await failure(stubAssets.realtimeParts('rt-1', [{ number: 2, size: 5 * 1024 * 1024 }, { number: 3, size: 5 * 1024 * 1024 }]));
    expect(err.kind).toBe('protocol');
    expect(err.message).toContain("field 'upload_urls' has 1 URLs for the 2 parts asked");
    expect(scrub('https://bucket.example/rt-1/2?X-Amz-Signature=facadefacade1234')).toBe(REDACTED);
  });

  test('the URLs of a refused answer are registered too', async () => {
    answer = { id: 7, upload_urls: ['https://s.example/a/1?X-Amz-Signature=0123456789abcdef'] };
    await failure(stubAssets.create(clip(7)));
    expect(scrub('https://s.example/a/1?X-Amz-Signature=0123456789abcdef')).toBe(REDACTED);
  });
});
