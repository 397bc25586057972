// The queue as the `c2c-agent queue` command sees it while the daemon may be
// writing: the same scan as open, but nothing is cut, moved or deleted. The
// newest segment may end in a record being written right now, which is
// simply not there yet; a corrupt older segment is skipped and counted (the
// daemon moves it aside at its next open).
import { Ledger } from './ledger.js';
import { nodeOutboxFs } from './node-fs.js';
import { readSegments } from './replay.js';
import type { OutboxFs, OutboxItem, OutboxStats } from './types.js';

export async function readOutbox(dir: string, fs: OutboxFs = nodeOutboxFs()): Promise<{ items: OutboxItem[]; stats: OutboxStats }> {
  const ledger = new Ledger();
  let corrupt = 0;
  for (const { no, scanned } of await readSegments(fs, dir)) {
    if (scanned === undefined) continue;
    if (scanned.status === 'corrupt') {
      corrupt++;
      continue;
    }
    ledger.addSegment(no, scanned.good);
    for (const { rec, size } of scanned.records) ledger.replay(rec, size, no);
  }
  ledger.sortBySeq();
  const stats = ledger.stats(0);
  stats.quarantined += corrupt;
  return { items: [...ledger.entries.values()].map((e) => ({ ...e.item })), stats };
}
