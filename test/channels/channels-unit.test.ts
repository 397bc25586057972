// The channel figures the daemon publishes: a sync counts as pending until
// its end is on flash, so status never shows fewer pending syncs than
// `channels` or `queue` read from the disk a moment later.
import { describe, expect, it } from '@jest/globals';
import { ChannelsUnit } from '../../agent/channels/channels-unit.js';
import { CHANNEL_SYNC_KIND } from '../../agent/channels/sync-worker.js';
import type { ChannelSpec } from '../../agent/config/types.js';
import { Harness } from '../outbox/harness.js';
import { EventBus } from '../../agent/core/event-bus.js';

const audio: ChannelSpec = { key: 'audio', name: 'Audio', assetType: 'audio', deviceModelId: 'model-audio', detect: { anyPath: ['dev/snd/pcmC0D0c'] } };

describe('ChannelsUnit.report', () => {
  it('counts a finished sync as pending until its end record is on flash', async () => {
    const h = new Harness();
    const ob = await h.open();
    const unit = new ChannelsUnit({
      specs: [audio],
      detector: { start: () => undefined, stop: () => undefined },
      map: { load: async () => ({}) },
      outbox: { ready: async () => true, put: (k, p, o) => ob.put(k, p, o), pending: (k) => ob.pending(k), unsettled: (k) => ob.unsettled(k) },
      inFlight: () => [],
      bus: new EventBus(),
    });
    const pending = (): unknown => (unit.report() as { channels: { pendingSyncs: number } }).channels.pendingSyncs;
    const put = ob.put(CHANNEL_SYNC_KIND, { why: 'test', detected: ['audio'] });
    await h.window();
    const sync = await put;
    expect(pending()).toBe(1);
    const done = ob.done(sync.id);
    // Done in memory, not yet on flash: a reader of the disk still sees it pending, and so does status.
    expect(ob.pending(CHANNEL_SYNC_KIND)).toEqual([]);
    expect(pending()).toBe(1);
    await h.window();
    await done;
    expect(pending()).toBe(0);
  });
});

describe('ChannelsUnit.deviceSeen', () => {
  it('reads the channel record a loop turn after the device record came, not in the same turn: the first heartbeat goes first', async () => {
    let loads = 0;
    const unit = new ChannelsUnit({
      specs: [audio],
      detector: { start: () => undefined, stop: () => undefined },
      map: {
        load: async () => {
          loads++;
          return {};
        },
      },
      outbox: { ready: async () => false, put: async () => Promise.reject(new Error('not here')), pending: () => [], unsettled: () => 0 },
      inFlight: () => [],
      bus: new EventBus(),
    });
    unit.deviceSeen({ id: 'd', channels: [] } as never);
    // What the controller set going in the same moment (the heartbeat's record and request) runs in
    // microtasks: none of them reaches the record.
    for (let i = 0; i < 20; i++) await Promise.resolve();
    expect(loads).toBe(0);
    await new Promise((resolve) => setImmediate(resolve));
    await unit.stop();
    expect(loads).toBe(1);
  });
});
