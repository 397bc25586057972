// The preferences on flash: defaults without a file, written only when a
// value changes (and then published), a bad PATCH refused whole, a bad file
// read as the defaults.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EventBus, type Prefs } from '../../agent/core/event-bus.js';
import { writeFileAtomic } from '../../agent/lib/atomic-write.js';
import { PREFS_FILE, PrefsError, PrefsStore } from '../../agent/localapi/prefs-store.js';
import { HandlerMap } from '../../agent/localapi/handlers.js';
import { registerPrefsHandlers } from '../../agent/localapi/prefs-handlers.js';

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
  const s = new PrefsStore(dir, bus, undefined, async (file, data, options) => {
    writes.push(JSON.parse(String(data)));
    await writeFileAtomic(file, data, options);
  });
  s.start();
  return { s, dir, seen, writes, file: path.join(dir, PREFS_FILE) };
}

describe('PrefsStore', () => {
  it('defaults without a file, and writes nothing to read them', () => {
    const { s, file } = store();
    expect(s.prefs()).toEqual({ autoUpload: true });
    expect(statSync(file, { throwIfNoEntry: false })).toBeUndefined();
  });

  it('a change is written (0600) and published; the same value again writes and publishes nothing', async () => {
    const { s, file, seen, dir } = store();
    expect(await s.update({ autoUpload: false })).toEqual({ autoUpload: false });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ autoUpload: false });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const mtime = statSync(file).mtimeMs;
    await new Promise((r) => setTimeout(r, 20));
    expect(await s.update({ autoUpload: false })).toEqual({ autoUpload: false });
    expect(await s.update({})).toEqual({ autoUpload: false });
    expect(statSync(file).mtimeMs).toBe(mtime);
    expect(seen).toEqual([{ autoUpload: false }]);
    expect(s.report()).toEqual({ prefs: { autoUpload: false } });
    // Read back by the next daemon.
    const again = new PrefsStore(dir, new EventBus());
    again.start();
    expect(again.prefs()).toEqual({ autoUpload: false });
  });

  it('PATCHes sent together, none awaited before the next, apply in order: each answers its own result, the last one wins in memory and on disk, one write per change', async () => {
    // The audit's case: false then true before the first write finished. The second was compared with the
    // value before the first (true), found "nothing changed", and the first's write then left false.
    const a = store();
    const answers = await Promise.all([a.s.update({ autoUpload: false }), a.s.update({ autoUpload: true })]);
    expect(answers).toEqual([{ autoUpload: false }, { autoUpload: true }]);
    expect(a.s.prefs()).toEqual({ autoUpload: true });
    expect(JSON.parse(readFileSync(a.file, 'utf8'))).toEqual({ autoUpload: true });
    expect(a.writes).toEqual([{ autoUpload: false }, { autoUpload: true }]);
    expect(a.seen).toEqual([{ autoUpload: false }, { autoUpload: true }]);

    // More of them, with repeats and an empty PATCH: a write (and an event) only where the value changes.
    const b = store();
    const patches = [{ autoUpload: false }, { autoUpload: false }, {}, { autoUpload: true }, { autoUpload: true }, { autoUpload: false }];
    const results = await Promise.all(patches.map((p) => b.s.update(p)));
    expect(results).toEqual([false, false, false, true, true, false].map((autoUpload) => ({ autoUpload })));
    expect(b.s.prefs()).toEqual({ autoUpload: false });
    expect(JSON.parse(readFileSync(b.file, 'utf8'))).toEqual({ autoUpload: false });
    expect(b.writes).toEqual([{ autoUpload: false }, { autoUpload: true }, { autoUpload: false }]);
    expect(b.seen).toEqual(b.writes);
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
    const s = new PrefsStore(notADir, new EventBus());
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
