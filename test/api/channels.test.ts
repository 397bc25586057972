// The channel endpoints against the fake cloud: connect shows up in the
// device's listing with its external_index, a second connect of the same
// model and index is a 'conflict', a second disconnect a 'not-found', and
// every call carries x-client-version.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startFakeCloud, type FakeCloud } from '../fake-cloud/index.js';
import { createServiceApi, type ServiceApi } from '../../agent/api/service.js';
import { channelEndpoints, externalIndexOf, type ChannelEndpoints } from '../../agent/api/channels.js';
import { validateChannel } from '../../agent/api/validate.js';
import { SystemClock } from '../../agent/lib/clock.js';
import { AgentError } from '../../agent/lib/errors.js';
import { failure } from './failure.js';

const VERSION = '1.6.0';
let cloud: FakeCloud;
let api: ServiceApi;
let channels: ChannelEndpoints;

beforeAll(async () => {
  cloud = await startFakeCloud({ devices: 2 });
  api = createServiceApi({ baseUrl: cloud.url, token: cloud.devices[0]!.accessToken, firmwareVersion: VERSION, agentVersion: '0.0.1', clock: new SystemClock() });
  channels = channelEndpoints(api.transport);
});
afterAll(async () => {
  api.close();
  await cloud.close();
});

async function journaled(fn: () => Promise<unknown>): Promise<typeof cloud.journal> {
  const before = cloud.journal.length;
  await fn().catch(() => undefined);
  return cloud.journal.slice(before);
}

describe('channel endpoints', () => {
  test('connect, listing, conflict, disconnect, not-found, each with x-client-version', async () => {
    const d = cloud.devices[0]!;
    const entries = await journaled(async () => {
      const { value, meta } = await channels.connect(d.clientId, 'c2c-multi-audio', 1);
      expect(meta.status).toBe(200);
      expect(value.id).toEqual(expect.any(String));
      expect(externalIndexOf(value)).toBe(1);

      const listed = (await api.getDevice()).value.channels ?? [];
      expect(listed.map((c) => [c.id, c.external_index])).toEqual([[value.id, 1]]);

      const again = await failure(channels.connect(d.clientId, 'c2c-multi-audio', 1));
      expect(again.kind).toBe('conflict');
      expect(again.status).toBe(409);
      // Same model at another index is another channel.
      const other = await channels.connect(d.clientId, 'c2c-multi-audio', 2);
      expect(other.value.id).not.toBe(value.id);

      const gone = await channels.disconnect(value.id);
      expect(gone.meta.status).toBe(204);
      expect(gone.value).toBeUndefined();
      const twice = await failure(channels.disconnect(value.id));
      expect(twice.kind).toBe('not-found');
      expect((await api.getDevice()).value.channels?.map((c) => c.id)).toEqual([other.value.id]);
      await channels.disconnect(other.value.id);
    });
    expect(entries.map((e) => `${e.method} ${e.path.replace(/[0-9a-f-]{36}/, 'ID')} ${e.status}`)).toEqual([
      'POST /v2/devices/channels 200',
      'GET /v2/devices/me 200',
      'POST /v2/devices/channels 409',
      'POST /v2/devices/channels 200',
      'POST /v2/devices/channels/ID/disconnect 204',
      'POST /v2/devices/channels/ID/disconnect 404',
      'GET /v2/devices/me 200',
      'POST /v2/devices/channels/ID/disconnect 204',
    ]);
    for (const e of entries) expect(e).toMatchObject({ clientVersion: VERSION, deviceId: d.id, authValid: true });
  });

  test("another device's channel is not-found, and an odd id stays inside the path", async () => {
    const other = cloud.devices[1]!;
    const theirs = createServiceApi({ baseUrl: cloud.url, token: other.accessToken, firmwareVersion: VERSION, agentVersion: '0.0.1', clock: new SystemClock() });
    try {
      const ch = await channelEndpoints(theirs.transport).connect(other.clientId, 'c2c-generic-camera', 0);
      expect((await failure(channels.disconnect(ch.value.id))).kind).toBe('not-found');
      const entries = await journaled(() => channels.disconnect('../../me'));
      expect(entries.map((e) => e.path)).toEqual(['/v2/devices/channels/..%2F..%2Fme/disconnect']);
      await channelEndpoints(theirs.transport).disconnect(ch.value.id);
    } finally {
      theirs.close();
    }
  });

  test('a bad answer is a protocol error naming the field', async () => {
    const fault = cloud.control.addFault({ kind: 'wrong-types', path: '/v2/devices/channels', method: 'POST', count: 1 });
    const err = await failure(channels.connect(cloud.devices[0]!.clientId, 'c2c-cam-4k-proxy', 1));
    fault.remove();
    expect(err.kind).toBe('protocol');
    expect(err.status).toBe(200);
    // The fake did connect: clean up through the listing.
    for (const c of (await api.getDevice()).value.channels ?? []) await channels.disconnect(c.id);
  });
});

describe('validateChannel', () => {
  const ok = (v: unknown): unknown => validateChannel(v, 'POST /v2/devices/channels');
  const bad = (v: unknown): AgentError => {
    try {
      ok(v);
    } catch (err) {
      return err as AgentError;
    }
    throw new Error('expected a protocol error');
  };

  test('keeps unknown fields and drops null optional ones', () => {
    expect(ok({ id: 'c1', name: null, external_index: 3, device_model_id: 'm', extra: { a: 1 } })).toEqual({ id: 'c1', external_index: 3, device_model_id: 'm', extra: { a: 1 } });
    expect(ok({ id: 'c1', external_index: null })).toEqual({ id: 'c1' });
  });

  test.each([
    [[], "field '(body)' is an array"],
    [{}, "field 'id' is missing"],
    [{ id: '' }, "field 'id' is a string, expected a non-empty string"],
    [{ id: 7 }, "field 'id' is a number"],
    [{ id: 'c', external_index: '1' }, "field 'external_index' is a string, expected a number"],
    [{ id: 'c', status: 1 }, "field 'status' is a number, expected a string"],
  ])('%j is refused: %s', (value, text) => {
    const err = bad(value);
    expect(err.kind).toBe('protocol');
    expect(err.message).toContain(text);
  });

  test('a prefix names the place in a larger record', () => {
    expect(() => validateChannel({ id: 'c', external_index: 'x' }, 'GET /v2/devices/me', 'channels[2].')).toThrow("field 'channels[2].external_index' is a string");
    expect(() => validateChannel(7, 'GET /v2/devices/me', 'channels[0].')).toThrow("field 'channels[0]' is a number, expected an object");
  });

  test('externalIndexOf reads only whole, non-negative numbers', () => {
    expect(externalIndexOf({ id: 'a', external_index: 0 })).toBe(0);
    for (const v of [-1, 1.5, '1', undefined, Number.NaN]) expect(externalIndexOf({ id: 'a', external_index: v })).toBeUndefined();
  });
});
