// The media watcher on a FakeClock over real temp dirs: the settle rules
// (still for settleMs, or old on arrival), scratch names, channel folders,
// one report per (dev, ino, size, mtime), symlinks, a dir that comes late,
// and watch events that bring a scan forward without ever crashing it.
// mtimes are set from the fake wall clock, so "how old" is the test's call.
import { afterAll, afterEach, describe, expect, test } from '@jest/globals';
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLogger } from '../../agent/lib/logger.js';
import { WATCH_COALESCE_MS, type WatchDir } from '../../agent/lib/dir-watcher.js';
import { MediaWatcher, type MediaWatcherOptions, type ReadyFile } from '../../agent/uploads/media-watcher.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';

const SETTLE = 10_000;
const TICK = 5_000;
const temps: string[] = [];
const watchers: MediaWatcher[] = [];
afterEach(() => {
  for (const w of watchers.splice(0)) w.stop();
});
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

function setup(extra: Partial<MediaWatcherOptions> = {}, make = true) {
  const base = mkdtempSync(path.join(tmpdir(), 'c2c-media-'));
  temps.push(base);
  const dir = path.join(base, 'media');
  if (make) mkdirSync(dir);
  const clock = new FakeClock(1_000_000, Date.UTC(2026, 0, 1));
  const seen: ReadyFile[] = [];
  const w = new MediaWatcher({ dir, channelKeys: ['video', 'audio'], clock, settleMs: SETTLE, intervalMs: TICK, watch: null, onReady: (f) => seen.push(f), ...extra });
  watchers.push(w);
  /** Writes (or appends to) `rel` and stamps it `ageMs` before the fake wall clock. */
  const put = (rel: string, data = 'x', ageMs = 0, append = false): string => {
    const p = path.join(dir, rel);
    mkdirSync(path.dirname(p), { recursive: true });
    (append ? appendFileSync : writeFileSync)(p, data);
    stamp(p, ageMs);
    return p;
  };
  const stamp = (p: string, ageMs: number): void => {
    const t = (clock.wallNow() - ageMs) / 1000;
    utimesSync(p, t, t);
  };
  const names = (): string[] => seen.map((f) => f.name);
  return { base, dir, clock, seen, w, put, stamp, names };
}

const OLD = 3_600_000;

describe('MediaWatcher: when a file is ready', () => {
  test('a file that holds still is ready settleMs after it was first seen, not before', async () => {
    const { clock, w, put, names } = setup();
    put('A001.mp4', 'abc');
    w.start();
    await clock.advance(SETTLE - 1);
    expect(names()).toEqual([]);
    await clock.advance(1);
    expect(names()).toEqual(['A001.mp4']);
  });

  test('a growing file is not ready until it stops growing for settleMs', async () => {
    const { clock, w, put, seen } = setup();
    put('A002.mp4', 'a');
    w.start();
    for (let i = 0; i < 6; i++) {
      await clock.advance(TICK - 1);
      put('A002.mp4', 'b', 0, true);
      await clock.advance(1);
    }
    expect(seen).toEqual([]);
    // Last change seen at the last tick: ready settleMs later.
    await clock.advance(SETTLE - 1);
    expect(seen).toEqual([]);
    await clock.advance(1);
    expect(seen).toMatchObject([{ name: 'A002.mp4', size: 7 }]);
  });

  test('a file whose mtime is already older than settleMs is ready at once', () => {
    const { dir, w, put, seen } = setup();
    const p = put('B001.wav', 'hello', OLD);
    w.start();
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ path: p, name: 'B001.wav', size: 5, mtimeMs: expect.any(Number), ino: expect.any(Number), dev: expect.any(Number) });
    expect(seen[0]!.channelKey).toBeUndefined();
    expect(path.dirname(seen[0]!.path)).toBe(dir);
  });

  test('dot files, .part and .tmp names, and directories are never reported', async () => {
    const { clock, w, put, names } = setup();
    for (const n of ['.hidden.mp4', 'C001.mp4.part', 'C002.MP4.PART', 'C003.tmp', 'C004.TMP', 'other/C005.mp4']) put(n, 'x', OLD);
    w.start();
    await clock.advance(SETTLE * 3);
    expect(names()).toEqual([]);
  });

  test('x.part renamed to x.mp4: ready at once when written long ago, after settleMs when fresh', async () => {
    const { dir, clock, w, put, names } = setup();
    put('D001.mp4.part', 'x', OLD);
    put('D002.mp4.part', 'y');
    w.start();
    await clock.advance(TICK);
    renameSync(path.join(dir, 'D001.mp4.part'), path.join(dir, 'D001.mp4'));
    renameSync(path.join(dir, 'D002.mp4.part'), path.join(dir, 'D002.mp4'));
    put('D003.mp4.part', 'z');
    await clock.advance(TICK);
    expect(names()).toEqual(['D001.mp4']);
    await clock.advance(SETTLE);
    expect(names()).toEqual(['D001.mp4', 'D002.mp4']);
  });

  test('several ready at once are reported oldest first', () => {
    const { w, put, names } = setup();
    put('new.mp4', 'x', OLD);
    put('older.mp4', 'x', OLD * 2);
    put('video/oldest.mp4', 'x', OLD * 3);
    w.start();
    expect(names()).toEqual(['oldest.mp4', 'older.mp4', 'new.mp4']);
  });
});

describe('MediaWatcher: folders', () => {
  test("a channel's sub-folder sets channelKey; other folders and anything deeper are ignored", () => {
    const { w, put, seen } = setup();
    put('video/V1.mov', 'x', OLD);
    put('audio/S1.wav', 'x', OLD + 1);
    put('top.mp4', 'x', OLD + 2);
    put('misc/M1.mp4', 'x', OLD);
    put('video/deeper/V2.mov', 'x', OLD);
    w.start();
    expect(seen.map((f) => [f.name, f.channelKey])).toEqual([
      ['top.mp4', undefined],
      ['S1.wav', 'audio'],
      ['V1.mov', 'video'],
    ]);
  });

  test('a missing media dir is fine: files are found once it exists', async () => {
    const { dir, clock, w, put, names } = setup({}, false);
    w.start();
    await clock.advance(TICK * 2);
    expect(names()).toEqual([]);
    mkdirSync(dir);
    put('late.mp4', 'x', OLD);
    put('audio/late.wav', 'x', OLD - 1);
    await clock.advance(TICK);
    expect(names()).toEqual(['late.mp4', 'late.wav']);
    // And it may go away again (card pulled) without harm.
    rmSync(dir, { recursive: true });
    await clock.advance(TICK * 2);
    expect(names()).toHaveLength(2);
  });

  test('a media dir that does not exist is warned about once, shown until it appears, and its clips then taken by themselves', async () => {
    const lines: string[] = [];
    let changes = 0;
    const { dir, clock, w, put, names } = setup({ logger: createLogger('debug', { write: (l: string) => void lines.push(l) }), onSkipped: () => void changes++ }, false);
    const warnings = (): string[] => lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level === 40).map((l) => l.msg);
    w.start();
    await clock.advance(TICK * 5);
    expect(warnings()).toEqual([`media dir '${dir}' does not exist: nothing is uploaded from it until it does (looked for every 5 s of agent time; check the media dir setting for a typo)`]);
    expect(w.missingDir()).toBe(dir);
    expect(changes).toBe(1);
    mkdirSync(dir);
    put('late.mp4', 'x', OLD);
    await clock.advance(TICK);
    expect(w.missingDir()).toBeUndefined();
    expect(names()).toEqual(['late.mp4']);
    expect(changes).toBe(2);
    expect(lines.some((l) => l.includes('is there now: its clips are uploaded'))).toBe(true);
    expect(warnings()).toHaveLength(1);
  });

  test('symlinks count only when they resolve to a regular file inside the dir', () => {
    const { base, dir, w, put, names } = setup();
    const inside = put('real.mp4', 'x', OLD);
    mkdirSync(path.join(dir, 'video'));
    symlinkSync(inside, path.join(dir, 'video', 'link-in.mp4'));
    writeFileSync(path.join(base, 'secret.txt'), 'not yours');
    utimesSync(path.join(base, 'secret.txt'), 0, 0);
    symlinkSync(path.join(base, 'secret.txt'), path.join(dir, 'link-out.txt'));
    symlinkSync(path.join(dir, 'nowhere'), path.join(dir, 'dangling.mp4'));
    symlinkSync(path.join(dir, 'video'), path.join(dir, 'link-dir'));
    w.start();
    // One file behind two names is still one file, under its own name; the link is said to be skipped, with why.
    expect(names()).toEqual(['real.mp4']);
    expect(w.skipped().entries.find((e) => e.name === 'video/link-in.mp4')?.reason).toBe("a second name for 'real.mp4', which is uploaded once, under that name");
  });

  test('a clip rewritten in place goes under its own name, never under a link to it that the scan sees first', async () => {
    // The link listed first, so it would settle first: the media fuzzer's seed 103 saw the rewritten clip go under the link's name.
    const linkFirst = (d: string): string[] => readdirSync(d).sort((a, b) => Number(b.startsWith('a-link')) - Number(a.startsWith('a-link')) || (a < b ? -1 : 1));
    const { dir, clock, w, put, seen } = setup({ readdir: linkFirst });
    const clip = put('take.mp4', 'one', OLD);
    symlinkSync(clip, path.join(dir, 'a-link.mp4'));
    w.start();
    await clock.advance(SETTLE * 2);
    put('take.mp4', 'two, longer');
    await clock.advance(SETTLE * 3);
    expect(seen.map((f) => [f.name, f.size])).toEqual([
      ['take.mp4', 3],
      ['take.mp4', 11],
    ]);
    expect(w.skipped().entries.find((e) => e.name === 'a-link.mp4')?.reason).toBe("a second name for 'take.mp4', which is uploaded once, under that name");
  });

  test('a clip renamed, with a link left at its old name: it goes again under its new, own name, and the link is its second name', async () => {
    const { dir, clock, w, put, names } = setup();
    put('x.mp4', 'take', OLD);
    w.start();
    expect(names()).toEqual(['x.mp4']);
    renameSync(path.join(dir, 'x.mp4'), path.join(dir, 'a.mp4'));
    symlinkSync(path.join(dir, 'a.mp4'), path.join(dir, 'x.mp4'));
    await clock.advance(TICK * 2);
    expect(names()).toEqual(['x.mp4', 'a.mp4']);
    expect(w.skipped().entries).toEqual([{ name: 'x.mp4', reason: "a second name for 'a.mp4', which is uploaded once, under that name" }]);
  });

  test('a link into a channel folder the watcher cannot list is how the clip goes: the folder is no place it is taken from', async () => {
    const eacces = (d: string): string[] => {
      if (path.basename(d) === 'video') throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
      return readdirSync(d);
    };
    const { dir, clock, w, put, names } = setup({ readdir: eacces });
    const clip = put('video/a.mp4', 'take', OLD);
    symlinkSync(clip, path.join(dir, 'x.mp4'));
    w.start();
    await clock.advance(TICK * 2);
    expect(names()).toEqual(['x.mp4']);
  });

  test('a link to a file the watcher does not take under its own name (deeper than a channel folder) is how that file goes', () => {
    const { dir, w, put, names } = setup();
    const deep = put('video/day1/deep.mp4', 'x', OLD);
    symlinkSync(deep, path.join(dir, 'deep-link.mp4'));
    w.start();
    expect(names()).toEqual(['deep-link.mp4']);
  });
});

describe('MediaWatcher: once per file version', () => {
  test('reported once per name and version: renamed means offered again under the new name (the index, not the watcher, knows what went); rewritten too', async () => {
    const { dir, clock, w, put, stamp, seen } = setup();
    put('E001.mp4', 'one', OLD);
    w.start();
    await clock.advance(SETTLE * 3);
    expect(seen).toHaveLength(1);
    // A clip renamed while it waited in the queue would otherwise never go: its queued item finds the old path gone.
    renameSync(path.join(dir, 'E001.mp4'), path.join(dir, 'E001-renamed.mp4'));
    await clock.advance(SETTLE * 3);
    expect(seen.map((f) => [f.name, f.size])).toEqual([
      ['E001.mp4', 3],
      ['E001-renamed.mp4', 3],
    ]);
    await clock.advance(SETTLE * 3);
    expect(seen).toHaveLength(2);

    put('E001-renamed.mp4', 'two', 0, true);
    await clock.advance(SETTLE + TICK);
    expect(seen.map((f) => [f.name, f.size])).toEqual([
      ['E001.mp4', 3],
      ['E001-renamed.mp4', 3],
      ['E001-renamed.mp4', 6],
    ]);
    expect(seen[2]!.ino).toBe(seen[0]!.ino);
    // Same size, new mtime: a new version too.
    stamp(path.join(dir, 'E001-renamed.mp4'), 5);
    await clock.advance(SETTLE + TICK);
    expect(seen).toHaveLength(4);
  });

  test('a listener that throws is logged and the watcher carries on', async () => {
    const lines: string[] = [];
    const { clock, w, put } = setup({
      onReady: () => {
        throw new Error('queue full');
      },
      logger: createLogger('debug', { write: (l: string) => void lines.push(l) }),
    });
    put('F001.mp4', 'x', OLD);
    w.start();
    expect(lines.some((l) => l.includes('media ready listener failed') && l.includes('queue full'))).toBe(true);
    put('F002.mp4', 'x', OLD);
    await clock.advance(TICK);
    expect(lines.filter((l) => l.includes('media ready listener failed'))).toHaveLength(2);
  });

  test('stop cancels every timer and closes the watches', async () => {
    const closed: string[] = [];
    const watch: WatchDir = (d) => ({ close: () => void closed.push(d) });
    const { clock, w, put, dir } = setup({ watch });
    put('video/G001.mp4', 'x');
    w.start();
    expect(clock.pendingCount).toBeGreaterThan(0);
    w.stop();
    expect(clock.pendingCount).toBe(0);
    expect(closed.sort()).toEqual([dir, path.join(dir, 'video')]);
  });
});

describe('MediaWatcher: watches and read errors', () => {
  interface FakeWatch {
    dir: string;
    fire: (type: string, name: string | undefined) => void;
    die: (err: unknown) => void;
  }

  test('an event brings the scan forward, coalesced; changes of a file already waiting do not', async () => {
    const armed: FakeWatch[] = [];
    const watch: WatchDir = (dir, fire, die) => {
      armed.push({ dir, fire, die });
      return { close: () => undefined };
    };
    const { dir, clock, w, put, names } = setup({ watch, intervalMs: 3_600_000 });
    put('growing.mp4', 'x');
    w.start();
    expect(armed.map((a) => a.dir)).toEqual([dir]);
    const root = armed[0]!;
    const before = clock.pendingCount;
    root.fire('change', 'growing.mp4');
    root.fire('change', 'H001.mp4.part');
    expect(clock.pendingCount).toBe(before);

    put('H002.mp4', 'x', OLD);
    root.fire('rename', 'H002.mp4');
    root.fire('rename', 'H002.mp4');
    root.fire('change', undefined);
    expect(clock.pendingCount).toBe(before + 1);
    await clock.advance(WATCH_COALESCE_MS);
    expect(names()).toEqual(['H002.mp4']);
  });

  test('a watch that cannot start or dies never crashes the watcher; it is armed again by the tick', async () => {
    let calls = 0;
    const armed: FakeWatch[] = [];
    const watch: WatchDir = (dir, fire, die) => {
      calls += 1;
      if (calls === 1) throw Object.assign(new Error('no inotify watches left'), { code: 'ENOSPC' });
      armed.push({ dir, fire, die });
      return { close: () => undefined };
    };
    const { clock, w, put, names } = setup({ watch });
    w.start();
    await clock.advance(TICK);
    expect(armed).toHaveLength(1);
    put('I001.mp4', 'x', OLD);
    armed[0]!.die(new Error('EIO'));
    expect(names()).toEqual(['I001.mp4']);
    // No re-arm until the next tick: a failing watch cannot spin.
    expect(armed).toHaveLength(1);
    await clock.advance(TICK);
    expect(armed).toHaveLength(2);
  });

  test('the real fs.watch brings a scan forward', async () => {
    const { clock, w, put, names } = setup({ watch: undefined, intervalMs: 3_600_000 });
    w.start();
    const armed = clock.pendingCount;
    put('J001.mp4', 'x', OLD);
    // The event in real time, however late a loaded machine delivers it; agent time stands still meanwhile.
    await until('the watch event', () => clock.pendingCount > armed);
    await clock.advance(WATCH_COALESCE_MS);
    expect(names()).toEqual(['J001.mp4']);
  });

  test('a folder that cannot be read is logged once, keeps its waiting files, and is read again later', async () => {
    const lines: string[] = [];
    let broken = false;
    const { dir, clock, w, put, names } = setup({
      readdir: (d) => {
        if (broken && d === dir) throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
        return readdirSync(d);
      },
      logger: createLogger('debug', { write: (l: string) => void lines.push(l) }),
    });
    put('K001.mp4', 'x');
    w.start();
    broken = true;
    await clock.advance(TICK * 3);
    expect(lines.filter((l) => l.includes('cannot read a media directory'))).toHaveLength(1);
    expect(names()).toEqual([]);
    broken = false;
    // The settle clock kept running through the outage: ready on the first good look.
    await clock.advance(TICK);
    expect(names()).toEqual(['K001.mp4']);
    expect(lines.some((l) => l.includes('media directory readable again'))).toBe(true);
  });
});
