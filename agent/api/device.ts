// The device endpoints: who am I (GET /v2/devices/me), I am alive
// (POST /v2/devices/heartbeat), and is the service up at all (GET /health).
import type { Transport } from './transport.js';
import type { ApiResult, Device, DeviceApi } from './types.js';
import { validateDevice, validateHealth } from './validate.js';

export interface DeviceEndpoints extends DeviceApi {
  /** GET /health (no token), optionally with a shorter time limit in agent ms. */
  health(signal?: AbortSignal, timeoutMs?: number): Promise<ApiResult<{ status: string }>>;
}

export function deviceEndpoints(t: Transport): DeviceEndpoints {
  return {
    async getDevice(signal) {
      const { value, res } = await t.getJson('/v2/devices/me', { signal });
      return { value: t.validated(res, (): Device => validateDevice(value, res.what)), meta: res.meta };
    },
    async heartbeat(signal) {
      const res = await t.request({ method: 'POST', path: '/v2/devices/heartbeat', ...(signal ? { signal } : {}) });
      // 204 is documented; any 2xx means the service heard us.
      if (res.status < 200 || res.status > 299) throw t.errorFor(res);
      return { value: undefined, meta: res.meta };
    },
    async health(signal, timeoutMs) {
      const { value, res } = await t.getJson('/health', { auth: false, signal, timeoutMs });
      return { value: t.validated(res, () => validateHealth(value, res.what)), meta: res.meta };
    },
  };
}
