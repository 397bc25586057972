// Channel detection: which profile keys are present under a host root, the
// refusal of paths that leave it, and the detector's timer, watch and
// debounce behaviour on a FakeClock over a real temp dir.
import { afterAll, afterEach, describe, expect, test } from '@jest/globals';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ChannelDetector, detectChannels, underRoot, watchDirs } from '../../agent/channels/detect.js';
import type { WatchDir } from '../../agent/lib/dir-watcher.js';
import type { ChannelSpec } from '../../agent/config/types.js';
import { FakeClock } from '../support/fake-clock.js';
import { until, type UntilOptions } from '../support/until.js';

const roots: string[] = [];
function hostRoot(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'c2c-detect-'));
  roots.push(dir);
  return dir;
}
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

const spec = (key: string, ...anyPath: string[]): ChannelSpec => ({ key, name: key, assetType: 'video', deviceModelId: `m-${key}`, detect: { anyPath } });
const SPECS = [spec('video', 'dev/video0', 'sys/class/video4linux/video0'), spec('audio', 'proc/asound/card1'), spec('tc', 'dev/ttyUSB0', 'dev/serial/by-id/usb-ltc')];

function touch(root: string, rel: string): void {
  mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  writeFileSync(path.join(root, rel), '');
}
const rm = (root: string, rel: string): void => rmSync(path.join(root, rel), { force: true, recursive: true });
const keys = (s: Set<string>): string[] => [...s].sort();
/**
 * The watch's event is real I/O, looked for between turns of an agent second; never past 50 agent
 * minutes, so a scan seen came from the watch and not from the hourly timer.
 */
const watchOnly = (clock: FakeClock): UntilOptions => ({ clock, stepMs: 1_000, agentMs: 3_000_000, everyMs: 10 });

describe('detectChannels', () => {
  test('a key is present when any of its paths exists under the root', () => {
    const root = hostRoot();
    expect(keys(detectChannels(SPECS, root))).toEqual([]);
    touch(root, 'sys/class/video4linux/video0');
    touch(root, 'dev/serial/by-id/usb-ltc');
    expect(keys(detectChannels(SPECS, root))).toEqual(['tc', 'video']);
    touch(root, 'proc/asound/card1');
    expect(keys(detectChannels(SPECS, root))).toEqual(['audio', 'tc', 'video']);
  });

  test('paths that leave the root, absolute paths and the root itself are refused, never probed', () => {
    const root = hostRoot();
    const probed: string[] = [];
    const exists = (p: string): boolean => (probed.push(p), true);
    const bad = [spec('up', '../outside'), spec('deep', 'dev/../../etc/passwd'), spec('abs', '/etc/passwd'), spec('self', '.'), spec('empty', ''), spec('nul', 'dev/x\0y')];
    expect(keys(detectChannels(bad, root, exists))).toEqual([]);
    expect(probed).toEqual([]);
    expect(underRoot(root, 'dev/../dev/video0')).toBe(path.join(root, 'dev/video0'));
    expect(underRoot(root, 'dev/video0/..')).toBe(path.join(root, 'dev'));
    expect(underRoot(root, '..')).toBeUndefined();
    // A sibling whose name starts like the root is outside it.
    expect(underRoot(root, `../${path.basename(root)}-evil/x`)).toBeUndefined();
  });

  test('a probe that throws counts as absent', () => {
    const exists = (): boolean => {
      throw new Error('EACCES');
    };
    expect(keys(detectChannels(SPECS, hostRoot(), exists))).toEqual([]);
  });

  test('watchDirs: the nearest existing ancestor of each parent, inside the root', () => {
    const root = hostRoot();
    expect(watchDirs(SPECS, root)).toEqual([root]);
    mkdirSync(path.join(root, 'dev/serial'), { recursive: true });
    mkdirSync(path.join(root, 'sys/class'), { recursive: true });
    expect(watchDirs(SPECS, root)).toEqual([path.join(root, 'dev'), path.join(root, 'dev/serial'), root, path.join(root, 'sys/class')].sort());
  });
});

describe('ChannelDetector', () => {
  const detectors: ChannelDetector[] = [];
  afterEach(() => {
    for (const d of detectors.splice(0)) d.stop();
  });

  function detector(root: string, clock: FakeClock, extra: Partial<ConstructorParameters<typeof ChannelDetector>[0]> = {}): { seen: string[][] } {
    const seen: string[][] = [];
    const d = new ChannelDetector({ specs: SPECS, hostRoot: root, clock, onChange: (s) => seen.push(keys(s)), intervalMs: 1_000, debounceMs: 5_000, ...extra });
    detectors.push(d);
    d.start();
    return { seen };
  }

  test('the constructor does nothing; start reports the initial set once; stop cancels its timers', async () => {
    const root = hostRoot();
    touch(root, 'dev/video0');
    const clock = new FakeClock();
    const seen: string[][] = [];
    const d = new ChannelDetector({ specs: SPECS, hostRoot: root, clock, onChange: (s) => seen.push(keys(s)), watch: null });
    expect(clock.pendingCount).toBe(0);
    d.start();
    expect(seen).toEqual([['video']]);
    expect(clock.nextAt()).toBe(clock.now() + 30_000);
    await clock.advance(120_000);
    expect(seen).toEqual([['video']]);
    d.stop();
    expect(clock.pendingCount).toBe(0);
  });

  test('files appearing and vanishing are reported after the debounce, timer-driven', async () => {
    const root = hostRoot();
    const clock = new FakeClock();
    const { seen } = detector(root, clock, { watch: null });
    expect(seen).toEqual([[]]);
    touch(root, 'dev/video0');
    await clock.advance(1_000); // the scan sees it: the wait starts
    await clock.advance(4_999);
    expect(seen).toEqual([[]]);
    await clock.advance(1);
    expect(seen).toEqual([[], ['video']]);
    rm(root, 'dev/video0');
    touch(root, 'proc/asound/card1');
    await clock.advance(6_000);
    expect(seen).toEqual([[], ['video'], ['audio']]);
    await clock.advance(60_000);
    expect(seen).toHaveLength(3);
  });

  test('flapping within the debounce is reported once, when it stops', async () => {
    const root = hostRoot();
    const clock = new FakeClock();
    const { seen } = detector(root, clock, { watch: null });
    for (let i = 0; i < 10; i++) {
      touch(root, 'dev/ttyUSB0');
      await clock.advance(2_000);
      rm(root, 'dev/ttyUSB0');
      await clock.advance(2_000);
    }
    expect(seen).toEqual([[]]);
    touch(root, 'dev/ttyUSB0');
    await clock.advance(30_000);
    expect(seen).toEqual([[], ['tc']]);
    // A vanish and return inside the debounce is no change at all.
    rm(root, 'dev/ttyUSB0');
    await clock.advance(3_000);
    touch(root, 'dev/ttyUSB0');
    await clock.advance(30_000);
    expect(seen).toEqual([[], ['tc']]);
  });

  test('a change between the last scan and the settle time restarts the wait', async () => {
    const root = hostRoot();
    const clock = new FakeClock();
    // Scans only from the timer, and rarely: the settle check must look again itself.
    const { seen } = detector(root, clock, { watch: null, intervalMs: 4_000 });
    touch(root, 'dev/video0');
    await clock.advance(4_000);
    touch(root, 'proc/asound/card1');
    await clock.advance(5_000); // settle at 9 000 finds {video, audio}: not what it waited for
    expect(seen).toEqual([[]]);
    await clock.advance(5_000);
    expect(seen).toEqual([[], ['audio', 'video']]);
  });

  test('file-system events rescan at once (a real watch on a temp dir)', async () => {
    const root = hostRoot();
    mkdirSync(path.join(root, 'dev'));
    const clock = new FakeClock();
    // The timer alone would take an hour: only the watch can see the file in time.
    const { seen } = detector(root, clock, { intervalMs: 3_600_000 });
    touch(root, 'dev/video0');
    await until('the watch seeing video0', () => seen.length >= 2, watchOnly(clock));
    expect(seen).toEqual([[], ['video']]);
    // A directory made after start is watched from its existing ancestor, then itself.
    touch(root, 'proc/asound/card1');
    await until('the watch seeing card1 in a new folder', () => seen.length >= 3, watchOnly(clock));
    expect(seen).toEqual([[], ['video'], ['audio', 'video']]);
    rm(root, 'proc/asound/card1');
    await until('the watch seeing card1 gone', () => seen.length >= 4, watchOnly(clock));
    expect(seen).toEqual([[], ['video'], ['audio', 'video'], ['video']]);
  });

  test('a watch that cannot start or dies never crashes the detector, and is re-armed by the next tick', async () => {
    const root = hostRoot();
    mkdirSync(path.join(root, 'dev'));
    const clock = new FakeClock();
    const armed: Array<{ dir: string; onEvent: () => void; onDead: (e: unknown) => void; closed: boolean }> = [];
    let refuse = true;
    const watch: WatchDir = (dir, onEvent, onDead) => {
      if (refuse) throw Object.assign(new Error('ENOSPC'), { code: 'ENOSPC' });
      const w = { dir, onEvent, onDead, closed: false };
      armed.push(w);
      return { close: () => void (w.closed = true) };
    };
    const { seen } = detector(root, clock, { watch, intervalMs: 10_000 });
    expect(armed).toEqual([]);
    refuse = false;
    await clock.advance(10_000);
    const dev = armed.find((w) => w.dir === path.join(root, 'dev'))!;
    expect(dev).toBeDefined();
    touch(root, 'dev/video0');
    dev.onEvent();
    await clock.advance(5_250); // the event's scan, then the debounce
    expect(seen).toEqual([[], ['video']]);
    // The watch dies: the detector rescans, waits for the tick, then watches again.
    const before = armed.length;
    rm(root, 'dev/video0');
    dev.onDead(new Error('EIO'));
    expect(armed.length).toBe(before);
    await clock.advance(5_000);
    expect(seen).toEqual([[], ['video'], []]);
    await clock.advance(5_000);
    expect(armed.filter((w) => w.dir === path.join(root, 'dev'))).toHaveLength(2);
  });

  test('a burst of events makes one scan', async () => {
    const root = hostRoot();
    mkdirSync(path.join(root, 'dev'));
    const clock = new FakeClock();
    let probes = 0;
    const exists = (p: string): boolean => (probes++, existsSync(p));
    const events: Array<() => void> = [];
    const watch: WatchDir = (_dir, onEvent) => (events.push(onEvent), { close: () => undefined });
    detector(root, clock, { watch, exists, intervalMs: 3_600_000 });
    const perScan = probes;
    probes = 0;
    for (let i = 0; i < 50; i++) for (const e of events) e();
    expect(probes).toBe(0);
    await clock.advance(250);
    expect(probes).toBe(perScan);
  });

  test('a directory removed and made again gets a fresh watch', async () => {
    const root = hostRoot();
    mkdirSync(path.join(root, 'dev'));
    const clock = new FakeClock();
    const opened: string[] = [];
    const closed: string[] = [];
    const watch: WatchDir = (dir) => (opened.push(dir), { close: () => void closed.push(dir) });
    detector(root, clock, { watch, intervalMs: 1_000 });
    const dev = path.join(root, 'dev');
    expect(opened.filter((d) => d === dev)).toHaveLength(1);
    rmSync(dev, { recursive: true });
    mkdirSync(dev);
    await clock.advance(1_000);
    expect(closed).toContain(dev);
    expect(opened.filter((d) => d === dev)).toHaveLength(2);
  });

  test('a listener that throws does not stop detection', async () => {
    const root = hostRoot();
    const clock = new FakeClock();
    let calls = 0;
    detector(root, clock, {
      watch: null,
      onChange: () => {
        calls++;
        throw new Error('boom');
      },
    });
    touch(root, 'dev/video0');
    await clock.advance(10_000);
    expect(calls).toBe(2);
  });
});
