// Media-dir entries the watcher will not take (issue 18, cause 8): each is
// said once, as a warning with its reason and its name quoted, and listed
// by skipped() (what `queue` and the status document show), whatever the
// number of rescans; the list is capped and the rest only counted, so a dir
// of junk costs a number; an entry fixed or removed leaves the list.
import { afterAll, afterEach, describe, expect, test } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLogger } from '../../agent/lib/logger.js';
import { MediaWatcher, SKIPPED_LIST_MAX, type ReadyFile } from '../../agent/uploads/media-watcher.js';
import { FakeClock } from '../support/fake-clock.js';

const TICK = 5_000;
const temps: string[] = [];
const watchers: MediaWatcher[] = [];
const servers: Server[] = [];
afterEach(() => {
  for (const w of watchers.splice(0)) w.stop();
  for (const s of servers.splice(0)) s.close();
});
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

function setup() {
  const base = mkdtempSync(path.join(tmpdir(), 'c2c-skipped-'));
  temps.push(base);
  const dir = path.join(base, 'media');
  mkdirSync(dir);
  const clock = new FakeClock(1_000_000, Date.UTC(2026, 0, 1));
  const seen: ReadyFile[] = [];
  const lines: Array<Record<string, unknown>> = [];
  let changes = 0;
  const w = new MediaWatcher({
    dir,
    channelKeys: ['video', 'audio'],
    clock,
    settleMs: 10_000,
    intervalMs: TICK,
    watch: null,
    onReady: (f) => seen.push(f),
    onSkipped: () => void changes++,
    logger: createLogger('debug', { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) }),
  });
  watchers.push(w);
  const old = (p: string): void => {
    const t = (clock.wallNow() - 3_600_000) / 1000;
    utimesSync(p, t, t);
  };
  const warnings = (): string[] => lines.filter((l) => l.level === 40).map((l) => String(l.msg));
  return { base, dir, clock, seen, w, lines, warnings, old, changes: () => changes };
}

describe('MediaWatcher: entries it will not take', () => {
  test('each kind is said once with its reason and listed; a good file beside them is still taken', async () => {
    const { base, dir, clock, seen, w, warnings, old } = setup();
    const expected: Record<string, RegExp> = {};
    symlinkSync(path.join(dir, 'b.mp4'), path.join(dir, 'a.mp4'));
    symlinkSync(path.join(dir, 'a.mp4'), path.join(dir, 'b.mp4'));
    expected['a.mp4'] = /symbolic link loop/;
    expected['b.mp4'] = /symbolic link loop/;
    symlinkSync(path.join(dir, 'none.mp4'), path.join(dir, 'dangling.mp4'));
    expected['dangling.mp4'] = /target does not exist/;
    writeFileSync(path.join(base, 'elsewhere.mp4'), 'x');
    symlinkSync(path.join(base, 'elsewhere.mp4'), path.join(dir, 'out.mp4'));
    expected['out.mp4'] = /outside the media dir/;
    symlinkSync('/dev/null', path.join(dir, 'null.mp4'));
    expected['null.mp4'] = /outside the media dir/;
    mkdirSync(path.join(dir, 'inner'));
    symlinkSync(path.join(dir, 'inner'), path.join(dir, 'to-folder.mp4'));
    expected['to-folder.mp4'] = /symbolic link to a directory/;
    expected.inner = /folder that is not a channel's \(channel folders: video, audio\)/;
    execFileSync('mkfifo', [path.join(dir, 'pipe.mp4')]);
    expected['pipe.mp4'] = /a FIFO \(named pipe\), not a regular file/;
    const server = createServer();
    servers.push(server);
    await new Promise<void>((res) => server.listen(path.join(dir, 'sock.mp4'), res));
    expected['sock.mp4'] = /a socket, not a regular file/;
    if (spawnSync('mknod', [path.join(dir, 'dev.mp4'), 'c', '1', '3']).status === 0) expected['dev.mp4'] = /a character device, not a regular file/;
    writeFileSync(path.join(dir, 'other-file-in-folder'), 'x');
    mkdirSync(path.join(dir, 'video', 'deeper'), { recursive: true });
    expected['video/deeper'] = /folder inside a channel folder/;
    symlinkSync(path.join(dir, 'inner'), path.join(dir, 'audio'));
    expected.audio = /where a channel folder should be/;
    writeFileSync(Buffer.concat([Buffer.from(dir), Buffer.from('/bad-'), Buffer.from([0xc3, 0x28]), Buffer.from('.mp4')]), 'x');
    expected['bad-\\xc3(.mp4'] = /not valid UTF-8/;
    writeFileSync(path.join(dir, '.hidden'), 'x');
    writeFileSync(path.join(dir, 'x.part'), 'x');
    const good = path.join(dir, 'good.mp4');
    writeFileSync(good, 'x');
    old(good);
    old(path.join(dir, 'other-file-in-folder'));

    w.start();
    for (let i = 0; i < 5; i++) await clock.advance(TICK);
    const listed = Object.fromEntries(w.skipped().entries.map((e) => [e.name, e.reason]));
    expect(Object.keys(listed).sort()).toEqual(Object.keys(expected).sort());
    for (const [name, reason] of Object.entries(expected)) expect({ name, reason: listed[name] }).toEqual({ name, reason: expect.stringMatching(reason) });
    expect(w.skipped().more).toBe(0);
    // Said once each, across five rescans, with the name quoted; scratch names are writers' business and said nothing.
    const said = warnings().filter((m) => m.startsWith('media dir: will not upload'));
    expect(said).toHaveLength(Object.keys(expected).length);
    for (const name of Object.keys(expected)) expect(said.filter((m) => m.includes(`'${JSON.stringify(name).slice(1, -1)}'`))).toHaveLength(1);
    expect(seen.map((f) => f.name).sort()).toEqual(['good.mp4', 'other-file-in-folder']);
  });

  // Issue 27: these were taken by nobody and named nowhere: the folder was listed, not the clip in it,
  // and a name that is not UTF-8 was listed with U+FFFD, which matches no name on disk.
  test('a clip in a folder that is not a channel\'s, in a folder named like a clip, deeper in a channel folder, or with a name that is not UTF-8: each listed under its own name with a reason, said once', async () => {
    const { dir, clock, seen, w, warnings, old } = setup();
    const file = (rel: string | Buffer): void => {
      const p = Buffer.isBuffer(rel) ? Buffer.concat([Buffer.from(`${dir}/`), rel]) : path.join(dir, rel);
      mkdirSync(path.dirname(p.toString()), { recursive: true });
      writeFileSync(p, 'x');
      const t = (clock.wallNow() - 3_600_000) / 1000;
      utimesSync(p, t, t);
    };
    file('not-a-channel/sub-001.mp4');
    file('not-a-channel/.scratch.mp4');
    file('not-a-channel/sub/deeper.mp4');
    file('dir.mp4/inner.mp4');
    file('video/deeper/clip.mp4');
    file(Buffer.concat([Buffer.from('bad'), Buffer.from([0xff, 0xfe]), Buffer.from('.mp4')]));
    // Two names that read as the same text, one of them inside a folder not taken.
    file(Buffer.concat([Buffer.from('twin'), Buffer.from([0xff]), Buffer.from('.mp4')]));
    file(Buffer.concat([Buffer.from('twin'), Buffer.from([0xfe]), Buffer.from('.mp4')]));
    file(Buffer.concat([Buffer.from('not-a-channel/'), Buffer.from([0xe9]), Buffer.from('t\u00e9.mp4')]));
    // U+FFFD written as UTF-8 is a valid name: taken.
    file('real-\ufffd.mp4');
    file('video/good.mp4');
    old(path.join(dir, 'video/good.mp4'));

    w.start();
    for (let i = 0; i < 5; i++) await clock.advance(TICK);
    const listed = Object.fromEntries(w.skipped().entries.map((e) => [e.name, e.reason]));
    expect(listed).toEqual({
      'not-a-channel': expect.stringMatching(/^a folder that is not a channel's \(channel folders: video, audio\): nothing in it is uploaded$/),
      'not-a-channel/sub-001.mp4': expect.stringMatching(/^in 'not-a-channel', a folder that is not a channel's \(channel folders: video, audio\): only files directly in the media dir or in a channel folder are uploaded$/),
      'not-a-channel/sub': expect.stringMatching(/^in 'not-a-channel', a folder that is not a channel's/),
      'not-a-channel/\\xe9t\u00e9.mp4': expect.stringMatching(/^in 'not-a-channel', a folder that is not a channel's/),
      'dir.mp4': expect.stringMatching(/^a folder, though named like a file \(\.mp4\), that is not a channel's/),
      'dir.mp4/inner.mp4': expect.stringMatching(/^in 'dir\.mp4', a folder that is not a channel's/),
      'video/deeper': expect.stringMatching(/^a folder inside a channel folder: nothing deeper than the channel folder is uploaded$/),
      'video/deeper/clip.mp4': expect.stringMatching(/^in 'video\/deeper', a folder inside a channel folder/),
      'bad\\xff\\xfe.mp4': expect.stringMatching(/^its name is not valid UTF-8 \(shown with \\xHH for the bytes that are not\): rename it/),
      'twin\\xff.mp4': expect.stringMatching(/not valid UTF-8/),
      'twin\\xfe.mp4': expect.stringMatching(/not valid UTF-8/),
    });
    const said = warnings().filter((m) => m.startsWith('media dir: will not upload'));
    expect(said).toHaveLength(Object.keys(listed).length);
    expect(seen.map((f) => f.name).sort()).toEqual(['good.mp4', 'real-\ufffd.mp4']);
    // Moved out, the clip leaves the list (and is taken where it went).
    renameSync(path.join(dir, 'not-a-channel/sub-001.mp4'), path.join(dir, 'sub-001.mp4'));
    await clock.advance(TICK);
    expect(w.skipped().entries.map((e) => e.name)).not.toContain('not-a-channel/sub-001.mp4');
    expect(seen.map((f) => f.name)).toContain('sub-001.mp4');
  });

  test('an entry removed or fixed leaves the list; one that comes back is said again', async () => {
    const { dir, clock, w, warnings, changes } = setup();
    execFileSync('mkfifo', [path.join(dir, 'p.mp4')]);
    w.start();
    expect(w.skipped().entries).toEqual([{ name: 'p.mp4', reason: 'a FIFO (named pipe), not a regular file' }]);
    const before = changes();
    unlinkSync(path.join(dir, 'p.mp4'));
    await clock.advance(TICK);
    expect(w.skipped().entries).toEqual([]);
    expect(changes()).toBeGreaterThan(before);
    execFileSync('mkfifo', [path.join(dir, 'p.mp4')]);
    await clock.advance(TICK);
    expect(warnings().filter((m) => m.includes("'p.mp4'"))).toHaveLength(2);
  });

  test(`at most ${SKIPPED_LIST_MAX} listed and said one by one; the rest counted, said once together`, async () => {
    const { dir, clock, w, warnings } = setup();
    const n = SKIPPED_LIST_MAX + 30;
    for (let i = 0; i < n; i++) symlinkSync(path.join(dir, `missing-${i}`), path.join(dir, `link-${String(i).padStart(4, '0')}.mp4`));
    w.start();
    for (let i = 0; i < 3; i++) await clock.advance(TICK);
    expect(w.skipped().entries).toHaveLength(SKIPPED_LIST_MAX);
    expect(w.skipped().more).toBe(30);
    expect(warnings().filter((m) => m.startsWith('media dir: will not upload'))).toHaveLength(SKIPPED_LIST_MAX);
    expect(warnings().filter((m) => /30 more entries will not be uploaded/.test(m))).toHaveLength(1);
    // Room made in the list (known at the end of a scan): counted ones come in at the next, and are said then.
    for (const e of w.skipped().entries.slice(0, 10)) unlinkSync(path.join(dir, e.name));
    await clock.advance(TICK);
    expect(w.skipped().entries).toHaveLength(SKIPPED_LIST_MAX - 10);
    await clock.advance(TICK);
    expect(w.skipped().entries).toHaveLength(SKIPPED_LIST_MAX);
    expect(w.skipped().more).toBe(20);
    expect(warnings().filter((m) => m.startsWith('media dir: will not upload'))).toHaveLength(SKIPPED_LIST_MAX + 10);
  });

  test('100,000 FIFOs: the list stays at its cap, the rest is one number, and the log says each listed one once', async () => {
    const lines: string[] = [];
    const clock = new FakeClock(1_000_000, Date.UTC(2026, 0, 1));
    const names = Array.from({ length: 100_000 }, (_, i) => `junk-${i}.mp4`);
    const fifo = { dev: 1, ino: 1, size: 0, mtimeMs: 0, isFile: () => false, isDirectory: () => false, isSymbolicLink: () => false, isFIFO: () => true };
    const w = new MediaWatcher({
      dir: '/media',
      channelKeys: [],
      clock,
      settleMs: 10_000,
      intervalMs: TICK,
      watch: null,
      exists: () => true,
      readdir: () => names,
      stat: () => fifo,
      onReady: () => undefined,
      logger: createLogger('debug', { write: (l: string) => void lines.push(l) }),
    });
    watchers.push(w);
    w.start();
    for (let i = 0; i < 3; i++) await clock.advance(TICK);
    expect(w.skipped().entries).toHaveLength(SKIPPED_LIST_MAX);
    expect(w.skipped().more).toBe(100_000 - SKIPPED_LIST_MAX);
    expect(lines).toHaveLength(SKIPPED_LIST_MAX + 1);
  });
});
