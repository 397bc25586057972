// Channels: the sources (sensors, microphones, feeds) behind one device.
import { randomUUID } from 'node:crypto';
import { json, legacyError, noContent, parseJsonObject } from './http.js';
import type { Router } from './router.js';
import type { CloudState } from './state.js';

function assetTypeOf(modelId: string): 'video' | 'audio' | 'data' {
  const m = modelId.toLowerCase();
  if (m.includes('audio') || m.includes('mic')) return 'audio';
  if (m.includes('data') || m.includes('log')) return 'data';
  return 'video';
}

export function channelRoutes(router: Router, state: CloudState): void {
  router
    .add({
      method: 'POST',
      pattern: '/v2/devices/channels',
      auth: 'bearer',
      handler: (ctx) => {
        const device = state.devices.get(ctx.deviceId!)!;
        const body = parseJsonObject(ctx.body);
        if (!body || typeof body.client_id !== 'string' || typeof body.device_model_id !== 'string' || body.device_model_id === '') {
          return legacyError(422, undefined, 'client_id and device_model_id (strings) are required');
        }
        if (body.external_index !== undefined && typeof body.external_index !== 'number') {
          return legacyError(422, undefined, 'external_index must be a number');
        }
        // client_id names the physical unit; another unit's id is a conflict.
        if (body.client_id !== device.clientId) return legacyError(409, undefined, 'client_id belongs to another device');
        const externalIndex = (body.external_index as number | undefined) ?? 0;
        const modelId = body.device_model_id;
        if (device.channels.some((c) => c.deviceModelId === modelId && c.externalIndex === externalIndex)) {
          return legacyError(409, undefined, 'This channel is already connected');
        }
        const sameModel = device.channels.filter((c) => c.deviceModelId === modelId).length;
        const channel = {
          id: randomUUID(),
          deviceModelId: modelId,
          externalIndex,
          assetType: assetTypeOf(modelId),
          name: `${modelId} ${sameModel + 1}`,
          insertedAt: ctx.t,
        };
        device.channels.push(channel);
        device.updatedAt = ctx.t;
        return json(200, state.channelJson(device, channel));
      },
    })
    .add({
      method: 'POST',
      pattern: '/v2/devices/channels/disconnect',
      auth: 'bearer',
      handler: (ctx) => {
        const device = state.devices.get(ctx.deviceId!)!;
        device.channels = [];
        device.updatedAt = ctx.t;
        return noContent();
      },
    })
    .add({
      method: 'POST',
      pattern: '/v2/devices/channels/{id}/disconnect',
      auth: 'bearer',
      handler: (ctx) => {
        const device = state.devices.get(ctx.deviceId!)!;
        const before = device.channels.length;
        device.channels = device.channels.filter((c) => c.id !== ctx.params[0]);
        if (device.channels.length === before) return legacyError(404);
        device.updatedAt = ctx.t;
        return noContent();
      },
    });
}
