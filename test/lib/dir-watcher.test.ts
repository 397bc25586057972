// The one directory watcher (agent/lib/dir-watcher.ts) on a FakeClock:
// bursts of events make one look, a directory removed and made again is
// watched again, the poll finds what no event told of, a watch that keeps
// failing costs one try a poll, and stop() leaves no timer and no watch.
import { afterAll, afterEach, describe, expect, test } from '@jest/globals';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DirWatcher, WATCH_COALESCE_MS, type DirWatcherOptions, type WatchDir } from '../../agent/lib/dir-watcher.js';
import { createLogger } from '../../agent/lib/logger.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';

const POLL = 10_000;
const temps: string[] = [];
const watchers: DirWatcher[] = [];
afterEach(() => {
  for (const w of watchers.splice(0)) w.stop();
});
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'c2c-dir-watcher-'));
  temps.push(d);
  return d;
}

/** A fake fs.watch: each armed watch kept, with its event and death callbacks and whether it was closed. */
function fakeWatch(refuse: () => boolean = () => false) {
  const armed: Array<{ dir: string; fire: (type?: string, name?: string) => void; die: (err: unknown) => void; closed: boolean }> = [];
  let tries = 0;
  const watch: WatchDir = (dir, fire, die) => {
    tries++;
    if (refuse()) throw Object.assign(new Error('no inotify watches left'), { code: 'ENOSPC' });
    const w = { dir, fire, die, closed: false };
    armed.push(w);
    return { close: () => void (w.closed = true) };
  };
  return { watch, armed, open: () => armed.filter((w) => !w.closed), tries: () => tries };
}

/** A watcher whose owner watches `dirs()` (those that exist) at each look and counts the looks. */
function rig(dirs: () => string[], extra: Partial<DirWatcherOptions> = {}) {
  const clock = new FakeClock();
  let looks = 0;
  const w: DirWatcher = new DirWatcher({
    clock,
    pollMs: POLL,
    look: () => {
      looks++;
      w.setDirs(dirs().filter((d) => existsSync(d)));
    },
    what: 'a test directory',
    ...extra,
  });
  watchers.push(w);
  const start = (): void => {
    w.start();
    w.setDirs(dirs().filter((d) => existsSync(d)));
  };
  return { clock, w, start, looks: () => looks };
}

describe('DirWatcher: events', () => {
  test('a burst of events is one look, WATCH_COALESCE_MS after the first; a later event is another', async () => {
    const dir = tempDir();
    const fake = fakeWatch();
    const { clock, start, looks } = rig(() => [dir], { watch: fake.watch });
    start();
    const [watch] = fake.open();
    const before = clock.pendingCount;
    for (let i = 0; i < 50; i++) watch!.fire('rename', `f${i}`);
    expect(clock.pendingCount).toBe(before + 1);
    await clock.advance(WATCH_COALESCE_MS - 1);
    expect(looks()).toBe(0);
    await clock.advance(1);
    expect(looks()).toBe(1);
    watch!.fire('change', 'f1');
    await clock.advance(WATCH_COALESCE_MS);
    expect(looks()).toBe(2);
  });

  test('an event the owner says is not worth a look arms nothing', async () => {
    const dir = tempDir();
    const fake = fakeWatch();
    const asked: Array<[string, string | undefined, string | undefined]> = [];
    const worthALook = (d: string, type: string | undefined, name: string | undefined): boolean => (asked.push([d, type, name]), !name?.endsWith('.part'));
    const { clock, start, looks } = rig(() => [dir], { watch: fake.watch, worthALook });
    start();
    const before = clock.pendingCount;
    fake.open()[0]!.fire('change', 'clip.mp4.part');
    expect(clock.pendingCount).toBe(before);
    expect(asked).toEqual([[dir, 'change', 'clip.mp4.part']]);
    fake.open()[0]!.fire('rename', 'clip.mp4');
    await clock.advance(WATCH_COALESCE_MS);
    expect(looks()).toBe(1);
  });

  test('the real fs.watch brings a look forward', async () => {
    const dir = tempDir();
    const { clock, start, looks } = rig(() => [dir], { pollMs: 3_600_000 });
    start();
    const armed = clock.pendingCount;
    writeFileSync(path.join(dir, 'a'), 'x');
    // The event in real time, however late a loaded machine delivers it; agent time stands still meanwhile.
    await until('the watch event', () => clock.pendingCount > armed);
    await clock.advance(WATCH_COALESCE_MS);
    expect(looks()).toBe(1);
  });
});

describe('DirWatcher: directories that come and go', () => {
  test('a directory removed and made again between two looks gets a fresh watch at the next', async () => {
    const dir = path.join(tempDir(), 'media');
    mkdirSync(dir);
    const fake = fakeWatch();
    const { clock, start } = rig(() => [dir], { watch: fake.watch });
    start();
    expect(fake.armed.map((a) => a.dir)).toEqual([dir]);
    await clock.advance(POLL);
    expect(fake.armed).toHaveLength(1); // the same directory: the watch stays
    rmSync(dir, { recursive: true });
    mkdirSync(dir);
    await clock.advance(POLL);
    expect(fake.armed).toHaveLength(2);
    expect(fake.armed[0]!.closed).toBe(true);
    expect(fake.open().map((a) => a.dir)).toEqual([dir]);
  });

  test('a directory the owner no longer names is closed; one it names again is armed again', async () => {
    const dir = tempDir();
    const fake = fakeWatch();
    let named = true;
    const { clock, start } = rig(() => (named ? [dir] : []), { watch: fake.watch });
    start();
    named = false;
    await clock.advance(POLL);
    expect(fake.open()).toEqual([]);
    named = true;
    await clock.advance(POLL);
    expect(fake.open().map((a) => a.dir)).toEqual([dir]);
  });

  test('with the real fs.watch: removed, made again and found by the poll, its new events bring looks forward', async () => {
    const dir = path.join(tempDir(), 'incoming');
    mkdirSync(dir);
    const HOUR = 3_600_000;
    const { clock, start, looks } = rig(() => [dir], { pollMs: HOUR });
    start();
    rmSync(dir, { recursive: true });
    mkdirSync(dir);
    // The poll is the truth: it watches the new directory.
    await clock.advance(HOUR);
    const afterPoll = looks();
    const armed = clock.pendingCount;
    writeFileSync(path.join(dir, 'request.json'), '{}');
    // The new watch's event, waited for with agent time still; then the coalesce time, far less than the next poll.
    await until('the new watch\'s event', () => clock.pendingCount > armed);
    await clock.advance(WATCH_COALESCE_MS);
    expect(looks()).toBe(afterPoll + 1);
  });
});

describe('DirWatcher: the poll', () => {
  test('the poll finds a change no watch event reported', async () => {
    const dir = tempDir();
    const fake = fakeWatch(); // armed, but silent, as inotify is on sysfs or a network mount
    const clock = new FakeClock();
    const seen: string[][] = [];
    const w: DirWatcher = new DirWatcher({
      clock,
      pollMs: POLL,
      look: () => {
        seen.push(readdirSync(dir));
        w.setDirs([dir]);
      },
      watch: fake.watch,
      what: 'a test directory',
    });
    watchers.push(w);
    w.start();
    w.setDirs([dir]);
    writeFileSync(path.join(dir, 'clip.mp4'), 'x');
    await clock.advance(POLL - 1);
    expect(seen).toEqual([]);
    await clock.advance(1);
    expect(seen).toEqual([['clip.mp4']]);
    await clock.advance(POLL);
    expect(seen).toHaveLength(2);
  });

  test('watching turned off: the poll alone looks, and no watch is tried', async () => {
    const dir = tempDir();
    const { clock, start, looks } = rig(() => [dir], { watch: null });
    start();
    await clock.advance(POLL * 3);
    expect(looks()).toBe(3);
  });

  test('a look that throws does not stop the poll', async () => {
    const clock = new FakeClock();
    let looks = 0;
    const w = new DirWatcher({
      clock,
      pollMs: POLL,
      look: () => {
        looks++;
        throw new Error('boom');
      },
      watch: null,
      what: 'a test directory',
    });
    watchers.push(w);
    w.start();
    await expect(clock.advance(POLL)).rejects.toThrow('boom');
    expect(clock.pendingCount).toBe(1);
    await expect(clock.advance(POLL)).rejects.toThrow('boom');
    expect(looks).toBe(2);
  });
});

describe('DirWatcher: a failing watch never spins', () => {
  test('a watch that dies looks at once, then waits for the poll to be armed again', async () => {
    const dir = tempDir();
    const fake = fakeWatch();
    const { clock, start, looks } = rig(() => [dir], { watch: fake.watch });
    start();
    fake.armed[0]!.die(new Error('EIO'));
    expect(looks()).toBe(1);
    expect(fake.tries()).toBe(1); // that look did not arm it again
    // A second death of the same watch, or an event from it, is nothing.
    fake.armed[0]!.die(new Error('EIO'));
    expect(looks()).toBe(1);
    await clock.advance(POLL);
    expect(fake.tries()).toBe(2);
    expect(fake.open()).toHaveLength(1);
  });

  test('a watch that dies as it is armed, every time: one try a poll, no look of its own', async () => {
    const dir = tempDir();
    let tries = 0;
    const watch: WatchDir = (_d, _fire, die) => {
      tries++;
      die(Object.assign(new Error('EIO'), { code: 'EIO' }));
      return { close: () => undefined };
    };
    const { clock, start, looks } = rig(() => [dir], { watch });
    start();
    expect(tries).toBe(1);
    expect(looks()).toBe(0);
    await clock.advance(POLL * 5);
    expect(tries).toBe(6);
    expect(looks()).toBe(5);
    expect(clock.pendingCount).toBe(1);
  });

  test('a watch that cannot start is tried again at each look, and warned of once', async () => {
    const dir = tempDir();
    const lines: string[] = [];
    const fake = fakeWatch(() => true);
    const { clock, start } = rig(() => [dir], { watch: fake.watch, logger: createLogger('debug', { write: (l: string) => void lines.push(l) }) });
    start();
    await clock.advance(POLL * 3);
    expect(fake.tries()).toBe(4);
    expect(fake.armed).toEqual([]);
    const said = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.msg.startsWith('cannot watch a test directory'));
    expect(said).toHaveLength(4);
    expect(said.filter((l) => l.level === 40)).toHaveLength(1);
    expect(said[0]!.msg).toBe('cannot watch a test directory; looking every 10 s instead');
  });
});

describe('DirWatcher: start and stop', () => {
  test('the constructor arms nothing; stop() leaves no timer, no watch, and no look after', async () => {
    const dir = tempDir();
    const fake = fakeWatch();
    const clock = new FakeClock();
    let looks = 0;
    const w: DirWatcher = new DirWatcher({ clock, pollMs: POLL, look: () => void looks++, watch: fake.watch, what: 'a test directory' });
    expect(clock.pendingCount).toBe(0);
    w.setDirs([dir]); // before start: nothing to watch yet
    expect(fake.tries()).toBe(0);
    w.start();
    w.setDirs([dir]);
    fake.armed[0]!.fire('rename', 'x');
    expect(clock.pendingCount).toBe(2); // the poll and the event's look
    w.stop();
    expect(clock.pendingCount).toBe(0);
    expect(fake.open()).toEqual([]);
    fake.armed[0]!.fire('rename', 'y');
    fake.armed[0]!.die(new Error('EIO'));
    w.setDirs([dir]);
    expect(clock.pendingCount).toBe(0);
    expect(fake.tries()).toBe(1);
    await clock.advance(POLL * 3);
    expect(looks).toBe(0);
  });

  test('stop() closes a real fs.watch: a later change brings no look', async () => {
    const dir = tempDir();
    const { clock, w, start, looks } = rig(() => [dir], { pollMs: 3_600_000 });
    start();
    w.stop();
    expect(clock.pendingCount).toBe(0);
    // A watch of the test's own on the same directory: once it has the change's event, a watch left open
    // would have had it too (node reads the events of one directory for all its watches at once).
    let witnessed = false;
    const witness = watch(dir, () => (witnessed = true));
    try {
      writeFileSync(path.join(dir, 'late'), 'x');
      await until('the witness\'s event', () => witnessed);
    } finally {
      witness.close();
    }
    await clock.advance(WATCH_COALESCE_MS);
    expect(looks()).toBe(0);
    expect(clock.pendingCount).toBe(0);
  });
});
