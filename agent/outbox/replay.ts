// Reading the queue back at open. Only the newest segment can end in a torn
// record (segments are started only after the previous one is fsynced), so
// a torn tail there is cut off; a bad record anywhere else is rot, and the
// segment is moved aside whole so one bad block never stops the agent. The
// read-only view (reader.ts) uses the same scan and changes nothing.
import path from 'node:path';
import { fsError } from '../lib/fs-errors.js';
import type { Logger } from '../lib/logger.js';
import { Ledger } from './ledger.js';
import { listSegments, QUARANTINE_DIR, scanSegment, segmentName, segmentPath, codeOf, type Scanned } from './segments.js';
import type { OutboxFs } from './types.js';

export interface Recovered {
  ledger: Ledger;
  /** The highest segment number seen (quarantined ones included): new segments number after it. */
  maxSeg: number;
  quarantinedNow: number;
  /** Torn tails the disk would not let us cut: cut before anything new is written. */
  uncut: Array<{ no: number; length: number }>;
}

/**
 * Every segment read and scanned, in order; `scanned` is undefined for one
 * that vanished meanwhile. A directory that cannot be listed is one line
 * naming it (lib/fs-errors.ts); `maxBytes` bounds each segment's read
 * (segmentReadLimit).
 */
export async function readSegments(fs: OutboxFs, dir: string, maxBytes: number): Promise<Array<{ no: number; scanned: Scanned | undefined }>> {
  let nos: number[];
  try {
    nos = await listSegments(fs, dir);
  } catch (err) {
    throw fsError(err, 'list the queue directory', dir);
  }
  const out: Array<{ no: number; scanned: Scanned | undefined }> = [];
  for (const no of nos) {
    let bytes: Uint8Array;
    try {
      bytes = await fs.readFile(segmentPath(dir, no), maxBytes);
    } catch (err) {
      // A file that cannot be read (a bad block: EIO), or is no segment at all (a FIFO, a device,
      // a file past the bound), is as corrupt as one that reads wrong: moved aside, never waited on.
      out.push({ no, scanned: codeOf(err) === 'ENOENT' ? undefined : { records: [], good: 0, status: 'corrupt' } });
      continue;
    }
    out.push({ no, scanned: scanSegment(bytes, no === nos.at(-1)) });
  }
  return out;
}

/**
 * Replays the queue into a ledger, cutting torn tails and moving corrupt
 * segments aside. A disk that refuses those changes (read-only, full) does
 * not stop the open: the cut waits for the first write, the move for the
 * next open.
 */
export async function recover(fs: OutboxFs, dir: string, logger: Logger, maxBytes: number): Promise<Recovered> {
  const refused = (what: string) => (err: unknown) => logger.warn({ err: err instanceof Error ? err.message : String(err), code: codeOf(err) }, `outbox: cannot ${what} at open; going on`);
  await fs.mkdir(dir).catch(refused('create the queue directory'));
  const segs = await readSegments(fs, dir, maxBytes);
  const ledger = new Ledger();
  const corrupt: Array<{ no: number; scanned: Scanned; to: string }> = [];
  const uncut: Recovered['uncut'] = [];
  const elsewhere = new Set<string>();
  for (const { no, scanned } of segs) {
    if (scanned === undefined) continue;
    const file = segmentPath(dir, no);
    if (scanned.status === 'corrupt') {
      const to = await quarantine(fs, dir, no).catch(refused(`move ${segmentName(no)} aside`));
      if (typeof to === 'string') corrupt.push({ no, scanned, to });
      continue;
    }
    if (scanned.status === 'torn') {
      logger.warn({ segment: segmentName(no), at: scanned.good }, 'outbox: cutting a torn record off the end of the queue (a write a power cut interrupted)');
      await fs.truncate(file, scanned.good).catch((err: unknown) => {
        refused(`cut ${segmentName(no)}`)(err);
        uncut.push({ no, length: scanned.good });
      });
    }
    // A process killed before its fsync leaves records only in the page cache: make them durable before acting on them.
    await fs.fsync(file).catch(refused(`fsync ${segmentName(no)}`));
    ledger.addSegment(no, scanned.good);
    for (const { rec, size } of scanned.records) {
      ledger.replay(rec, size, no);
      if (rec.t !== 'counters') elsewhere.add(rec.id);
    }
  }
  await fs.fsyncDir(dir).catch(refused('fsync the queue directory'));
  ledger.quarantined += corrupt.length;
  for (const c of corrupt) {
    const lost = new Set<string>();
    for (const rec of [...c.scanned.records.map((r) => r.rec), ...(c.scanned.beyond ?? [])]) if (rec.t === 'put' && !elsewhere.has(rec.id)) lost.add(rec.id);
    logger.warn(
      { segment: segmentName(c.no), movedTo: c.to, badAt: c.scanned.good, lostItems: lost.size },
      `outbox: corrupt segment moved aside; ${lost.size} item(s) only in it are lost (and any in the unreadable bytes from ${c.scanned.good} on)`,
    );
  }
  ledger.sortBySeq();
  return { ledger, maxSeg: segs.at(-1)?.no ?? 0, quarantinedNow: corrupt.length, uncut };
}

async function quarantine(fs: OutboxFs, dir: string, no: number): Promise<string> {
  const qdir = path.join(dir, QUARANTINE_DIR);
  await fs.mkdir(qdir);
  const taken = new Set(await fs.readdir(qdir));
  let name = segmentName(no);
  for (let i = 1; taken.has(name); i++) name = `${segmentName(no)}.${i}`;
  const to = path.join(qdir, name);
  await fs.rename(segmentPath(dir, no), to);
  await fs.fsyncDir(qdir);
  await fs.fsyncDir(dir);
  return to;
}
