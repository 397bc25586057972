// The outbox in memory: every item still on disk, every live segment, and
// for each item where its records are twice over, as assigned (what the
// disk will say once the queued records are written) and as durable (what
// a power cut now would leave). Segments are deleted on the durable view
// only, so a crash can never find an item's put gone while its end is lost.
import { CANCELLED, type CountedState, type OutboxItem, type OutboxStats } from './types.js';
import { sequenceOf, URGENT_FLAG_BYTES, type OutboxRecord, type PutRecord } from './record.js';

export interface Placement {
  ended: boolean;
  /** The segment of the newest put (or copy carried forward). */
  put?: number;
  /** The segment of the newest progress record after that put. */
  prog?: number;
  /** Every segment holding one of its records. */
  segs: Set<number>;
}

export interface Entry {
  item: OutboxItem;
  seq: number;
  mem: Placement;
  dur: Placement;
}

export interface SegmentInfo {
  no: number;
  /** Bytes assigned to it, written or not. */
  size: number;
  /** Bytes of it durable on disk. */
  written: number;
  /** Items with a record in it. */
  ids: Set<string>;
}

const STATES: CountedState[] = ['pending', 'done', 'dead', 'cancelled', 'dropped'];

/** Where an item is counted: a cancelled one on its own, never among the dead-lettered (it did not fail). */
export const countedState = (item: Pick<OutboxItem, 'state' | 'reason'>): CountedState => (item.state === 'dead' && item.reason?.startsWith(CANCELLED) === true ? 'cancelled' : item.state);
const END_STATE = { done: 'done', dead: 'dead', drop: 'dropped' } as const;

function place(p: Placement, rec: OutboxRecord, seg: number): void {
  if (p.ended) return;
  p.segs.add(seg);
  if (rec.t === 'put') {
    p.put = seg;
    p.prog = undefined;
  } else if (rec.t === 'progress') p.prog = seg;
  else p.ended = true;
}

const placement = (): Placement => ({ ended: false, segs: new Set() });

/**
 * What a put (or a copy) of `size` bytes is charged against the cap: its
 * bytes, plus the urgency flag's while it does not carry it. A change of
 * urgency writes the item again as one copy, and `,"u":1` made the item
 * bigger than the cap had admitted, with no item dropped to make room (the
 * model test once found 4001 bytes under a cap of 4000). Charged from the
 * put on, the flag's bytes are admitted with the item: raising it, lowering
 * it, carrying it forward or folding its progress never costs more than the
 * records the copy replaces, so a change of urgency needs no room and drops
 * nothing. Only progress records make an item grow, and they go through the
 * cap (Outbox.progress). Every copy is still checked against its charge
 * (setUrgent, copyForward): records another writer left may copy longer.
 */
export const chargeOf = (rec: PutRecord, size: number): number => size + (rec.u === 1 ? 0 : URGENT_FLAG_BYTES);

export class Ledger {
  readonly entries = new Map<string, Entry>();
  readonly segments = new Map<number, SegmentInfo>();
  dropped: Record<string, number> = {};
  quarantined = 0;
  nextSeq = 0;
  /** What the pending items are charged (their records' bytes, and the urgency flag's where not set: chargeOf): what the cap limits. */
  liveBytes = 0;

  addSegment(no: number, size = 0): SegmentInfo {
    const s: SegmentInfo = { no, size, written: size, ids: new Set() };
    this.segments.set(no, s);
    return s;
  }

  /** A record read back from disk: assigned and durable at once. */
  replay(rec: OutboxRecord, size: number, seg: number): void {
    if (rec.t === 'counters') {
      this.dropped = { ...rec.dropped };
      this.quarantined = rec.quarantined;
      this.nextSeq = Math.max(this.nextSeq, rec.seq);
      return;
    }
    this.assign(rec, size, seg);
    this.settle(rec, seg);
  }

  /** A record given to segment `seg`: the item changes now, its durable view when settle() says so. */
  assign(rec: OutboxRecord, size: number, seg: number): void {
    if (rec.t === 'counters') return;
    const s = this.segments.get(seg);
    if (rec.t === 'drop') {
      const kind = rec.k ?? this.entries.get(rec.id)?.item.kind ?? 'unknown';
      this.dropped[kind] = (this.dropped[kind] ?? 0) + 1;
    }
    const seq = sequenceOf(rec.id);
    if (seq >= this.nextSeq) this.nextSeq = seq + 1;
    let e = this.entries.get(rec.id);
    if (rec.t === 'put') {
      if (e === undefined) {
        const item: OutboxItem = { id: rec.id, kind: rec.k, priority: rec.pr, payload: rec.d, createdAt: rec.at, bytes: 0, state: 'pending' };
        if (rec.g !== undefined) item.group = rec.g;
        e = { item, seq, mem: placement(), dur: placement() };
        this.entries.set(rec.id, e);
      } else if (e.item.state !== 'pending') return;
      const charge = chargeOf(rec, size);
      this.liveBytes += charge - e.item.bytes;
      e.item.bytes = charge;
      e.item.payload = rec.d;
      if ('pg' in rec) e.item.progress = rec.pg;
      else delete e.item.progress;
      if (rec.u === 1) e.item.urgent = true;
      else delete e.item.urgent;
    } else {
      if (e === undefined || e.item.state !== 'pending') return;
      if (rec.t === 'progress') {
        e.item.progress = rec.d;
        e.item.bytes += size;
        this.liveBytes += size;
      } else {
        e.item.state = END_STATE[rec.t];
        if (rec.r !== undefined) e.item.reason = rec.r;
        this.liveBytes -= e.item.bytes;
      }
    }
    place(e.mem, rec, seg);
    s?.ids.add(rec.id);
  }

  /** The record given to `seg` is now durable. */
  settle(rec: OutboxRecord, seg: number): void {
    if (rec.t === 'counters') return;
    const e = this.entries.get(rec.id);
    if (e !== undefined) place(e.dur, rec, seg);
  }

  /** An item dropped as it was put (it was the lowest): known in memory, only its drop record goes to disk. */
  addUnwritten(item: OutboxItem): void {
    this.entries.set(item.id, { item, seq: sequenceOf(item.id), mem: placement(), dur: placement() });
  }

  /**
   * Segments a delete would not harm, oldest first: every record in them is
   * durable and no longer needed, and every ended item in them has no record
   * left in an older segment that stays (else the put would outlive its end).
   * The newest segment with a durable counters record always stays: it
   * carries the drop counts and the sequence once everything else is gone,
   * and so does `writing`, the segment new records go to.
   */
  deletable(writing: number | undefined): number[] {
    const out: number[] = [];
    const gone = new Set<number>();
    const sorted = [...this.segments.values()].sort((a, b) => a.no - b.no);
    const keep = sorted.filter((s) => s.written > 0).at(-1)?.no;
    for (const s of sorted) {
      if (s.no === keep || s.no === writing || s.written !== s.size) continue;
      let ok = true;
      for (const id of s.ids) {
        const d = this.entries.get(id)?.dur;
        if (d === undefined) continue;
        ok = d.ended ? [...d.segs].every((t) => t >= s.no || gone.has(t)) : d.put !== s.no && d.prog !== s.no;
        if (!ok) break;
      }
      if (ok) {
        gone.add(s.no);
        out.push(s.no);
      }
    }
    return out;
  }

  /** Segment `no` is gone from disk: items whose every record was in gone segments are forgotten. */
  forget(no: number): void {
    const s = this.segments.get(no);
    if (s === undefined) return;
    for (const id of s.ids) {
      const e = this.entries.get(id);
      if (e === undefined) continue;
      e.dur.segs.delete(no);
      e.mem.segs.delete(no);
      if (e.mem.ended && e.dur.segs.size === 0 && e.mem.segs.size === 0) this.entries.delete(id);
    }
    this.segments.delete(no);
  }

  /** Pending items whose newest put or progress is in segment `no`: what a copy forward must carry. */
  neededIn(no: number): Entry[] {
    const out: Entry[] = [];
    for (const id of this.segments.get(no)?.ids ?? []) {
      const e = this.entries.get(id);
      if (e !== undefined && e.item.state === 'pending' && (e.mem.put === no || e.mem.prog === no)) out.push(e);
    }
    return out.sort((a, b) => a.seq - b.seq);
  }

  /** Replay meets items in record order, and a copy carried forward comes after newer items: back to put order. */
  sortBySeq(): void {
    const sorted = [...this.entries.values()].sort((a, b) => a.seq - b.seq);
    this.entries.clear();
    for (const e of sorted) this.entries.set(e.item.id, e);
  }

  assignedBytes(): number {
    let n = 0;
    for (const s of this.segments.values()) n += s.size;
    return n;
  }

  stats(unwritten: number): OutboxStats {
    const byKind: OutboxStats['byKind'] = {};
    let oldestPending: string | null = null;
    for (const { item } of this.entries.values()) {
      const k = (byKind[item.kind] ??= Object.fromEntries(STATES.map((st) => [st, { items: 0, bytes: 0 }])) as OutboxStats['byKind'][string]);
      const st = countedState(item);
      k[st].items++;
      k[st].bytes += item.bytes;
      if (item.state === 'pending' && oldestPending === null) oldestPending = item.createdAt;
    }
    let diskBytes = 0;
    for (const s of this.segments.values()) diskBytes += s.written;
    return { byKind, oldestPending, dropped: { ...this.dropped }, quarantined: this.quarantined, diskBytes, unwritten, liveBytes: this.liveBytes };
  }
}

export function copyItem<P>(item: OutboxItem): OutboxItem<P> {
  return { ...item } as OutboxItem<P>;
}
