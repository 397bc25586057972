// Which pending items the cap drops to make room: the lowest priority
// first, then the oldest, and only items a newcomer outranks or equals (an
// equal one is older, so it goes first). When even all of those would not
// make room, the newcomer is the lowest and is the one dropped.
//
// Every record that makes a pending item cost more comes through here
// first, not only a new put: a progress record (or a fold that grows) makes
// room at its item's priority, the item itself kept (when none can be made,
// the item is dropped); `size` is always a charge (ledger.ts chargeOf). A
// change of urgency costs nothing more, since the flag is charged from the
// put on.
import type { Entry } from './ledger.js';

/** The items to drop so `size` more bytes fit under `cap`, or undefined when the newcomer itself must go. */
export function victimsFor(pending: Entry[], liveBytes: number, cap: number, size: number, priority: number, keep: ReadonlySet<string>): Entry[] | undefined {
  if (size > cap) return undefined;
  if (liveBytes + size <= cap) return [];
  const candidates = pending
    .filter((e) => e.item.priority <= priority && !keep.has(e.item.id))
    .sort((a, b) => a.item.priority - b.item.priority || a.seq - b.seq);
  const out: Entry[] = [];
  let live = liveBytes;
  for (const e of candidates) {
    if (live + size <= cap) break;
    out.push(e);
    live -= e.item.bytes;
  }
  return live + size <= cap ? out : undefined;
}
