// The status document's `channels` section, declared once: its type and its
// reader's check (core/shape.ts).
import { count, listOf, nullable, obj, str, type ShapeOf } from '../core/shape.js';

/** Profile channel keys plugged in, those the service holds (null before a sync), and the syncs waiting. */
export const channelsSection = obj({
  detected: listOf(str),
  /** Keys the service holds a channel for, as of the last sync; null before one. */
  known: nullable(listOf(str)),
  pendingSyncs: count,
});
export type ChannelsSection = ShapeOf<typeof channelsSection>;

declare module '../core/status-document.js' {
  interface StatusSections {
    channels: ChannelsSection;
  }
}
