// The status document's `network` section: the link the default route takes
// and how the service answers over it, declared once (core/shape.ts).
import { count, nullable, obj, oneOf, str, type ShapeOf } from '../core/shape.js';

export const NETWORK_TYPES = ['ethernet', 'wifi', 'cellular', 'other'] as const;
export type NetworkType = (typeof NETWORK_TYPES)[number];

export const networkSection = obj({
  /** The interface carrying the default route, or null without one. */
  interface: nullable(str),
  type: nullable(oneOf(NETWORK_TYPES)),
  /** Real ms of the last round trip to the service; null before any. */
  serviceRttMs: nullable(count),
  /** Bytes a second sent to storage, over the last half minute. */
  uploadBytesPerSecond: count,
  /** Wall ISO time the service last answered (any status); null before it did. */
  lastContactAt: nullable(str),
});
export type NetworkSection = ShapeOf<typeof networkSection>;

declare module '../core/status-document.js' {
  interface StatusSections {
    network: NetworkSection;
  }
}
