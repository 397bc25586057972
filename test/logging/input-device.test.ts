// The buttons' input device (agent/logging/input-device.ts): struct
// input_event records in both layouts (24 bytes on 64-bit, 16 on 32-bit ARM),
// read from a FIFO as writers come and go, and from a character device that
// is read without blocking (a pseudo-terminal stands in for /dev/input/eventN:
// a character device that answers EAGAIN when it has nothing). Only key-downs
// are presses; each keeps the moment its record says it was made.
import { afterEach, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { decodeEvents, encodeEvent, EV_KEY, InputDeviceReader, layoutFor, type EventLayout, type InputEvent, type PressMoment } from '../../agent/logging/input-device.js';
import { SystemClock } from '../../agent/lib/clock.js';
import { FakeClock } from '../support/fake-clock.js';
import { notHung, until } from '../support/until.js';

const dirs: string[] = [];
const readers: InputDeviceReader[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const r of readers.splice(0)) await r.stop();
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const tmp = (): string => {
  const d = mkdtempSync(path.join(tmpdir(), 'c2c-input-'));
  dirs.push(d);
  return d;
};

const fifo = (): string => {
  const file = path.join(tmp(), 'event0');
  const r = spawnSync('mkfifo', [file]);
  if (r.status !== 0) throw new Error(`mkfifo failed: ${r.stderr}`);
  return file;
};

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const key = (code: number, value: number, timeMs = T0): InputEvent => ({ timeMs, type: EV_KEY, code, value });
const syn = (timeMs = T0): InputEvent => ({ timeMs, type: 0, code: 0, value: 0 });
/** A button press as gpio-keys reports it: key-down, sync, key-up, sync. */
const press = (code: number, layout: EventLayout, timeMs = T0): Buffer =>
  Buffer.concat([key(code, 1, timeMs), syn(timeMs), key(code, 0, timeMs + 80), syn(timeMs + 80)].map((e) => encodeEvent(e, layout)));

describe('struct input_event', () => {
  it.each([16, 24] as const)('%i-byte records round-trip, a record cut across reads kept until whole', (layout) => {
    const events = [key(28, 1, T0 + 1234), syn(T0 + 1234), key(28, 2), key(28, 0, T0 + 2000), { timeMs: T0, type: 4, code: 4, value: -7 }];
    const bytes = Buffer.concat(events.map((e) => encodeEvent(e, layout)));
    expect(bytes.length).toBe(events.length * layout);
    expect(decodeEvents(bytes, layout)).toEqual({ events, rest: Buffer.alloc(0) });
    const cut = decodeEvents(bytes.subarray(0, 2 * layout + 5), layout);
    expect(cut.events).toEqual(events.slice(0, 2));
    expect(cut.rest.length).toBe(5);
    const after = decodeEvents(Buffer.concat([cut.rest, bytes.subarray(2 * layout + 5)]), layout);
    expect(after.events).toEqual(events.slice(2));
  });

  it('the layout follows the architecture: 16 bytes on 32-bit ARM and x86, 24 elsewhere', () => {
    expect(layoutFor('arm')).toBe(16);
    expect(layoutFor('ia32')).toBe(16);
    expect(layoutFor('arm64')).toBe(24);
    expect(layoutFor('x64')).toBe(24);
  });

  it('the same bytes read in the wrong layout are not the same keys (why the layout matters)', () => {
    const bytes = Buffer.concat([key(28, 1), key(29, 1), key(30, 1)].map((e) => encodeEvent(e, 16)));
    expect(decodeEvents(bytes, 24).events.map((e) => [e.type, e.code, e.value])).not.toEqual([[1, 28, 1], [1, 29, 1]]);
  });
});

function reader(file: string, layout: EventLayout, clock = new SystemClock()): { r: InputDeviceReader; downs: Array<{ code: number; at: PressMoment }> } {
  const downs: Array<{ code: number; at: PressMoment }> = [];
  const r = new InputDeviceReader({ file, layout, clock, onKeyDown: (code, at) => downs.push({ code, at }), retryMs: 20, pollMs: 10 });
  readers.push(r);
  return { r, downs };
}

describe('a FIFO', () => {
  it.each([16, 24] as const)('%i-byte layout: key-downs only, once each, as writers come and go', async (layout) => {
    const file = fifo();
    const { r, downs } = reader(file, layout);
    r.start();
    await until('the FIFO open', () => r.isOpen);
    for (const [i, code] of [28, 2, 28].entries()) {
      // Each press from a writer of its own, which then goes away (the simulator's way, and echo's).
      const fd = openSync(file, 'w');
      writeSync(fd, press(code, layout, Date.now() - 10 * (i + 1)));
      closeSync(fd);
      await until(`press ${i + 1}`, () => downs.length === i + 1);
    }
    // An autorepeat (value 2) and a key-up are no presses; a record cut in two by two writes is one.
    const fd = openSync(file, 'w');
    writeSync(fd, encodeEvent(key(3, 2), layout));
    writeSync(fd, encodeEvent(key(3, 0), layout));
    const whole = encodeEvent(key(4, 1, Date.now()), layout);
    writeSync(fd, whole.subarray(0, 7));
    await new Promise((res) => setTimeout(res, 30));
    expect(downs).toHaveLength(3);
    writeSync(fd, whole.subarray(7));
    closeSync(fd);
    await until('the cut record', () => downs.length === 4);
    expect(downs.map((d) => d.code)).toEqual([28, 2, 28, 4]);
  });

  it("a press keeps its record's time when it is recent, else the moment it was read", async () => {
    const file = fifo();
    const clock = new FakeClock(5_000_000, T0 + 60_000);
    const { r, downs } = reader(file, 24, clock);
    r.start();
    await until('the FIFO open', () => r.isOpen);
    const fd = openSync(file, 'w');
    // 1.5 s old by the clock: taken as made then. An hour old (a clock set since, a replayed file): read now.
    writeSync(fd, Buffer.concat([press(28, 24, T0 + 58_500), press(29, 24, T0 - 3_600_000)]));
    closeSync(fd);
    await until('two presses', () => downs.length === 2);
    expect(downs[0]!.at).toEqual({ wall: T0 + 58_500, mono: 5_000_000 - 1_500 });
    expect(downs[1]!.at).toEqual({ wall: T0 + 60_000, mono: 5_000_000 });
  });

  it('a device not there yet is waited for, then read; stop ends it and leaves nothing open', async () => {
    const dir = tmp();
    const file = path.join(dir, 'event0');
    const lines: string[] = [];
    const downs: number[] = [];
    const r = new InputDeviceReader({ file, layout: 24, clock: new SystemClock(), onKeyDown: (c) => downs.push(c), retryMs: 20, logger: { warn: (_o: unknown, m: string) => lines.push(m), info: () => undefined } as never });
    readers.push(r);
    r.start();
    await until('a failed open said', () => lines.length > 0);
    await new Promise((res) => setTimeout(res, 100));
    // Said once, however many times it was tried.
    expect(lines).toEqual([`input device ${file}: not there (yet): the overlay or driver that makes it may not be loaded; waiting for it; trying again every 0 s`]);
    spawnSync('mkfifo', [file]);
    await until('the FIFO open', () => r.isOpen);
    const fd = openSync(file, 'w');
    writeSync(fd, press(42, 24));
    closeSync(fd);
    await until('the press', () => downs.length === 1);
    await r.stop();
    expect(r.isOpen).toBe(false);
  });

  it('a regular file is refused in words, never read as a device', async () => {
    const file = path.join(tmp(), 'event0');
    const fd = openSync(file, 'w');
    writeSync(fd, press(28, 24));
    closeSync(fd);
    const lines: string[] = [];
    const downs: number[] = [];
    const r = new InputDeviceReader({ file, layout: 24, clock: new SystemClock(), onKeyDown: (c) => downs.push(c), retryMs: 20, logger: { warn: (_o: unknown, m: string) => lines.push(m), info: () => undefined } as never });
    readers.push(r);
    r.start();
    await until('the refusal', () => lines.length > 0);
    expect(lines[0]).toContain('it is neither a character device nor a FIFO; check inputDevice in the firmware profile');
    expect(downs).toEqual([]);
  });
});

/** A pseudo-terminal in raw mode: its slave is a character device that answers EAGAIN when empty, as /dev/input/eventN does; bytes written to our stdin reach it. */
async function pty(): Promise<{ file: string; write: (b: Buffer) => void } | undefined> {
  if (spawnSync('python3', ['-c', 'import pty']).status !== 0) return undefined;
  const script = [
    'import os, pty, sys, tty',
    'm, s = pty.openpty()',
    'tty.setraw(s)',
    'sys.stdout.write(os.ttyname(s) + "\\n"); sys.stdout.flush()',
    'while True:',
    '    b = os.read(0, 4096)',
    '    if not b: break',
    '    os.write(m, b)',
  ].join('\n');
  const child = spawn('python3', ['-c', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  const file = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()));
    child.once('exit', () => reject(new Error('the pty helper ended')));
  });
  return { file, write: (b) => child.stdin!.write(b) };
}

describe('a character device (a pseudo-terminal standing in for /dev/input/eventN)', () => {
  it.each([16, 24] as const)('%i-byte layout: read without blocking, looked at again while empty, and stop does not wait for a key', async (layout) => {
    const dev = await pty();
    if (dev === undefined) return; // no python3 here: the FIFO cases cover the decoding
    const { r, downs } = reader(dev.file, layout);
    r.start();
    await until('the device open', () => r.isOpen);
    dev.write(press(28, layout));
    await until('a press', () => downs.length === 1);
    // Empty for a while (EAGAIN, looked at again every pollMs), then two more in one write.
    await new Promise((res) => setTimeout(res, 50));
    dev.write(Buffer.concat([press(2, layout), press(3, layout)]));
    await until('three presses', () => downs.length === 3);
    expect(downs.map((d) => d.code)).toEqual([28, 2, 3]);
    // Nothing more comes: a stop must not wait for one (a blocking read would hold it, and node's exit with it,
    // until a key that never comes: a hang, so a bound against one, not a real-time window a loaded machine stalls).
    await notHung('stop() with no press to come', 20_000, () => r.stop());
    expect(r.isOpen).toBe(false);
  });
});
