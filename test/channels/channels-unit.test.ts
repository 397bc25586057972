// The channel figures the daemon publishes: a sync counts as pending until
// its end is on flash, so status never shows fewer pending syncs than
// `channels` or `queue` read from the disk a moment later.
import { describe, expect, it } from '@jest/globals';
import { ChannelsUnit, RECONCILE_DELAY_MS } from '../../agent/channels/channels-unit.js';
import { CHANNEL_SYNC_KIND } from '../../agent/channels/sync-worker.js';
import type { ChannelSpec } from '../../agent/config/types.js';
import { Harness } from '../outbox/harness.js';
import { EventBus } from '../../agent/core/event-bus.js';
import { FakeClock } from '../support/fake-clock.js';

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
      clock: new FakeClock(),
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
  const unitCounting = (clock: FakeClock, loads: { n: number }): ChannelsUnit =>
    new ChannelsUnit({
      specs: [audio],
      detector: { start: () => undefined, stop: () => undefined },
      map: {
        load: async () => {
          loads.n++;
          return {};
        },
      },
      outbox: { ready: async () => false, put: async () => Promise.reject(new Error('not here')), pending: () => [], unsettled: () => 0 },
      inFlight: () => [],
      bus: new EventBus(),
      clock,
    });

  it('reads the channel record a moment after the device record came, not before the first heartbeat\'s request', async () => {
    const clock = new FakeClock();
    const loads = { n: 0 };
    const unit = unitCounting(clock, loads);
    unit.deviceSeen({ id: 'd', channels: [] } as never);
    // What the controller set going in the same moment (the heartbeat's attempt record, written
    // through the thread pool, then its request) takes loop turns: none of them reaches the record.
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(loads.n).toBe(0);
    await clock.advance(RECONCILE_DELAY_MS - 1);
    expect(loads.n).toBe(0);
    await clock.advance(1);
    await unit.stop();
    expect(loads.n).toBe(1);
  });

  it('a stop during the wait ends it at once, without reading the record (the next start reconciles)', async () => {
    const clock = new FakeClock();
    const loads = { n: 0 };
    const unit = unitCounting(clock, loads);
    unit.deviceSeen({ id: 'd', channels: [] } as never);
    await unit.stop();
    expect(loads.n).toBe(0);
    expect(clock.nextAt()).toBeUndefined();
  });
});

describe('ChannelsUnit.deviceSeen: a sync during the wait', () => {
  const rig = (clock: FakeClock, puts: unknown[]): ChannelsUnit =>
    new ChannelsUnit({
      specs: [audio],
      detector: { start: () => undefined, stop: () => undefined },
      map: { load: async () => ({}) },
      outbox: {
        ready: async () => true,
        put: async (_kind, payload) => {
          puts.push(payload);
          return {} as never;
        },
        pending: () => [],
        unsettled: () => 0,
      },
      inFlight: () => [],
      bus: new EventBus(),
      clock,
    });

  it('makes the device record it waited with out of date: nothing more is queued (without it, the same record queues one)', async () => {
    for (const syncInBetween of [true, false]) {
      const clock = new FakeClock();
      const puts: unknown[] = [];
      const unit = rig(clock, puts);
      unit.changed(new Set(['audio']));
      unit.deviceSeen({ id: 'd', channels: [] } as never);
      if (syncInBetween) unit.synced({ audio: 'ch-1' });
      await clock.advance(RECONCILE_DELAY_MS);
      await unit.stop();
      expect({ syncInBetween, queued: puts.length }).toEqual({ syncInBetween, queued: syncInBetween ? 0 : 1 });
    }
  });
});
