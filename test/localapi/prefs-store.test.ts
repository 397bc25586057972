// The preferences on flash: defaults without a file, written only when a
// value changes (and then published), at most once a second of agent time
// however often a client changes them (issue 27), a bad PATCH refused whole,
// a bad file read as the defaults.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EventBus } from '../../agent/core/event-bus.js';
import type { Prefs } from '../../agent/prefs/events.js';
import { writeFileAtomic } from '../../agent/lib/atomic-write.js';
import { PREFS_FILE, PREFS_WRITE_EVERY_MS, PrefsError, PrefsStore } from '../../agent/prefs/prefs-store.js';
import { HandlerMap } from '../../agent/localapi/handlers.js';
import { registerPrefsHandlers } from '../../agent/prefs/prefs-handlers.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function store(content?: string) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'prefs-'));
  dirs.push(dir);
  if (content !== undefined) writeFileSync(path.join(dir, PREFS_FILE), content);
  const bus = new EventBus();
  const seen: Prefs[] = [];
  bus.on('prefsChanged', seen, ({ prefs }) => seen.push(prefs));
  // The real atomic write, counted: what each write put in the file.
  const writes: unknown[] = [];
  let done = 0;
  const clock = new FakeClock();
  const s = new PrefsStore({
    stateDir: dir,
    bus,
    clock,
    write: async (file, data, options) => {
      writes.push(JSON.parse(String(data)));
      await writeFileAtomic(file, data, options);
      done++;
    },
  });
  s.start();
  /** Every write begun has reached the file. */
  const settled = (): Promise<unknown> => until('every write on the file', () => done >= writes.length, { everyMs: 1 });
  return { s, dir, seen, writes, clock, settled, file: path.join(dir, PREFS_FILE) };
}

describe('PrefsStore', () => {
  it('defaults without a file, and writes nothing to read them', () => {
    const { s, file } = store();
    expect(s.prefs()).toEqual({ autoUpload: true });
    expect(statSync(file, { throwIfNoEntry: false })).toBeUndefined();
  });

  it('a start and a stop with nothing changed write nothing (no file appears; one not ours is left as it is)', async () => {
    const { s, file, writes } = store();
    await s.stop();
    expect(writes).toEqual([]);
    expect(statSync(file, { throwIfNoEntry: false })).toBeUndefined();
    const other = store('{"autoUpload": false, "x": 1}');
    await other.s.stop();
    expect(other.writes).toEqual([]);
    expect(readFileSync(other.file, 'utf8')).toBe('{"autoUpload": false, "x": 1}');
  });

  it('a change is written (0600) and published; the same value again writes and publishes nothing', async () => {
    const { s, file, seen, dir, writes } = store();
    expect(await s.update({ autoUpload: false })).toEqual({ autoUpload: false });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ autoUpload: false });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const mtime = statSync(file).mtimeMs;
    const written = writes.length;
    expect(await s.update({ autoUpload: false })).toEqual({ autoUpload: false });
    expect(await s.update({})).toEqual({ autoUpload: false });
    // Counted, not timed: no write was begun.
    expect(writes).toHaveLength(written);
    expect(statSync(file).mtimeMs).toBe(mtime);
    expect(seen).toEqual([{ autoUpload: false }]);
    expect(s.report()).toEqual({ prefs: { autoUpload: false } });
    // Read back by the next daemon.
    const again = new PrefsStore({ stateDir: dir, bus: new EventBus(), clock: new FakeClock() });
    again.start();
    expect(again.prefs()).toEqual({ autoUpload: false });
  });

  it('PATCHes sent together, none awaited before the next, apply in order: each answers its own result, the last one wins in memory at once and on disk within the second', async () => {
    // The audit's case: false then true before the first write finished. The second was compared with the
    // value before the first (true), found "nothing changed", and the first's write then left false.
    const a = store();
    const answers = await Promise.all([a.s.update({ autoUpload: false }), a.s.update({ autoUpload: true })]);
    expect(answers).toEqual([{ autoUpload: false }, { autoUpload: true }]);
    expect(a.s.prefs()).toEqual({ autoUpload: true });
    expect(a.seen).toEqual([{ autoUpload: false }, { autoUpload: true }]);
    // The first went to flash at once; the second, within the second after it.
    expect(a.writes).toEqual([{ autoUpload: false }]);
    await a.clock.advance(PREFS_WRITE_EVERY_MS);
    expect(a.writes).toEqual([{ autoUpload: false }, { autoUpload: true }]);
    await a.settled();
    expect(JSON.parse(readFileSync(a.file, 'utf8'))).toEqual({ autoUpload: true });

    // More of them, with repeats and an empty PATCH: an event only where the value changes.
    const b = store();
    const patches = [{ autoUpload: false }, { autoUpload: false }, {}, { autoUpload: true }, { autoUpload: true }, { autoUpload: false }];
    const results = await Promise.all(patches.map((p) => b.s.update(p)));
    expect(results).toEqual([false, false, false, true, true, false].map((autoUpload) => ({ autoUpload })));
    expect(b.s.prefs()).toEqual({ autoUpload: false });
    expect(b.seen).toEqual([{ autoUpload: false }, { autoUpload: true }, { autoUpload: false }]);
    // Back to what flash holds by the end of the second: nothing more to write.
    await b.clock.advance(PREFS_WRITE_EVERY_MS);
    expect(b.writes).toEqual([{ autoUpload: false }]);
    await b.settled();
    expect(JSON.parse(readFileSync(b.file, 'utf8'))).toEqual({ autoUpload: false });
  });

  it('a thousand flips write the card about once a second of agent time, not a thousand times; each is in effect at once; stop() writes the last', async () => {
    const { s, writes, seen, clock, file, dir, settled } = store();
    for (let i = 0; i < 1_000; i++) expect(await s.update({ autoUpload: i % 2 === 1 })).toEqual({ autoUpload: i % 2 === 1 });
    expect(seen).toHaveLength(1_000);
    expect(s.prefs()).toEqual({ autoUpload: true });
    // No agent time has passed: the first flip was written, the rest wait for the end of the second.
    expect(writes).toEqual([{ autoUpload: false }]);
    await clock.advance(PREFS_WRITE_EVERY_MS);
    expect(writes).toEqual([{ autoUpload: false }, { autoUpload: true }]);
    await settled();
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ autoUpload: true });
    // A flip within the next second: in effect at once, on flash when stop() comes first.
    await clock.advance(PREFS_WRITE_EVERY_MS / 2);
    expect(await s.update({ autoUpload: false })).toEqual({ autoUpload: false });
    expect(writes).toHaveLength(2);
    await s.stop();
    expect(writes).toEqual([{ autoUpload: false }, { autoUpload: true }, { autoUpload: false }]);
    const again = new PrefsStore({ stateDir: dir, bus: new EventBus(), clock: new FakeClock() });
    again.start();
    expect(again.prefs()).toEqual({ autoUpload: false });
  });

  it('flips spread over time: at most one write per second, each second\'s last value', async () => {
    const { s, writes, clock } = store();
    // Ten flips a second for ten seconds.
    for (let i = 0; i < 100; i++) {
      await s.update({ autoUpload: i % 2 === 1 });
      await clock.advance(PREFS_WRITE_EVERY_MS / 10);
    }
    await clock.advance(PREFS_WRITE_EVERY_MS);
    expect(writes.length).toBeLessThanOrEqual(11);
    expect(writes.at(-1)).toEqual({ autoUpload: true });
    expect(s.prefs()).toEqual({ autoUpload: true });
  });

  it('a PATCH with an unknown field or a wrong type is refused whole, naming it; nothing changes', async () => {
    const { s, file, seen } = store();
    await expect(s.update({ autoUpload: false, colour: 'red' })).rejects.toThrow(PrefsError);
    await expect(s.update({ autoUpload: 'no' })).rejects.toThrow(/autoUpload must be a boolean, not "no"/);
    await expect(s.update([true])).rejects.toThrow(/JSON object/);
    await expect(s.update({ ['__proto__']: true })).rejects.toThrow(/unknown preference/);
    expect(s.prefs()).toEqual({ autoUpload: true });
    expect(statSync(file, { throwIfNoEntry: false })).toBeUndefined();
    expect(seen).toEqual([]);
  });

  it('a file that is not ours is read as the defaults (and left until the next change)', () => {
    expect(store('not json').s.prefs()).toEqual({ autoUpload: true });
    expect(store('{"autoUpload": "off"}').s.prefs()).toEqual({ autoUpload: true });
    expect(store('{"autoUpload": false, "other": 1}').s.prefs()).toEqual({ autoUpload: false });
  });
});

describe('PATCH /v1/prefs', () => {
  it('a file system that refuses the write: the kind of its error and the file named, nothing changed', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'prefs-'));
    dirs.push(dir);
    // A state dir that is a regular file: ENOTDIR, a setting to fix (config, 409), not a full disk.
    const notADir = path.join(dir, 'state');
    writeFileSync(notADir, '');
    const s = new PrefsStore({ stateDir: notADir, bus: new EventBus(), clock: new FakeClock() });
    s.start();
    const routes = new HandlerMap();
    registerPrefsHandlers(routes, s);
    const m = routes.match('PATCH', '/v1/prefs');
    if (m.kind !== 'found') throw new Error('PATCH /v1/prefs is not served');
    const refused = await Promise.resolve(m.handler({ method: 'PATCH', path: '/v1/prefs', params: {}, query: new URLSearchParams(), body: { autoUpload: false } })).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 409, kind: 'config', message: expect.stringContaining(path.join(notADir, PREFS_FILE)) });
    expect(s.prefs()).toEqual({ autoUpload: true });
  });
});
