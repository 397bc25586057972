// Group commit. Records wait in memory for the window (flushMs) to close,
// then go out as one append and one fsync per segment they touch, plus one
// directory fsync for a segment the window created; only then are the
// operations that made them told they are durable. Flash wears by pages
// written, and every fsync writes at least a page (and a journal commit):
// records that share a window share that cost.
//
// A disk that refuses (full, read-only, failing) does not stop the agent:
// the records stay queued, their operations resolve as held in memory, and
// every window tries again, in order, from the last durable byte.
import type { Clock, Timer } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { OutboxRecord } from './record.js';
import { codeOf } from './segments.js';
import type { OutboxFs } from './types.js';

export interface Queued {
  seg: number;
  bytes: Uint8Array;
  rec: OutboxRecord;
}

export interface WriterOptions {
  fs: OutboxFs;
  dir: string;
  clock: Clock;
  flushMs: number;
  logger: Logger;
  pathOf(seg: number): string;
  /** The durable length of a segment, which a failed write is cut back to before the next try. */
  writtenOf(seg: number): number;
  /** A run of records is durable. */
  settled(seg: number, run: Queued[], bytes: number): void;
  /** After every window; `wrote` when it wrote something and left nothing held (deletions and copies forward may follow). */
  afterWindow(wrote: boolean): Promise<void>;
}

export class GroupWriter {
  private readonly queue: Queued[] = [];
  private waiters: Array<{ upto: number; resolve: () => void }> = [];
  /** Records ever queued, and how many of them the windows have answered (written or held). */
  private enqueued = 0;
  private answered = 0;
  private timer: Timer | undefined;
  private chain: Promise<void> = Promise.resolve();
  private outage: string | undefined;
  /** Segments created by an append whose directory entry is not yet fsynced. */
  private readonly fresh = new Set<number>();
  /** Segments whose tail may hold part of a failed write. */
  private readonly dirty = new Set<number>();
  /** Torn tails open could not cut (a read-only disk): cut, by segment, before anything is appended after them. */
  private readonly cuts = new Map<number, number>();
  private stopped = false;

  constructor(private readonly o: WriterOptions) {}

  cutFirst(seg: number, length: number): void {
    this.cuts.set(seg, length);
  }

  created(seg: number): void {
    this.fresh.add(seg);
  }

  enqueue(q: Queued): void {
    this.queue.push(q);
    this.enqueued++;
    this.arm();
  }

  /** Resolves once every record queued so far is durable, or held in memory because the disk refused it. */
  whenWritten(): Promise<void> {
    const upto = this.enqueued;
    if (upto <= this.answered) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ upto, resolve }));
  }

  /** Records held because the disk refused them. */
  get held(): number {
    return this.outage === undefined ? 0 : this.queue.length;
  }

  get queued(): number {
    return this.queue.length;
  }

  /** Writes now whatever is queued (a no-op window when nothing is). */
  flush(): Promise<void> {
    this.timer?.cancel();
    this.timer = undefined;
    return this.drain();
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
  }

  private arm(): void {
    if (this.timer !== undefined || this.stopped) return;
    this.timer = this.o.clock.setTimer(() => {
      this.timer = undefined;
      void this.drain();
    }, this.o.flushMs * this.o.clock.scale);
  }

  /** One window at a time: a window's writes never interleave with the next one's. */
  private drain(): Promise<void> {
    const next = this.chain.then(() => this.window());
    this.chain = next.catch((err: unknown) => this.o.logger.error({ err: String(err) }, 'outbox window failed'));
    return this.chain;
  }

  private async window(): Promise<void> {
    const batch = this.queue.slice();
    const upto = this.enqueued;
    let done = 0;
    try {
      for (const [seg, length] of this.cuts) {
        await this.truncate(seg, length);
        await this.o.fs.fsync(this.o.pathOf(seg)).catch((err: unknown) => {
          if (codeOf(err) !== 'ENOENT') throw err;
        });
        this.cuts.delete(seg);
      }
      while (done < batch.length) {
        const seg = batch[done]!.seg;
        let end = done;
        while (end < batch.length && batch[end]!.seg === seg) end++;
        await this.writeRun(seg, batch.slice(done, end));
        done = end;
      }
    } catch (err) {
      this.refused(err);
    }
    this.queue.splice(0, done);
    if (done === batch.length && this.outage !== undefined) {
      this.o.logger.info({ code: this.outage }, 'outbox: the disk takes writes again; every held record is written');
      this.outage = undefined;
    }
    this.answered = upto;
    const ready = this.waiters.filter((w) => w.upto <= upto);
    this.waiters = this.waiters.filter((w) => w.upto > upto);
    for (const w of ready) w.resolve();
    if (this.queue.length > 0) this.arm();
    await this.o.afterWindow(done > 0 && this.outage === undefined && !this.stopped);
  }

  private async writeRun(seg: number, run: Queued[]): Promise<void> {
    const { fs } = this.o;
    const file = this.o.pathOf(seg);
    if (this.dirty.has(seg)) {
      await this.truncate(seg, this.o.writtenOf(seg));
      this.dirty.delete(seg);
    }
    let size = 0;
    for (const q of run) size += q.bytes.length;
    const data = new Uint8Array(size);
    let off = 0;
    for (const q of run) {
      data.set(q.bytes, off);
      off += q.bytes.length;
    }
    this.dirty.add(seg);
    await fs.append(file, data);
    await fs.fsync(file);
    if (this.fresh.has(seg)) {
      await fs.fsyncDir(this.o.dir);
      this.fresh.delete(seg);
    }
    this.dirty.delete(seg);
    this.o.settled(seg, run, size);
  }

  private async truncate(seg: number, length: number): Promise<void> {
    try {
      await this.o.fs.truncate(this.o.pathOf(seg), length);
    } catch (err) {
      // Already deleted: nothing left to cut.
      if (codeOf(err) !== 'ENOENT') throw err;
    }
  }

  private refused(err: unknown): void {
    if (this.outage !== undefined) return;
    this.outage = codeOf(err) ?? String(err);
    this.o.logger.warn(
      { code: this.outage, err: err instanceof Error ? err.message : String(err), held: this.queue.length },
      'outbox: the disk refuses writes; holding records in memory and retrying every window',
    );
  }
}
