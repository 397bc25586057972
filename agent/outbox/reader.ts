// The queue as the `c2c-agent queue` command sees it while the daemon may be
// writing: the same scan as open, but nothing is cut, moved or deleted. The
// newest segment may end in a record being written right now, which is
// simply not there yet; a corrupt older segment is skipped and counted (the
// daemon moves it aside at its next open).
import { checkDirectorySync } from '../lib/bounded-read.js';
import { fsError } from '../lib/fs-errors.js';
import { Ledger } from './ledger.js';
import { queueDirOf } from './location.js';
import { nodeOutboxFs } from './node-fs.js';
import { readSegments } from './replay.js';
import { segmentReadLimit } from './segments.js';
import { OUTBOX_DEFAULTS, type OutboxFs, type OutboxItem, type OutboxStats } from './types.js';

/** `capBytes`: the cap the queue was written under (Settings.queueMaxBytes), which bounds a segment's size. */
export async function readOutbox(dir: string, fs: OutboxFs = nodeOutboxFs(), capBytes: number = OUTBOX_DEFAULTS.capBytes): Promise<{ items: OutboxItem[]; stats: OutboxStats }> {
  const ledger = new Ledger();
  let corrupt = 0;
  for (const { no, scanned } of await readSegments(fs, dir, segmentReadLimit(OUTBOX_DEFAULTS.segmentBytes, capBytes))) {
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

/**
 * The queue of a state dir as the commands read it: the state dir and its
 * queue/ must be directories (or absent: nothing queued yet), and whatever
 * goes wrong is one line naming the path and the setting that gave it.
 */
export async function readQueueOf(stateDir: string, stateDirSource: string | undefined, capBytes: number): Promise<{ dir: string; items: OutboxItem[]; stats: OutboxStats }> {
  const dir = queueDirOf(stateDir);
  const source = `<state-dir>/queue, the state dir from ${stateDirSource ?? 'default'}`;
  // Absent is fine (nothing was ever queued: listing it finds no segment); not a directory is not.
  if (checkDirectorySync(stateDir, { what: 'state dir', source: stateDirSource })) checkDirectorySync(dir, { what: 'queue directory', source });
  try {
    return { dir, ...(await readOutbox(dir, nodeOutboxFs(), capBytes)) };
  } catch (err) {
    throw fsError(err, 'read the queue', dir, source);
  }
}
