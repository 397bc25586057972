// The camera's recorder for the power-cut suite: it records clips into the
// card's media dir the way a careful recorder makes them durable: the clip is
// written as NAME.mp4.part (a name the agent's watcher leaves alone), fsynced,
// renamed to NAME.mp4, and the directory fsynced. Only then is the clip
// "durable": a cut after that must leave it on the card, whole. A cut before
// may leave it (the rename reached the journal with another fsync) or not.
//
// Every step is a synchronous call on this process's thread, driven by timers:
// the test's cut (also on this thread) falls between two steps, never inside
// one, so the set of durable clips at the cut is exact. Sizes and pauses come
// from the suite's seeded PRNG; the bytes are random.
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

export interface RecorderOptions {
  /** Clip sizes, bytes. */
  minBytes: number;
  maxBytes: number;
  /** Bytes per write, and real ms between writes. */
  chunkBytes: number;
  chunkEveryMs: number;
  /** Real ms between one clip's end and the next one's start. */
  minPauseMs: number;
  maxPauseMs: number;
  /** The card's budget: no clip is started past either. */
  maxClips: number;
  maxTotalBytes: number;
}

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export class Recorder {
  /** Every clip begun, by name: its full bytes. */
  readonly clips = new Map<string, Buffer>();
  /** Clips whose directory fsync returned. */
  readonly durable = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private current: { name: string; fd: number; data: Buffer; written: number; phase: 'writing' | 'synced' | 'renamed' } | undefined;
  private bytes = 0;
  private on = false;

  constructor(
    private readonly media: string,
    private readonly random: () => number,
    private readonly o: RecorderOptions,
  ) {}

  get recording(): boolean {
    return this.on;
  }

  /** Boot: the media dir made durable if new, a clip a cut interrupted thrown away (its .part), recording begins (unless `record` is false). */
  powerOn(record = true): void {
    if (!existsSync(this.media)) {
      mkdirSync(this.media, { recursive: true });
      fsyncDir(dirname(this.media));
    }
    for (const n of readdirSync(this.media)) if (n.endsWith('.part')) rmSync(join(this.media, n), { force: true });
    this.on = record;
    this.schedule(this.pause());
  }

  /** The cut (or a clean stop): no further step; an open clip is closed unsynced. Returns the durable clips. */
  powerOff(): Set<string> {
    this.on = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.current !== undefined) {
      if (this.current.fd >= 0) closeSync(this.current.fd);
      this.current = undefined;
    }
    return new Set(this.durable);
  }

  private pause(): number {
    return this.o.minPauseMs + this.random() * (this.o.maxPauseMs - this.o.minPauseMs);
  }

  private schedule(ms: number): void {
    if (!this.on) return;
    this.timer = setTimeout(() => this.step(), ms);
  }

  private step(): void {
    this.timer = undefined;
    if (!this.on) return;
    if (this.current === undefined) {
      if (this.clips.size >= this.o.maxClips || this.bytes >= this.o.maxTotalBytes) return; // the card's budget is spent
      const name = `clip-${String(this.clips.size + 1).padStart(3, '0')}.mp4`;
      const size = Math.floor(this.o.minBytes + this.random() * (this.o.maxBytes - this.o.minBytes));
      const data = randomBytes(size);
      this.clips.set(name, data);
      this.bytes += size;
      this.current = { name, fd: openSync(join(this.media, `${name}.part`), 'w', 0o644), data, written: 0, phase: 'writing' };
    }
    const c = this.current;
    // The clip's end, one step at a time (a cut may fall between any two): its bytes on flash,
    // then its name, then the name's directory entry.
    if (c.phase === 'writing' && c.written < c.data.length) {
      const n = Math.min(this.o.chunkBytes, c.data.length - c.written);
      c.written += writeSync(c.fd, c.data, c.written, n);
    } else if (c.phase === 'writing') {
      fsyncSync(c.fd);
      closeSync(c.fd);
      c.fd = -1;
      c.phase = 'synced';
    } else if (c.phase === 'synced') {
      renameSync(join(this.media, `${c.name}.part`), join(this.media, c.name));
      c.phase = 'renamed';
    } else {
      fsyncDir(this.media);
      this.durable.add(c.name);
      this.current = undefined;
      this.schedule(this.pause());
      return;
    }
    this.schedule(this.o.chunkEveryMs);
  }
}
