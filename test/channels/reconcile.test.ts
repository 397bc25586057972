// reconcile(): examples for each rule, then properties against a simulated
// service (409 on a second channel of one model and index, 404 on an
// unknown id): one round converges, lost answers and failed calls converge
// once the network is back, and the plan does not depend on input order.
import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import { isSettled, reconcile, type ReconcilePlan } from '../../agent/channels/reconcile.js';
import type { DeviceChannel } from '../../agent/api/types.js';
import type { ChannelSpec } from '../../agent/config/types.js';

const spec = (key: string, model = `m-${key}`): ChannelSpec => ({ key, name: key, assetType: 'video', deviceModelId: model, detect: { anyPath: [`dev/${key}`] } });
const SPECS = [spec('video'), spec('audio'), spec('tc')];
const ch = (id: string, external_index?: number): DeviceChannel => (external_index === undefined ? { id } : { id, external_index });

describe('reconcile: examples', () => {
  test('nothing listed, nothing recorded: connect each detected key in profile order', () => {
    const plan = reconcile({ specs: SPECS, detected: new Set(['tc', 'video']), listed: [], map: {} });
    expect(plan).toEqual({
      connect: [
        { key: 'video', deviceModelId: 'm-video', externalIndex: 0 },
        { key: 'tc', deviceModelId: 'm-tc', externalIndex: 2 },
      ],
      disconnect: [],
      map: {},
    });
  });

  test('a recorded, listed, detected channel is kept; an undetected one is disconnected', () => {
    const plan = reconcile({ specs: SPECS, detected: new Set(['video']), listed: [ch('v', 0), ch('a', 1)], map: { video: 'v', audio: 'a' } });
    expect(plan).toEqual({ connect: [], disconnect: [{ channelId: 'a', key: 'audio', why: 'not-detected' }], map: { video: 'v' } });
  });

  test('a recorded id the service no longer lists is forgotten and the key connected again', () => {
    const plan = reconcile({ specs: SPECS, detected: new Set(['video', 'audio']), listed: [], map: { video: 'gone', audio: 'gone-too' } });
    expect(plan.map).toEqual({});
    expect(plan.connect.map((c) => c.key)).toEqual(['video', 'audio']);
  });

  test('an unrecorded channel at a detected key’s index is adopted (the crash between connect and save)', () => {
    const plan = reconcile({ specs: SPECS, detected: new Set(['audio']), listed: [ch('x', 1)], map: {} });
    expect(plan).toEqual({ connect: [], disconnect: [], map: { audio: 'x' } });
  });

  test('an unrecorded channel at an undetected key’s index, at no index, or past the profile is disconnected', () => {
    const plan = reconcile({ specs: SPECS, detected: new Set(), listed: [ch('c', 2), ch('b'), ch('a', 7)], map: {} });
    expect(plan.disconnect).toEqual([
      { channelId: 'a', why: 'unknown' },
      { channelId: 'b', why: 'unknown' },
      { channelId: 'c', key: 'tc', why: 'not-detected' },
    ]);
  });

  test('duplicates for one key: the recorded one is kept; among unrecorded ones the lowest id', () => {
    const recorded = reconcile({ specs: SPECS, detected: new Set(['video']), listed: [ch('z', 0), ch('k', 0), ch('a', 0)], map: { video: 'k' } });
    expect(recorded.map).toEqual({ video: 'k' });
    expect(recorded.disconnect).toEqual([
      { channelId: 'a', key: 'video', why: 'duplicate' },
      { channelId: 'z', key: 'video', why: 'duplicate' },
    ]);
    const adopted = reconcile({ specs: SPECS, detected: new Set(['video']), listed: [ch('z', 0), ch('k', 0)], map: {} });
    expect(adopted.map).toEqual({ video: 'k' });
    expect(adopted.disconnect).toEqual([{ channelId: 'z', key: 'video', why: 'duplicate' }]);
  });

  test('a record for a key the profile lost, or at another index, is disconnected', () => {
    const plan = reconcile({ specs: SPECS, detected: new Set(['video', 'audio']), listed: [ch('old', 0), ch('moved', 2)], map: { sensor: 'old', audio: 'moved' } });
    expect(plan.disconnect).toEqual([
      { channelId: 'moved', key: 'audio', why: 'index-mismatch' },
      { channelId: 'old', key: 'sensor', why: 'key-not-in-profile' },
    ]);
    expect(plan.connect.map((c) => c.key)).toEqual(['video', 'audio']);
    expect(plan.map).toEqual({});
  });

  test('one id recorded for two keys belongs to the first in profile order; a channel without an index is trusted to its record', () => {
    const plan = reconcile({ specs: SPECS, detected: new Set(['video', 'audio']), listed: [ch('v')], map: { audio: 'v', video: 'v' } });
    expect(plan.map).toEqual({ video: 'v' });
    expect(plan.connect).toEqual([{ key: 'audio', deviceModelId: 'm-audio', externalIndex: 1 }]);
  });

  test('a listing that names one id twice counts it once', () => {
    const plan = reconcile({ specs: SPECS, detected: new Set(['video']), listed: [ch('v', 0), ch('v', 0)], map: {} });
    expect(plan).toEqual({ connect: [], disconnect: [], map: { video: 'v' } });
  });

  test('isSettled: no operations and the same record', () => {
    const same = reconcile({ specs: SPECS, detected: new Set(['video']), listed: [ch('v', 0)], map: { video: 'v' } });
    expect(isSettled(same, { video: 'v' })).toBe(true);
    const adopting = reconcile({ specs: SPECS, detected: new Set(['video']), listed: [ch('v', 0)], map: {} });
    expect(isSettled(adopting, {})).toBe(false);
  });
});

// ---- a simulated service ------------------------------------------------

interface SimChannel {
  id: string;
  model: string;
  external_index?: number;
}

interface World {
  specs: ChannelSpec[];
  detected: Set<string>;
  service: SimChannel[];
  map: Record<string, string>;
}

type Fate = 'ok' | 'fail' | 'lost';

/** Applies a plan as the agent does: disconnects (404 = done), then connects (409 = already so). */
function apply(world: World, plan: ReconcilePlan, fate: () => Fate = () => 'ok', nextId: () => string): World {
  let service = [...world.service];
  const map = { ...plan.map };
  for (const op of plan.disconnect) {
    const f = fate();
    if (f !== 'fail') service = service.filter((c) => c.id !== op.channelId);
  }
  for (const op of plan.connect) {
    const f = fate();
    if (f === 'fail') continue;
    const spec = world.specs[op.externalIndex]!;
    expect(spec.key).toBe(op.key);
    if (service.some((c) => c.model === op.deviceModelId && c.external_index === op.externalIndex)) continue; // 409
    const id = nextId();
    service.push({ id, model: op.deviceModelId, external_index: op.externalIndex });
    if (f === 'ok') map[op.key] = id;
  }
  return { ...world, service, map };
}

const listing = (w: World): DeviceChannel[] =>
  w.service.map((c) => (c.external_index === undefined ? { id: c.id, name: c.model } : { id: c.id, name: c.model, external_index: c.external_index }));
const plan = (w: World): ReconcilePlan => reconcile({ specs: w.specs, detected: w.detected, listed: listing(w), map: w.map });

/** Exactly one channel per detected key, recorded, at its key's index; nothing else. */
function expectConverged(w: World): void {
  const index = new Map(w.specs.map((s, i) => [s.key, i]));
  expect(Object.keys(w.map).sort()).toEqual([...w.detected].sort());
  expect(new Set(Object.values(w.map)).size).toBe(Object.keys(w.map).length);
  expect(w.service.map((c) => c.id).sort()).toEqual(Object.values(w.map).sort());
  for (const [key, id] of Object.entries(w.map)) {
    const c = w.service.find((s) => s.id === id)!;
    if (c.external_index !== undefined) expect(c.external_index).toBe(index.get(key));
  }
}

const KEYS = ['a', 'b', 'c', 'd', 'e'];
const MODELS = ['m1', 'm2', 'm3'];

const worldArb: fc.Arbitrary<World> = fc
  .uniqueArray(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 5 })
  .chain((keys) =>
    fc.record({
      specs: fc.tuple(...keys.map((k) => fc.constantFrom(...MODELS).map((m) => spec(k, m)))),
      detected: fc.subarray(keys).map((d) => new Set(d)),
      service: fc
        .array(fc.record({ model: fc.constantFrom(...MODELS, 'other'), external_index: fc.option(fc.nat(6), { nil: undefined }) }), { maxLength: 8 })
        .map((cs) => cs.map((c, i): SimChannel => (c.external_index === undefined ? { id: `s${i}`, model: c.model } : { id: `s${i}`, model: c.model, external_index: c.external_index }))),
      map: fc.dictionary(fc.constantFrom(...keys, 'gone', 'zz'), fc.constantFrom('s0', 's1', 's2', 's3', 's4', 'missing')),
    }),
  );

const counter = (): (() => string) => {
  let n = 0;
  return () => `n${String(n++).padStart(3, '0')}`;
};

describe('reconcile: properties', () => {
  test('one round converges: the next plan asks nothing and keeps the record', () => {
    fc.assert(
      fc.property(worldArb, (w0) => {
        const next = counter();
        const w1 = apply(w0, plan(w0), undefined, next);
        const p2 = plan(w1);
        expect(p2.connect).toEqual([]);
        expect(p2.disconnect).toEqual([]);
        expect(isSettled(p2, w1.map)).toBe(true);
        expectConverged(w1);
      }),
      { numRuns: 500 },
    );
  });

  test('failed calls and lost answers converge within two clean rounds', () => {
    fc.assert(
      fc.property(worldArb, fc.array(fc.constantFrom<Fate>('ok', 'fail', 'lost'), { minLength: 1, maxLength: 30 }), (w0, fates) => {
        const next = counter();
        let i = 0;
        const w1 = apply(w0, plan(w0), () => fates[i++ % fates.length]!, next);
        const w2 = apply(w1, plan(w1), undefined, next);
        const w3 = apply(w2, plan(w2), undefined, next);
        expect(isSettled(plan(w3), w3.map)).toBe(true);
        expectConverged(w3);
        // Lost answers are adopted, never duplicated: at most one connect per key per round.
        for (const p of [plan(w0), plan(w1)]) expect(new Set(p.connect.map((c) => c.key)).size).toBe(p.connect.length);
      }),
      { numRuns: 500 },
    );
  });

  test('the plan does not depend on the order of the listing or the record', () => {
    fc.assert(
      fc.property(worldArb, fc.integer(), (w, seed) => {
        const shuffled = <T>(xs: T[]): T[] => xs.map((x, i) => [x, (i * 7919 + seed) % 104729] as const).sort((a, b) => a[1] - b[1]).map(([x]) => x);
        const base = plan(w);
        const entries = shuffled(Object.entries(w.map));
        const again = reconcile({ specs: w.specs, detected: new Set(shuffled([...w.detected])), listed: shuffled(listing(w)), map: Object.fromEntries(entries) });
        expect(again).toEqual(base);
      }),
      { numRuns: 300 },
    );
  });

  test('the plan never disconnects a channel it keeps, nor connects a key it keeps', () => {
    fc.assert(
      fc.property(worldArb, (w) => {
        const p = plan(w);
        const kept = new Set(Object.values(p.map));
        for (const op of p.disconnect) expect(kept.has(op.channelId)).toBe(false);
        for (const op of p.connect) expect(p.map[op.key]).toBeUndefined();
        for (const key of Object.keys(p.map)) expect(w.detected.has(key)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
