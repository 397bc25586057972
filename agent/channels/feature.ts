// Channels as a feature (core/feature.ts): which profile channels are
// plugged in (detect.ts, a watcher that runs at idle), the `channels`
// section, and the `channel-sync` items that reconcile them with the
// service, whose worker (sync-worker.ts) loads with the first item.
import type { Feature } from '../core/feature.js';
import type { ChannelMapStore } from './channel-map.js';
import { CHANNEL_SYNC_KIND } from './kinds.js';
import { channelsSection } from './section.js';
import './events.js';

/** What the channels feature shares: the channel-id record and the keys plugged in now. */
export interface ChannelsService {
  map: ChannelMapStore;
  detected(): Set<string>;
  /** The service's channel id for a profile channel key, from the record; undefined when not known (or unreadable). */
  channelId(key: string): Promise<string | undefined>;
}

declare module '../core/feature.js' {
  interface FeatureServices {
    channels: ChannelsService;
  }
}

export const channels: Feature = {
  name: 'channels',
  section: { name: 'channels', check: channelsSection },
  outbox: { kinds: [CHANNEL_SYNC_KIND], load: async (ctx) => [(await import('./channels-build.js')).syncWorker(ctx)] },
  build: async (ctx) => (await import('./channels-build.js')).buildChannels(ctx),
};
