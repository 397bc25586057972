// The durable outbox: what the agent must tell the service while the
// network is down, kept in append-only segment files so it survives power
// cuts without rewriting anything on the SD card. Each operation changes the
// items in memory at once and resolves when its records are fsynced with
// the rest of their window (writer.ts); replay.ts reads it all back.
import { formatBytes } from '../lib/byte-size.js';
import type { Clock } from '../lib/clock.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { oneLine } from '../lib/text.js';
import { chargeOf, copyItem, Ledger, type Entry } from './ledger.js';
import { nodeOutboxFs } from './node-fs.js';
import { copyRecord, encodeRecord, type CountersRecord, type OutboxRecord, type PutRecord } from './record.js';
import { recover } from './replay.js';
import { segmentPath, segmentReadLimit } from './segments.js';
import { victimsFor } from './cap.js';
import { copyForwardPlan, reclaim } from './upkeep.js';
import { CANCELLED, OUTBOX_DEFAULTS, type OutboxFs, type OutboxItem, type OutboxStats, type PutOptions } from './types.js';
import { GroupWriter, type Queued } from './writer.js';

export { readBootId } from './boot-id.js';
export { readOutbox } from './reader.js';

export { OUTBOX_DEFAULTS } from './types.js';

/** An item's progress records are folded into one copy of it once they pass this many times the copy's size. */
const FOLD_FACTOR = 4;

export interface OutboxOptions {
  /** The queue directory, `<state-dir>/queue`. */
  dir: string;
  fs?: OutboxFs;
  clock: Clock;
  /** The kernel's boot id (readBootId()): with the sequence, an id no reboot repeats. */
  bootId: string;
  /** The pending items' bytes (as charged: ledger.ts chargeOf) never exceed it: the lowest priority, then the oldest, are dropped first. */
  capBytes?: number;
  /** A segment file is closed and a new one started at this size. */
  segmentBytes?: number;
  /** The group-commit window, real ms. */
  flushMs?: number;
  logger?: Logger;
}

interface Live {
  fs: OutboxFs;
  logger: Logger;
  ledger: Ledger;
  writer: GroupWriter;
  cap: number;
  segmentBytes: number;
  /** Garbage (bytes on disk no pending item needs) beyond which the oldest live segment is copied forward. */
  compactAt: number;
  current: number | undefined;
  nextSeg: number;
  /** Evictions since the last window, by kind: logged once per window. */
  burst: Record<string, number> | undefined;
  /** A delete the disk refused: tried again every window, written or not, and warned about once. */
  reclaimFailed: boolean;
  /** close() began: nothing new is queued, so its flush is the last window. */
  closing: boolean;
  closed: boolean;
}

export class Outbox {
  private s: Live | undefined;

  constructor(private readonly o: OutboxOptions) {}

  /** Replays the queue: torn tails cut, corrupt segments moved aside, finished segments deleted. */
  async open(): Promise<void> {
    if (this.s !== undefined) throw new Error('outbox already open');
    const fs = this.o.fs ?? nodeOutboxFs();
    const logger = this.o.logger ?? createLogger('silent');
    const cap = this.o.capBytes ?? OUTBOX_DEFAULTS.capBytes;
    const segmentBytes = this.o.segmentBytes ?? OUTBOX_DEFAULTS.segmentBytes;
    const r = await recover(fs, this.o.dir, logger, segmentReadLimit(segmentBytes, cap));
    const ledger = r.ledger;
    const writer = new GroupWriter({
      fs,
      dir: this.o.dir,
      clock: this.o.clock,
      flushMs: this.o.flushMs ?? OUTBOX_DEFAULTS.flushMs,
      logger,
      pathOf: (no) => segmentPath(this.o.dir, no),
      writtenOf: (no) => ledger.segments.get(no)?.written ?? 0,
      settled: (no, run, bytes) => this.settled(no, run, bytes),
      afterWindow: (wrote) => this.afterWindow(wrote),
    });
    this.s = { fs, logger, ledger, writer, cap, segmentBytes, compactAt: Math.max(cap / 4, 2 * segmentBytes), current: undefined, nextSeg: r.maxSeg + 1, burst: undefined, reclaimFailed: false, closing: false, closed: false };
    for (const c of r.uncut) writer.cutFirst(c.no, c.length);
    await this.reclaim();
    if (r.quarantinedNow > 0) {
      // The quarantine count lives in counters records: start a segment now so a crash before the next put keeps it.
      this.startSegment();
      await writer.flush();
    }
  }

  /**
   * Queues an item; resolves once it is on flash (or held in memory while
   * the disk refuses writes). An item the cap drops at once still resolves,
   * in state 'dropped'.
   */
  async put<P>(kind: string, payload: P, opts: PutOptions = {}): Promise<OutboxItem<P>> {
    const s = this.live();
    const d = roundTrip(payload);
    const priority = opts.priority ?? 0;
    // The monotonic clock (boot origin) is a floor under the sequence: ids handed out but never
    // written (a full disk, then a crash) are behind it by the time a new process opens.
    const seq = Math.max(s.ledger.nextSeq, Math.floor(this.o.clock.now()));
    s.ledger.nextSeq = seq + 1;
    const id = `${this.o.bootId}:${seq}`;
    const rec: PutRecord = { t: 'put', id, k: kind, pr: priority, at: new Date(this.o.clock.wallNow()).toISOString(), d };
    if (opts.group !== undefined) rec.g = opts.group;
    if (opts.urgent === true) rec.u = 1;
    const bytes = encodeRecord(rec);
    const older = opts.group === undefined ? [] : this.pendingEntries().filter((e) => e.item.group === opts.group);
    if (this.makeRoom(chargeOf(rec, bytes.length), priority, new Set(older.map((e) => e.item.id)))) {
      // The put goes before the ends it causes: a crash between them leaves both items, never neither.
      this.append(rec, bytes);
      for (const e of older) this.append({ t: 'done', id: e.item.id, r: 'superseded' });
    } else {
      const item: OutboxItem = { id, kind, priority, payload: d, createdAt: rec.at, bytes: 0, state: 'pending' };
      if (opts.group !== undefined) item.group = opts.group;
      if (opts.urgent === true) item.urgent = true;
      s.ledger.addUnwritten(item);
      this.evict(item);
    }
    const entry = s.ledger.entries.get(id)!;
    await s.writer.whenWritten();
    return copyItem<P>(entry.item);
  }

  /** A resumable job's progress, durable like a put; ignored for an item no longer pending. */
  async progress(id: string, data: unknown): Promise<void> {
    const s = this.live();
    const e = s.ledger.entries.get(id);
    if (e === undefined || e.item.state !== 'pending') return;
    const d = roundTrip(data);
    const prog = encodeRecord({ t: 'progress', id, d });
    const copy = copyRecord(e.item, d);
    const copyBytes = encodeRecord(copy);
    const fold = e.item.bytes + prog.length > FOLD_FACTOR * copyBytes.length;
    const growth = fold ? chargeOf(copy, copyBytes.length) - e.item.bytes : prog.length;
    if (growth > 0 && !this.makeRoom(growth, e.item.priority, new Set([id]))) this.evict(e.item);
    else if (fold) this.append(copy, copyBytes);
    else this.append({ t: 'progress', id, d }, prog);
    await s.writer.whenWritten();
  }

  /**
   * Marks a pending item urgent or not, durably: a copy of it (payload and
   * newest progress) with the flag is appended, like a fold of its progress.
   * False when the item is not pending (done, dead, unknown), or in the case
   * below where the cap has no room for the copy.
   */
  async setUrgent(id: string, urgent: boolean): Promise<boolean> {
    const s = this.live();
    const e = s.ledger.entries.get(id);
    if (e === undefined || e.item.state !== 'pending') return false;
    if ((e.item.urgent === true) === urgent) return true;
    const copy = copyRecord({ ...e.item, urgent }, e.item.progress);
    const bytes = encodeRecord(copy);
    // The copy replaces the item's records, and the item was charged for the flag from its put on
    // (ledger.ts chargeOf): a copy of records this outbox wrote never costs more, so the change needs
    // no room and drops nothing. Records that encode longer than they were read (another writer's)
    // could: that growth goes through the cap like any other, the item itself kept, and when
    // nothing may go the change is refused, never the cap passed nor the item dropped for it.
    const growth = chargeOf(copy, bytes.length) - e.item.bytes;
    if (growth > 0 && !this.makeRoom(growth, e.item.priority, new Set([id]))) {
      s.logger.warn({ id, growth, capBytes: s.cap }, "outbox: no room under the cap for an item's change of urgency; left as it was");
      return false;
    }
    this.append(copy, bytes);
    await s.writer.whenWritten();
    return true;
  }

  /** Ends a pending item as cancelled (dead, with a reason the views show as cancelled): never retried. False when it was not pending. */
  async cancel(id: string, why: string): Promise<boolean> {
    const e = this.live().ledger.entries.get(id);
    if (e === undefined || e.item.state !== 'pending') return false;
    await this.end('dead', id, `${CANCELLED}: ${why}`);
    return true;
  }

  done(id: string, reason?: string): Promise<void> {
    return this.end('done', id, reason);
  }

  dead(id: string, reason: string): Promise<void> {
    return this.end('dead', id, reason);
  }

  get(id: string): OutboxItem | undefined {
    const e = this.live(true).ledger.entries.get(id);
    return e === undefined ? undefined : copyItem(e.item);
  }

  pending(kind?: string): OutboxItem[] {
    return this.pendingEntries(true)
      .filter((e) => kind === undefined || e.item.kind === kind)
      .map((e) => copyItem(e.item));
  }

  /**
   * Items of `kind` not yet ended on flash: the pending ones, and ended ones
   * whose end record still waits for the group commit. What status reports,
   * so it never shows less than a reader of the disk (`queue`, `channels`) or
   * a restart after a power cut would find.
   */
  unsettled(kind: string): number {
    let n = 0;
    for (const e of this.live(true).ledger.entries.values()) {
      if (e.item.kind === kind && (e.item.state === 'pending' || (e.dur.put !== undefined && !e.dur.ended))) n++;
    }
    return n;
  }

  /** Every item still on disk, oldest first: pending ones, and ended ones until their segment is deleted. */
  items(): OutboxItem[] {
    return [...this.live(true).ledger.entries.values()].map((e) => copyItem(e.item));
  }

  stats(): OutboxStats {
    const s = this.live(true);
    return s.ledger.stats(s.writer.held);
  }

  /** Writes and fsyncs everything queued so far, without waiting for the window. */
  async flush(): Promise<void> {
    await this.live().writer.flush();
  }

  async close(): Promise<void> {
    const s = this.s;
    if (s === undefined || s.closed) return;
    s.closing = true;
    await s.writer.flush();
    s.closed = true;
    s.writer.stop();
  }

  private live(readOnly = false): Live {
    if (this.s === undefined) throw new Error('outbox not open');
    // From close() on, nothing new is queued: the last flush must be the last window.
    if (this.s.closing && !readOnly) throw new Error('outbox closed');
    return this.s;
  }

  private pendingEntries(readOnly = false): Entry[] {
    return [...this.live(readOnly).ledger.entries.values()].filter((e) => e.item.state === 'pending');
  }

  private async end(t: 'done' | 'dead', id: string, reason: string | undefined): Promise<void> {
    const s = this.live();
    const e = s.ledger.entries.get(id);
    if (e === undefined || e.item.state !== 'pending') return;
    this.append(reason === undefined ? { t, id } : { t, id, r: oneLine(reason) });
    await s.writer.whenWritten();
  }

  /** Drops what the cap needs dropped for `size` more bytes; false when the newcomer is the lowest and must go instead. */
  private makeRoom(size: number, priority: number, keep: ReadonlySet<string>): boolean {
    const s = this.live();
    const victims = victimsFor(this.pendingEntries(), s.ledger.liveBytes, s.cap, size, priority, keep);
    for (const v of victims ?? []) this.evict(v.item);
    return victims !== undefined;
  }

  private evict(item: OutboxItem): void {
    const s = this.live();
    this.append({ t: 'drop', id: item.id, k: item.kind, r: `evicted: the queue is at its cap of ${formatBytes(s.cap)}` });
    s.burst ??= {};
    s.burst[item.kind] = (s.burst[item.kind] ?? 0) + 1;
  }

  private append(rec: OutboxRecord, bytes = encodeRecord(rec)): void {
    const s = this.live();
    const cur = s.current === undefined ? undefined : s.ledger.segments.get(s.current);
    const seg = cur !== undefined && (cur.size + bytes.length <= s.segmentBytes || cur.ids.size === 0) ? cur.no : this.startSegment();
    s.ledger.segments.get(seg)!.size += bytes.length;
    s.ledger.assign(rec, bytes.length, seg);
    s.writer.enqueue({ seg, bytes, rec });
  }

  private startSegment(): number {
    const s = this.live();
    const no = s.nextSeg++;
    const info = s.ledger.addSegment(no);
    s.writer.created(no);
    s.current = no;
    const head: CountersRecord = { t: 'counters', seq: s.ledger.nextSeq, dropped: { ...s.ledger.dropped }, quarantined: s.ledger.quarantined };
    const bytes = encodeRecord(head);
    info.size += bytes.length;
    s.writer.enqueue({ seg: no, bytes, rec: head });
    return no;
  }

  private settled(no: number, run: Queued[], bytes: number): void {
    const ledger = this.s!.ledger;
    const seg = ledger.segments.get(no);
    if (seg !== undefined) seg.written += bytes;
    for (const q of run) ledger.settle(q.rec, no);
  }

  private async afterWindow(wrote: boolean): Promise<void> {
    const s = this.s!;
    if (s.burst !== undefined) {
      s.logger.warn({ dropped: s.burst, capBytes: s.cap }, 'outbox: at its cap; dropped the lowest-priority, oldest pending items');
      s.burst = undefined;
    }
    if (!wrote && !s.reclaimFailed) return;
    await this.reclaim();
    this.copyForward();
  }

  private async reclaim(): Promise<void> {
    const s = this.s!;
    s.reclaimFailed = !(await reclaim(s.fs, this.o.dir, s.ledger, s.current, s.logger, s.reclaimFailed));
  }

  private copyForward(): void {
    const s = this.s!;
    if (s.closing || s.writer.held > 0) return;
    for (const rec of copyForwardPlan(s.ledger, s.current, s.compactAt)) {
      const e = s.ledger.entries.get(rec.id);
      const bytes = encodeRecord(rec);
      // Never more than the item is charged for its records this outbox wrote (chargeOf); one that
      // would be (another writer's records) stays where it is rather than grow past what the cap admitted.
      if (e !== undefined && chargeOf(rec, bytes.length) <= e.item.bytes) this.append(rec, bytes);
    }
  }
}

/** What replay would give back: memory and disk never disagree about a payload. */
function roundTrip<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}
