// The status document's `queue` section: the outbox's stats (types.ts's
// OutboxStats) and the dispatcher's view (dispatcher.ts's DispatcherView)
// side by side, declared once here as the reader checks it (core/shape.ts);
// tsc holds the two to it below. Named `queue` in the document, as the
// contract's GET /v1/status names it; an agent before that wrote it as
// `outbox`, which the reader still takes (feature.ts's alias).
import { count, listOf, mapOf, nullable, num, obj, optional, str, type ShapeOf } from '../core/shape.js';
import { moment } from '../core/status-document.js';
import type { DispatcherView } from './dispatcher.js';
import type { OutboxStats } from './types.js';

const itemCount = obj({ items: count, bytes: count });
export type ItemCount = ShapeOf<typeof itemCount>;

/** A kind's attempts failing in a row: since the first (agent and wall time), how many, the last error. */
const kindFailing = obj({ since: moment, attempts: count, lastError: str });

export const queueSection = obj({
  byKind: mapOf(mapOf(itemCount)),
  oldestPending: nullable(str),
  dropped: mapOf(count),
  quarantined: count,
  diskBytes: count,
  unwritten: count,
  liveBytes: count,
  inFlight: listOf(str),
  attempts: mapOf(obj({ count, lastError: str })),
  waitingUntil: optional(num),
  failing: optional(mapOf(kindFailing)),
});
export type QueueSection = ShapeOf<typeof queueSection>;

// What the outbox unit reports must fit what the reader takes (no field of either restated here).
type Fits<T extends QueueSection> = T;
export type QueueReport = Fits<OutboxStats & Omit<DispatcherView, 'waitingUntil'> & { waitingUntil?: number }>;

declare module '../core/status-document.js' {
  interface StatusSections {
    queue: QueueSection;
  }
}
