// The media watcher with real-time uploads on (onGrowing): a recorder's
// working name NAME.EXT.part is reported at once as a clip in progress (named
// NAME.EXT), once per file, in the media dir and in channel folders; a file
// written in place is reported once it is seen growing; with onGrowing
// absent, nothing changes (.part stays scratch). FakeClock over real temp dirs.
import { afterAll, afterEach, describe, expect, test } from '@jest/globals';
import { appendFileSync, mkdirSync, mkdtempSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MediaWatcher, type GrowingFile, type MediaWatcherOptions, type ReadyFile } from '../../agent/uploads/media-watcher.js';
import { FakeClock } from '../support/fake-clock.js';

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

function setup(extra: Partial<MediaWatcherOptions> = {}) {
  const base = mkdtempSync(path.join(tmpdir(), 'c2c-growing-'));
  temps.push(base);
  const dir = path.join(base, 'media');
  mkdirSync(dir);
  const clock = new FakeClock(1_000_000, Date.now());
  const ready: ReadyFile[] = [];
  const growing: GrowingFile[] = [];
  const w = new MediaWatcher({ dir, channelKeys: ['video'], clock, settleMs: SETTLE, intervalMs: TICK, watch: null, onReady: (f) => ready.push(f), onGrowing: (f) => growing.push(f), ...extra });
  watchers.push(w);
  return { dir, clock, w, ready, growing };
}

describe('MediaWatcher with real-time uploads on', () => {
  test('NAME.EXT.part is reported at once, named NAME.EXT, once however often it grows; its renamed file is ready as before', async () => {
    const { dir, clock, w, ready, growing } = setup();
    const part = path.join(dir, 'take.mov.part');
    writeFileSync(part, 'a');
    w.start();
    expect(growing).toMatchObject([{ path: part, finalPath: path.join(dir, 'take.mov'), name: 'take.mov', size: 1, ino: statSync(part).ino }]);
    for (let i = 0; i < 4; i++) {
      appendFileSync(part, 'more');
      await clock.advance(TICK);
    }
    expect(growing).toHaveLength(1);
    expect(ready).toEqual([]);
    renameSync(part, path.join(dir, 'take.mov'));
    await clock.advance(TICK);
    await clock.advance(SETTLE);
    expect(growing).toHaveLength(1);
    expect(ready).toMatchObject([{ name: 'take.mov', ino: growing[0]!.ino }]);
  });

  test('in a channel folder it carries the channel; dot files, .tmp, a bare ".part" and links are not recordings', async () => {
    const { dir, w, growing } = setup();
    mkdirSync(path.join(dir, 'video'));
    writeFileSync(path.join(dir, 'video', 'c1.mxf.part'), 'x');
    writeFileSync(path.join(dir, '.hidden.mov.part'), 'x');
    writeFileSync(path.join(dir, 'x.mov.tmp'), 'x');
    writeFileSync(path.join(dir, '.part'), 'x');
    symlinkSync(path.join(dir, 'video', 'c1.mxf.part'), path.join(dir, 'link.mov.part'));
    w.start();
    expect(growing.map((g) => [g.name, g.channelKey])).toEqual([['c1.mxf', 'video']]);
  });

  test('a file written in place is reported when a look finds it grown, once', async () => {
    const { dir, clock, w, growing, ready } = setup();
    const file = path.join(dir, 'A001.wav');
    writeFileSync(file, 'a');
    w.start();
    expect(growing).toEqual([]);
    appendFileSync(file, 'bb');
    await clock.advance(TICK);
    expect(growing).toMatchObject([{ path: file, finalPath: file, name: 'A001.wav', size: 3 }]);
    appendFileSync(file, 'cc');
    await clock.advance(TICK);
    expect(growing).toHaveLength(1);
    await clock.advance(SETTLE);
    expect(ready).toMatchObject([{ name: 'A001.wav', size: 5 }]);
  });

  test('without onGrowing a .part stays a writer\'s scratch and nothing is reported as growing', async () => {
    const { dir, w, ready } = setup({ onGrowing: undefined });
    writeFileSync(path.join(dir, 'take.mov.part'), 'a');
    w.start();
    expect(ready).toEqual([]);
    expect(w.skipped().entries).toEqual([]);
  });
});
