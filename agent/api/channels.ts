// The channel endpoints: connect one source (a sensor, a microphone, a data
// feed) of this unit, and disconnect one. Listing is not here: the current
// channels come with GET /v2/devices/me (device.ts). A 409 on connect and a
// 404 on disconnect arrive as typed errors ('conflict', 'not-found'); only
// the caller knows whether they mean "already so".
import type { Transport } from './transport.js';
import type { ApiResult, DeviceChannel } from './types.js';
import { validateChannel } from './validate.js';

export interface ChannelEndpoints {
  /**
   * POST /v2/devices/channels. `externalIndex` is the channel's place in the
   * profile's list: it lets a channel connected just before a crash be
   * recognised in the listing, which does not carry the device model.
   */
  connect(clientId: string, deviceModelId: string, externalIndex: number, signal?: AbortSignal): Promise<ApiResult<DeviceChannel>>;
  /** POST /v2/devices/channels/{id}/disconnect; any 2xx (204 documented) resolves. */
  disconnect(channelId: string, signal?: AbortSignal): Promise<ApiResult<void>>;
}

/** The channel's external_index when the service sent a usable one (the listing is validated elsewhere, more loosely). */
export function externalIndexOf(ch: DeviceChannel): number | undefined {
  const v = ch.external_index;
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;
}

export function channelEndpoints(t: Transport): ChannelEndpoints {
  return {
    async connect(clientId, deviceModelId, externalIndex, signal) {
      const res = await t.request({
        method: 'POST',
        path: '/v2/devices/channels',
        json: { client_id: clientId, device_model_id: deviceModelId, external_index: externalIndex },
        ...(signal ? { signal } : {}),
      });
      if (res.status < 200 || res.status > 299) throw t.errorFor(res);
      return { value: t.validated(res, () => validateChannel(t.readJson(res), res.what)), meta: res.meta };
    },
    async disconnect(channelId, signal) {
      // The id comes from the service; encoded so an odd one cannot reach another path.
      const path = `/v2/devices/channels/${encodeURIComponent(channelId)}/disconnect`;
      const res = await t.request({ method: 'POST', path, ...(signal ? { signal } : {}) });
      if (res.status < 200 || res.status > 299) throw t.errorFor(res);
      return { value: undefined, meta: res.meta };
    },
  };
}
