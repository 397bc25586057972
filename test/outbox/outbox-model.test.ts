// Model-based: random puts, progress, ends (cancels among them), urgency changes, windows, disk faults and crashes
// (power cuts with torn writes, kills, at a step boundary or in the middle
// of any file operation, open included) against the simulated file system.
// After every reopen, what the outbox replays is checked against what its
// callers were promised before the crash.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';
import { createLogger } from '../../agent/lib/logger.js';
import { Outbox } from '../../agent/outbox/outbox.js';
import type { ItemState, OutboxItem } from '../../agent/outbox/types.js';
import { checkAtLeast, checkAtMost, checkEqual, checkIs } from '../support/check.js';
import { SimFs, seeded, type CrashMode, type DiskState } from './sim-fs.js';

const CAP = 4_000;
const SEGMENT = 1_000;
const FLUSH_MS = 500;
const DIR = '/state/queue';
/** A restart takes at least this long: systemd's restart delay alone is longer. */
const RESTART_MS = 1_000;

type Step =
  | { k: 'put'; kind: string; group: string | undefined; priority: number; size: number; urgent: boolean }
  | { k: 'progress' | 'done' | 'dead' | 'cancel'; pick: number; times: number }
  /** The local API raising or lowering an item (Outbox.setUrgent). */
  | { k: 'urgent'; pick: number; to: boolean }
  | { k: 'advance'; ms: number }
  | { k: 'flush' }
  /** `again`: the next boot crashes too, that many file operations into its open (recovery must be redoable). */
  | { k: 'crash'; mode: CrashMode; torn: boolean; again: number | undefined }
  | { k: 'crashAt'; after: number; mode: CrashMode; torn: boolean }
  | { k: 'disk'; state: DiskState };

const mode = fc.constantFrom<CrashMode>('power', 'kill');
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      k: fc.constant('put' as const),
      kind: fc.constantFrom('channel-connect', 'channel-disconnect', 'upload'),
      group: fc.option(fc.constantFrom('ch1', 'ch2', 'ch3'), { nil: undefined }),
      priority: fc.integer({ min: 0, max: 3 }),
      size: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 200 }) }, { weight: 1, arbitrary: fc.integer({ min: 200, max: 1_500 }) }),
      urgent: fc.boolean(),
    }),
  },
  {
    weight: 8,
    arbitrary: fc.record({
      k: fc.constantFrom('progress' as const, 'progress' as const, 'progress' as const, 'done' as const, 'dead' as const, 'cancel' as const),
      // Mostly the oldest few pending items, so one item sees many progress records (and its folds).
      pick: fc.oneof(fc.nat(2), fc.nat()),
      times: fc.integer({ min: 1, max: 8 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('urgent' as const), pick: fc.oneof(fc.nat(2), fc.nat()), to: fc.boolean() }) },
  { weight: 5, arbitrary: fc.record({ k: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 1_200 }) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('flush' as const) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('crash' as const), mode, torn: fc.boolean(), again: fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined }) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('crashAt' as const), after: fc.integer({ min: 1, max: 30 }), mode, torn: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('disk' as const), state: fc.constantFrom<DiskState>('ok', 'ok', 'full', 'read-only') }) },
);

/** What the callers were told about one put, across every reopen. */
interface Tag {
  n: number;
  kind: string;
  group: string | undefined;
  priority: number;
  payload: { n: number; pad: string };
  id?: string;
  /** Every state the outbox has shown for it: the disk may hold any of them, never another. */
  possible: Set<ItemState>;
  putSure: boolean;
  endSure: boolean;
  progressSure: number;
  progressIssued: number;
  /** The urgency last asked for, how many changes were asked, and how many of them are surely on disk. */
  urgent: boolean;
  urgentIssued: number;
  urgentSure: number;
}

/** Nothing but `pending` was ever shown for it: a resolved put must still be there, pending. */
const onlyPending = (tag: Tag): boolean => tag.possible.size === 1 && tag.possible.has('pending');

class World {
  readonly sim: SimFs;
  readonly clock = new FakeClock();
  readonly tags: Tag[] = [];
  readonly owner = new Map<string, number>();
  /** Resolutions that came while records were held in memory: sure only once the disk has them. */
  held: Array<() => void> = [];
  ob!: Outbox;
  reopens = 0;
  readonly errors: unknown[] = [];
  /** Drop counts seen when nothing was queued: on disk, so no reopen may show fewer. */
  sureDropped: Record<string, number> = {};

  constructor(seed: number) {
    this.sim = new SimFs(seeded(seed));
  }

  async start(): Promise<void> {
    for (;;) {
      const epoch = this.sim.epoch;
      this.ob = new Outbox({ dir: DIR, fs: this.sim.mount(), clock: this.clock, bootId: 'boot-a', capBytes: CAP, segmentBytes: SEGMENT, flushMs: FLUSH_MS, logger: createLogger('silent') });
      try {
        await this.ob.open();
      } catch (err) {
        if (this.sim.epoch === epoch) throw err;
      }
      if (this.sim.epoch === epoch) return;
      // It crashed while opening: the next boot opens again.
      await this.clock.advance(RESTART_MS);
    }
  }

  /** The machine went down: the old process is gone, a new one opens the queue, and the promises are checked. */
  async restart(again?: { after: number; mode: CrashMode; torn: boolean }): Promise<void> {
    this.held = [];
    void this.ob.close().catch(() => undefined);
    await this.clock.advance(RESTART_MS);
    if (again !== undefined) this.sim.crashAt(again.after, again.mode, again.torn);
    await this.start();
    this.reopens++;
    this.checkReplay();
  }

  tagOf(item: OutboxItem): Tag {
    const n = (item.payload as { n?: unknown } | undefined)?.n;
    const tag = typeof n === 'number' ? this.tags[n] : undefined;
    if (tag === undefined) throw new Error(`an item nobody put: ${JSON.stringify(item)}`);
    return tag;
  }

  claim(id: string, n: number): void {
    const prev = this.owner.get(id);
    if (prev !== undefined && prev !== n) throw new Error(`id ${id} given to puts ${prev} and ${n}`);
    this.owner.set(id, n);
  }

  observe(): void {
    for (const item of this.ob.items()) {
      const tag = this.tagOf(item);
      tag.possible.add(item.state);
      this.claim(item.id, tag.n);
    }
    const stats = this.ob.stats();
    checkAtMost(stats.liveBytes, CAP);
    if (stats.unwritten === 0) {
      for (const sure of this.held) sure();
      this.held = [];
    }
  }

  settle(p: Promise<unknown>, sure: () => void): void {
    const epoch = this.sim.epoch;
    const ob = this.ob;
    p.then(
      () => {
        if (this.sim.epoch !== epoch) return; // it resolved after the crash: the process was already dead
        if (ob.stats().unwritten > 0) this.held.push(sure);
        else sure();
      },
      (err: unknown) => this.errors.push(err),
    );
  }

  checkReplay(): void {
    const items = this.ob.items();
    const byTag = new Map<number, OutboxItem>();
    for (const item of items) {
      const tag = this.tagOf(item);
      checkIs(byTag.has(tag.n), false);
      byTag.set(tag.n, item);
      if (tag.id !== undefined) checkIs(item.id, tag.id);
      this.claim(item.id, tag.n);
      if (!tag.possible.has(item.state)) throw new Error(`put ${tag.n} replayed as ${item.state}, never given: ${[...tag.possible].join(',')}`);
      checkEqual(item.payload, tag.payload);
      checkEqual([item.kind, item.group, item.priority], [tag.kind, tag.group, tag.priority]);
      const pn = (item.progress as { n: number } | undefined)?.n ?? 0;
      checkAtMost(pn, tag.progressIssued);
      // Every change of urgency asked for is on disk: the item comes back as last asked.
      if (item.state === 'pending' && tag.putSure && tag.urgentSure === tag.urgentIssued) checkEqual({ n: tag.n, urgent: item.urgent === true }, { n: tag.n, urgent: tag.urgent });
      if (item.state === 'pending') checkAtLeast(pn, tag.progressSure);
    }
    for (const tag of this.tags) {
      const item = byTag.get(tag.n);
      if (tag.putSure && onlyPending(tag)) checkEqual({ n: tag.n, state: item?.state }, { n: tag.n, state: 'pending' });
      if (tag.endSure && item?.state === 'pending') expect({ n: tag.n, state: item?.state }).not.toEqual({ n: tag.n, state: 'pending' });
    }
    const stats = this.ob.stats();
    checkAtMost(stats.liveBytes, CAP);
    checkIs(stats.quarantined, 0);
    for (const [kind, n] of Object.entries(this.sureDropped)) checkAtLeast(stats.dropped[kind] ?? 0, n);
    // What an open replayed is on disk now: the next crash must not take it back.
    for (const item of items) {
      const tag = this.tagOf(item);
      if (item.state === 'pending') tag.putSure = onlyPending(tag) || tag.putSure;
      else tag.endSure = true;
      tag.urgent = item.urgent === true;
      tag.urgentSure = tag.urgentIssued;
      tag.progressSure = Math.max(tag.progressSure, (item.progress as { n: number } | undefined)?.n ?? 0);
    }
  }

  /** A pending item, mostly: ends and progress of ended ones are no-ops worth trying now and then. */
  pick(i: number): Tag | undefined {
    const pending = this.tags.filter((t) => t.id !== undefined && this.ob.get(t.id)?.state === 'pending');
    const known = i % 8 === 0 || pending.length === 0 ? this.tags.filter((t) => t.id !== undefined) : pending;
    return known.length === 0 ? undefined : known[i % known.length];
  }

  async run(s: Step): Promise<void> {
    const epoch = this.sim.epoch;
    switch (s.k) {
      case 'put': {
        const n = this.tags.length;
        const tag: Tag = { n, kind: s.kind, group: s.group, priority: s.priority, payload: { n, pad: 'x'.repeat(s.size) }, possible: new Set(), putSure: false, endSure: false, progressSure: 0, progressIssued: 0, urgent: s.urgent, urgentIssued: 0, urgentSure: 0 };
        this.tags.push(tag);
        const p = this.ob.put(s.kind, tag.payload, { group: s.group, priority: s.priority, urgent: s.urgent });
        const newest = this.ob.items().at(-1)!;
        checkEqual(newest.payload, tag.payload);
        tag.id = newest.id;
        this.settle(
          p.then((item) => checkIs(item.id, tag.id)),
          () => (tag.putSure = true),
        );
        break;
      }
      case 'urgent': {
        const tag = this.pick(s.pick);
        if (tag?.id === undefined) break;
        if (this.ob.get(tag.id)?.state !== 'pending') {
          checkIs(await this.ob.setUrgent(tag.id, s.to), false);
          break;
        }
        if ((this.ob.get(tag.id)?.urgent === true) === s.to) break;
        tag.urgent = s.to;
        const m = ++tag.urgentIssued;
        const before = this.ob.stats();
        this.settle(this.ob.setUrgent(tag.id, s.to), () => (tag.urgentSure = Math.max(tag.urgentSure, m)));
        checkIs(this.ob.get(tag.id)?.urgent === true, s.to);
        // The flag was charged with the put (ledger.ts chargeOf): a change of urgency costs no room and drops nothing.
        checkEqual([this.ob.stats().liveBytes <= before.liveBytes, this.ob.stats().dropped], [true, before.dropped]);
        break;
      }
      case 'progress':
      case 'done':
      case 'dead':
      case 'cancel': {
        const tag = this.pick(s.pick);
        if (tag?.id === undefined) break;
        if (this.ob.get(tag.id)?.state !== 'pending') {
          // Ignored, and never written: nothing to be sure of.
          await (s.k === 'progress' ? this.ob.progress(tag.id, { n: tag.progressIssued + 1 }) : s.k === 'cancel' ? this.ob.cancel(tag.id, 'by the model') : this.ob.done(tag.id));
          break;
        }
        if (s.k === 'progress') {
          // A progress record that made the cap drop its own item ends the run of them.
          for (let i = 0; i < s.times && this.ob.get(tag.id)?.state === 'pending'; i++) {
            const m = ++tag.progressIssued;
            this.settle(this.ob.progress(tag.id, { n: m }), () => (tag.progressSure = Math.max(tag.progressSure, m)));
          }
        } else {
          this.settle(s.k === 'done' ? this.ob.done(tag.id) : s.k === 'cancel' ? this.ob.cancel(tag.id, 'by the model') : this.ob.dead(tag.id, 'gave up'), () => (tag.endSure = true));
        }
        break;
      }
      case 'advance':
        await this.clock.advance(s.ms);
        break;
      case 'flush':
        await this.ob.flush();
        if (this.sim.epoch === epoch && this.ob.stats().unwritten === 0) this.sureDropped = this.ob.stats().dropped;
        break;
      case 'crash':
        this.sim.crash(s.mode, s.torn);
        await flushMicrotasks();
        this.observe();
        return this.restart(s.again === undefined ? undefined : { after: s.again, mode: s.mode, torn: s.torn });
      case 'crashAt':
        this.sim.crashAt(s.after, s.mode, s.torn);
        break;
      case 'disk':
        this.sim.disk = s.state;
        break;
    }
    await flushMicrotasks();
    this.observe();
    if (this.sim.epoch !== epoch) await this.restart();
  }

  /** The disk heals, everything is written, and one more power cut must lose nothing that was promised. */
  async finish(): Promise<void> {
    this.sim.disk = 'ok';
    const epoch = this.sim.epoch;
    await this.clock.advance(FLUSH_MS);
    await this.ob.flush();
    await flushMicrotasks();
    this.observe();
    if (this.sim.epoch !== epoch) return this.restart();
    expect(this.ob.stats().unwritten).toBe(0);
    this.sureDropped = this.ob.stats().dropped;
    this.sim.crash('power', true);
    await this.restart();
  }
}

describe('outbox, model-based against a file system that loses power', () => {
  it('replays every promise after any crash, invents nothing, keeps to the cap, never repeats an id', async () => {
    let reopens = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer(), fc.array(step, { minLength: 10, maxLength: 90, size: 'max' }), async (seed, steps) => {
        const w = new World(seed);
        await w.start();
        for (const s of steps) await w.run(s);
        await w.finish();
        expect(w.errors).toEqual([]);
        reopens += w.reopens;
      }),
      { numRuns: 400 },
    );
    // The property is only as strong as the crashes it saw.
    expect(reopens).toBeGreaterThan(400);
    // About 10 s of CPU alone; beside a second jest worker on a loaded machine it passed 30 s.
  }, 120_000);
});
