// The buttons' device: a Linux input device (evdev) read as a stream of
// `struct input_event` records, with no native addon (docs/real-time-logging.md,
// "Buttons on an input device"). On a Raspberry Pi that is the gpio-keys
// overlay's character device; in tests and the simulator, a FIFO.
//
//   struct input_event { struct timeval time; __u16 type; __u16 code; __s32 value; };
//
// The timeval is two longs: 16 bytes on a 64-bit process (24 a record), 8 on
// 32-bit ARM and x86 (16 a record); the layout follows process.arch unless
// told (tests read both). A key-down is type EV_KEY (1), value 1; 0 is the
// key-up and 2 the autorepeat, neither a press.
//
// How it is read, so that nothing blocks the process:
// - a FIFO is opened without blocking and read as a pipe (node's event loop
//   polls it, no thread waits on it), with a write end of its own held open
//   so writers may come and go without an end of file; should the pipe end
//   anyway, it is opened again;
// - a character device is opened without blocking and read until it has
//   nothing (EAGAIN), then looked at again every POLL_MS on the Clock. A
//   blocking read would hold one of libuv's threads until the next key, and
//   node's exit waits for that thread: a daemon told to stop would hang
//   until someone pressed a button. The kernel queues the events meanwhile,
//   and each carries its own time (the wall clock, evdev's default), so a
//   press keeps the moment it was made, not the moment it was read.
// A device that is not there yet (the overlay not loaded, the USB pedal not
// plugged) or not readable is tried again every RETRY_MS, each failure
// logged once until it changes.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import type { Clock, Timer } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';

export const EV_KEY = 1;
export const KEY_DOWN = 1;

/** Bytes of one record: 24 on a 64-bit process, 16 where a long is 32 bits. */
export type EventLayout = 16 | 24;

/** The record size of a process of this architecture (node's process.arch). */
export const layoutFor = (arch: string = process.arch): EventLayout => (arch === 'arm' || arch === 'ia32' ? 16 : 24);

/** How often a character device with nothing to read is looked at again (agent ms). */
export const POLL_MS = 100;
/** How long before a device that is missing, unreadable or gone is opened again (agent ms). */
export const RETRY_MS = 5_000;
/** A record's own time is taken when it is at most this much older than the clock (else the moment it was read). */
const MAX_EVENT_AGE_MS = 5_000;
/** Records read at once. */
const BATCH = 64;

export interface InputEvent {
  /** The record's time, epoch ms (the kernel's wall clock unless someone changed the device's clock). */
  timeMs: number;
  type: number;
  code: number;
  value: number;
}

const LE = os.endianness() === 'LE';

/** The whole records in `buf`, and the bytes of a record not yet complete. */
export function decodeEvents(buf: Buffer, layout: EventLayout): { events: InputEvent[]; rest: Buffer } {
  const events: InputEvent[] = [];
  const half = layout === 24 ? 8 : 4;
  let at = 0;
  for (; at + layout <= buf.length; at += layout) {
    const sec = half === 8 ? Number(LE ? buf.readBigInt64LE(at) : buf.readBigInt64BE(at)) : LE ? buf.readInt32LE(at) : buf.readInt32BE(at);
    const usec = half === 8 ? Number(LE ? buf.readBigInt64LE(at + 8) : buf.readBigInt64BE(at + 8)) : LE ? buf.readInt32LE(at + 4) : buf.readInt32BE(at + 4);
    const t = at + 2 * half;
    events.push({
      timeMs: sec * 1000 + Math.floor(usec / 1000),
      type: LE ? buf.readUInt16LE(t) : buf.readUInt16BE(t),
      code: LE ? buf.readUInt16LE(t + 2) : buf.readUInt16BE(t + 2),
      value: LE ? buf.readInt32LE(t + 4) : buf.readInt32BE(t + 4),
    });
  }
  return { events, rest: buf.subarray(at) };
}

/** One record in the host's byte order (tests, the simulator's own copy aside). */
export function encodeEvent(e: InputEvent, layout: EventLayout): Buffer {
  const b = Buffer.alloc(layout);
  const sec = Math.floor(e.timeMs / 1000);
  const usec = (e.timeMs - sec * 1000) * 1000;
  if (layout === 24) {
    if (LE) {
      b.writeBigInt64LE(BigInt(sec), 0);
      b.writeBigInt64LE(BigInt(usec), 8);
    } else {
      b.writeBigInt64BE(BigInt(sec), 0);
      b.writeBigInt64BE(BigInt(usec), 8);
    }
  } else if (LE) {
    b.writeInt32LE(sec | 0, 0);
    b.writeInt32LE(usec, 4);
  } else {
    b.writeInt32BE(sec | 0, 0);
    b.writeInt32BE(usec, 4);
  }
  const t = layout - 8;
  if (LE) {
    b.writeUInt16LE(e.type, t);
    b.writeUInt16LE(e.code, t + 2);
    b.writeInt32LE(e.value, t + 4);
  } else {
    b.writeUInt16BE(e.type, t);
    b.writeUInt16BE(e.code, t + 2);
    b.writeInt32BE(e.value, t + 4);
  }
  return b;
}

/** When a key went down: agent-monotonic and wall ms. */
export interface PressMoment {
  mono: number;
  wall: number;
}

export interface InputDeviceOptions {
  /** The device's absolute path (the profile's inputDevice under the host root). */
  file: string;
  /** Record size; default that of this process's architecture (layoutFor()). */
  layout?: EventLayout;
  clock: Clock;
  logger?: Logger;
  /** Every key-down, with the moment it was made. */
  onKeyDown: (code: number, at: PressMoment) => void;
  pollMs?: number;
  retryMs?: number;
}

type Open =
  | { kind: 'pipe'; socket: net.Socket; holdFd: number }
  | { kind: 'device'; fd: number; reading: boolean };

export class InputDeviceReader {
  private running = false;
  private open: Open | undefined;
  private timer: Timer | undefined;
  private rest: Buffer = Buffer.alloc(0);
  /** The last failure logged (its code), so each is said once until it changes. */
  private said: string | undefined;
  /** The pending read of a character device, waited for at stop (it never blocks: the fd is non-blocking). */
  private pendingRead: Promise<void> | undefined;

  constructor(private readonly o: InputDeviceOptions) {}

  private get layout(): EventLayout {
    return this.o.layout ?? layoutFor();
  }

  start(): void {
    this.running = true;
    this.openDevice();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.timer?.cancel();
    this.timer = undefined;
    await this.pendingRead;
    this.close();
  }

  /** Whether the device is open now (for status and tests). */
  get isOpen(): boolean {
    return this.open !== undefined;
  }

  private openDevice(): void {
    if (!this.running) return;
    fs.open(this.o.file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK, (err, fd) => {
      if (!this.running) {
        if (!err) fs.close(fd, () => undefined);
        return;
      }
      if (err) return this.failed(err.code ?? 'EIO', this.openAdvice(err.code));
      let st: fs.Stats;
      try {
        st = fs.fstatSync(fd);
      } catch (e) {
        fs.close(fd, () => undefined);
        return this.failed((e as NodeJS.ErrnoException).code ?? 'EIO', 'cannot look at it');
      }
      if (st.isFIFO()) return this.readPipe(fd);
      if (st.isCharacterDevice()) {
        this.opened('character device');
        this.open = { kind: 'device', fd, reading: false };
        return this.readDevice();
      }
      fs.close(fd, () => undefined);
      this.failed('ENOTINPUT', 'it is neither a character device nor a FIFO; check inputDevice in the firmware profile');
    });
  }

  private openAdvice(code: string | undefined): string {
    if (code === 'ENOENT') return 'not there (yet): the overlay or driver that makes it may not be loaded; waiting for it';
    if (code === 'EACCES' || code === 'EPERM') return "permission denied: add the agent's user to the group that owns it (usually input)";
    return 'cannot open it';
  }

  private opened(what: string): void {
    if (this.said !== 'open') this.o.logger?.info({ inputDevice: this.o.file, as: what }, 'reading the buttons of the input device');
    this.said = 'open';
  }

  private failed(code: string, why: string): void {
    this.close();
    if (this.said !== code) this.o.logger?.warn({ inputDevice: this.o.file, code }, `input device ${this.o.file}: ${why}; trying again every ${Math.round((this.o.retryMs ?? RETRY_MS) / 1000)} s`);
    this.said = code;
    this.later(() => this.openDevice(), this.o.retryMs ?? RETRY_MS);
  }

  private later(fn: () => void, ms: number): void {
    if (!this.running) return;
    this.timer?.cancel();
    this.timer = this.o.clock.setTimer(() => {
      this.timer = undefined;
      fn();
    }, ms);
  }

  private close(): void {
    const o = this.open;
    this.open = undefined;
    this.rest = Buffer.alloc(0);
    if (o?.kind === 'pipe') {
      o.socket.destroy();
      fs.close(o.holdFd, () => undefined);
    } else if (o?.kind === 'device') fs.close(o.fd, () => undefined);
  }

  private readPipe(fd: number): void {
    let holdFd: number;
    try {
      // Our own writer: the pipe never ends while writers come and go.
      holdFd = fs.openSync(this.o.file, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
    } catch (e) {
      fs.close(fd, () => undefined);
      return this.failed((e as NodeJS.ErrnoException).code ?? 'EIO', 'cannot hold the FIFO open');
    }
    const socket = new net.Socket({ fd, readable: true, writable: false });
    this.open = { kind: 'pipe', socket, holdFd };
    this.opened('FIFO');
    socket.on('data', (chunk: Buffer) => this.feed(chunk));
    const ended = (why: string) => (): void => {
      if (this.open?.kind !== 'pipe' || this.open.socket !== socket) return;
      this.failed('EPIPE', why);
    };
    socket.on('end', ended('the FIFO ended'));
    socket.on('error', (e: NodeJS.ErrnoException) => ended(`reading it failed (${e.code ?? e.message})`)());
  }

  private readDevice(): void {
    const o = this.open;
    if (o?.kind !== 'device' || o.reading || !this.running) return;
    o.reading = true;
    const buf = Buffer.alloc(BATCH * this.layout);
    this.pendingRead = new Promise<void>((resolve) => {
      fs.read(o.fd, buf, 0, buf.length, null, (err, n) => {
        o.reading = false;
        resolve();
        if (this.open !== o || !this.running) return;
        if (err?.code === 'EAGAIN' || err?.code === 'EWOULDBLOCK') return this.later(() => this.readDevice(), this.o.pollMs ?? POLL_MS);
        // ENODEV: unplugged; anything else: try it fresh later.
        if (err) return this.failed(err.code ?? 'EIO', `reading it failed (${err.code ?? err.message})`);
        if (n === 0) return this.failed('EOF', 'it ended');
        this.feed(buf.subarray(0, n));
        this.readDevice();
      });
    });
  }

  private feed(chunk: Buffer): void {
    const { events, rest } = decodeEvents(this.rest.length === 0 ? chunk : Buffer.concat([this.rest, chunk]), this.layout);
    this.rest = Buffer.from(rest);
    for (const e of events) {
      if (e.type !== EV_KEY || e.value !== KEY_DOWN) continue;
      this.o.onKeyDown(e.code, this.momentOf(e));
    }
  }

  /** The record's own time when it is plausible (at most MAX_EVENT_AGE_MS old by the clock), else now. */
  private momentOf(e: InputEvent): PressMoment {
    const { clock } = this.o;
    const wall = clock.wallNow();
    const mono = clock.now();
    const age = wall - e.timeMs;
    if (age >= 0 && age <= MAX_EVENT_AGE_MS) return { mono: mono - age * clock.scale, wall: e.timeMs };
    return { mono, wall };
  }
}
