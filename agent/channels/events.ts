// What the channels feature publishes on the bus and on GET /v1/events
// (merged into core's AgentEvents and EventLines).
import type { ChannelsSection } from './section.js';

declare module '../core/event-bus.js' {
  interface AgentEvents {
    /** The set of profile channels plugged in now (by key). */
    channelsDetected: { keys: ReadonlySet<string> };
    /** Channel sync asked for (a device record that disagrees, a record rewritten, a press on a channel not known yet). */
    channelSyncRequested: { why: string };
    /** A channel sync went through; `map` is the channel-id record now on flash. */
    channelsSynced: { map: Record<string, string> };
  }
}

declare module '../core/event-lines.js' {
  interface EventLines {
    /** The channels section after a change. */
    channels: ChannelsSection;
  }
}
