import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { FakeClock } from '../support/fake-clock.js';
import { UploadWindow } from '../../agent/uploads/upload-window.js';

const NOON = Date.UTC(2026, 5, 15, 12, 0, 30);
const MIN = 60_000;
let windows: UploadWindow[] = [];
afterEach(() => {
  for (const w of windows) w.stop();
  windows = [];
});

async function started(cron: string, minutes: number, offset: number | undefined, opened: () => void = () => {}): Promise<{ w: UploadWindow; clock: FakeClock }> {
  const clock = new FakeClock(1_000_000, NOON);
  const w = new UploadWindow({ cron, minutes, source: 'test', clock, clockOffsetMs: () => offset, onOpen: opened, timesyncFlag: '/nonexistent/flag' });
  windows.push(w);
  await w.start();
  return { w, clock };
}

describe('upload window', () => {
  it('closed outside the window once the clock is known good, and opened for the rest of a window it started inside', async () => {
    const outside = await started('0 3 * * *', 60, 0);
    expect(outside.w.isOpen()).toBe(false);
    let opened = 0;
    // 11:30 plus 60 minutes reaches 12:00:30: started 30.5 minutes into the window, 29.5 left.
    const inside = await started('30 11 * * *', 60, 0, () => opened++);
    expect(opened).toBe(1);
    expect(inside.w.isOpen()).toBe(true);
    await inside.clock.advance(29 * MIN);
    expect(inside.w.isOpen()).toBe(true);
    await inside.clock.advance(1 * MIN);
    expect(inside.w.isOpen()).toBe(false);
  });

  it('ignored (uploads run) while the wall clock is not known good', async () => {
    const skewed = await started('0 3 * * *', 60, 10 * MIN);
    expect(skewed.w.isOpen()).toBe(true);
    const unknown = await started('0 3 * * *', 60, undefined);
    expect(unknown.w.isOpen()).toBe(true);
  });

  it('opens at the matching wall-clock minute, timed on the agent clock, and closes after its minutes', async () => {
    let opened = 0;
    // NOON is 12:00:30; the window starts at 12:05.
    const { w, clock } = await started('5 12 * * *', 10, 0, () => opened++);
    expect(w.isOpen()).toBe(false);
    await clock.advance(4 * MIN);
    expect(opened).toBe(0);
    await clock.advance(30_000);
    expect(opened).toBe(1);
    expect(w.isOpen()).toBe(true);
    await clock.advance(10 * MIN - 1);
    expect(w.isOpen()).toBe(true);
    await clock.advance(1);
    expect(w.isOpen()).toBe(false);
    // One tick a minute, nothing more.
    expect(clock.pendingCount).toBe(1);
  });

  it('follows an NTP-style step of the wall clock at the next minute, opens a minute once, and prints nothing', async () => {
    const spies = [jest.spyOn(console, 'log'), jest.spyOn(console, 'warn'), jest.spyOn(console, 'error'), jest.spyOn(process.stdout, 'write'), jest.spyOn(process.stderr, 'write')];
    try {
      let opened = 0;
      const { w, clock } = await started('0 15 * * *', 30, 0, () => opened++);
      // The unit booted at the last saved time; NTP steps it to 14:59:50.
      clock.jumpWall(Date.UTC(2026, 5, 15, 14, 59, 50) - clock.wallNow());
      await clock.advance(MIN);
      expect(opened).toBe(1);
      expect(w.isOpen()).toBe(true);
      // Stepped back into the same minute: not opened again.
      clock.jumpWall(-MIN);
      await clock.advance(MIN);
      expect(opened).toBe(1);
      // Hours of agent time after a big step: no burst of "missed" runs, no console output.
      clock.jumpWall(6 * 3_600_000);
      await clock.advance(3 * 3_600_000);
      expect(opened).toBe(1);
      for (const s of spies) expect(s).not.toHaveBeenCalled();
    } finally {
      for (const s of spies) s.mockRestore();
    }
  });

  it('stop() leaves no timer armed', async () => {
    const { w, clock } = await started('0 3 * * *', 60, 0);
    expect(clock.pendingCount).toBe(1);
    w.stop();
    expect(clock.pendingCount).toBe(0);
  });
});
