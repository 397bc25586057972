// Keeping the queue small on flash, after each window: delete the segments
// nothing needs any more, and copy forward the pending items that keep old
// segments alive. Nothing is rewritten in place; an old segment only goes
// once every record in it is obsolete on the durable view.
import type { Logger } from '../lib/logger.js';
import type { Ledger } from './ledger.js';
import { copyRecord, type PutRecord } from './record.js';
import { codeOf, segmentPath } from './segments.js';
import type { OutboxFs } from './types.js';

/**
 * Deletes every segment nothing needs any more, one durable unlink at a
 * time: a later segment's delete must never reach the disk before an
 * earlier one's, or a put could outlive its end. Resolves false when the
 * disk refused (to be tried again after the next window).
 */
export async function reclaim(fs: OutboxFs, dir: string, ledger: Ledger, writing: number | undefined, logger: Logger, warned: boolean): Promise<boolean> {
  for (const no of ledger.deletable(writing)) {
    try {
      await fs.unlink(segmentPath(dir, no)).catch((err: unknown) => {
        if (codeOf(err) !== 'ENOENT') throw err;
      });
      await fs.fsyncDir(dir);
    } catch (err) {
      if (!warned) logger.warn({ err: String(err), code: codeOf(err) }, 'outbox: cannot delete a finished segment; will retry');
      return false;
    }
    ledger.forget(no);
  }
  return true;
}

/**
 * What to write again at the head once more than `compactAt` bytes on disk
 * are no pending item's: the pending items of the oldest segments, oldest
 * first, until what their segments free brings that under the mark. A long
 * pending item otherwise keeps its segment, and with it every later one
 * holding the end of an item put there.
 */
export function copyForwardPlan(ledger: Ledger, writing: number | undefined, compactAt: number): PutRecord[] {
  const sealed = [...ledger.segments.values()].filter((s) => s.no !== writing).sort((a, b) => a.no - b.no);
  const out: PutRecord[] = [];
  const planned = new Set<string>();
  let garbage = ledger.assignedBytes() - ledger.liveBytes;
  for (const seg of sealed) {
    if (garbage <= compactAt) break;
    let copied = 0;
    // A segment nothing pending needs is held only by an older one copied out before it: it goes with that one.
    for (const e of ledger.neededIn(seg.no)) {
      if (planned.has(e.item.id)) continue;
      planned.add(e.item.id);
      out.push(copyRecord(e.item, e.item.progress));
      copied += e.item.bytes;
    }
    garbage -= seg.size - copied;
  }
  return out;
}
