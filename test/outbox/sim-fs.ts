// A file system that can lose power. Each file (inode) has its data as the
// process sees it and the data as last fsynced; each directory has its
// entries as the process sees them and as last fsynced. A power cut keeps
// only the durable layer (and, asked to, a random prefix of a file's bytes
// appended since its last fsync: a torn write); a kill keeps everything,
// since the kernel still writes back what the process had written.
//
// mount() hands an outbox a view bound to the current boot: after a crash
// every call through an older view fails, as the dead process would.
// Directories are durable as soon as they are made (the state dir exists).
import path from 'node:path';
import type { OutboxFs } from '../../agent/outbox/types.js';
import { seeded } from '../support/seeded.js';
export { seeded };

interface Inode {
  data: Uint8Array;
  synced: Uint8Array;
}

export type CrashMode = 'power' | 'kill';
export type DiskState = 'ok' | 'full' | 'read-only';

const errno = (code: string, what: string): Error => Object.assign(new Error(`${code}: ${what}`), { code });

export class SimFs {
  private entries = new Map<string, Inode>();
  private durable = new Map<string, Inode>();
  private readonly dirs = new Set<string>(['/']);
  /** Bumped by every crash: views from older boots are dead. */
  epoch = 0;
  disk: DiskState = 'ok';
  /** Calls by operation, across boots. */
  readonly calls: Record<keyof OutboxFs, number> = { mkdir: 0, readdir: 0, readFile: 0, append: 0, fsync: 0, fsyncDir: 0, truncate: 0, rename: 0, unlink: 0 };
  bytesAppended = 0;
  private armed: { after: number; mode: CrashMode; torn: boolean } | undefined;

  constructor(private readonly rng: () => number = Math.random) {}

  /** The next `after`-th call crashes the machine (an append first lands in the page cache, then the power goes). */
  crashAt(after: number, mode: CrashMode, torn: boolean): void {
    this.armed = { after, mode, torn };
  }

  get armedCrash(): boolean {
    return this.armed !== undefined;
  }

  crash(mode: CrashMode, torn: boolean): void {
    this.armed = undefined;
    this.epoch++;
    if (mode === 'kill') return;
    const kept = new Set<Inode>(this.durable.values());
    for (const ino of kept) {
      const d = ino.data;
      const s = ino.synced;
      const appendedOnly = d.length > s.length && s.every((b, i) => d[i] === b);
      const extra = torn && appendedOnly ? Math.floor(this.rng() * (d.length - s.length + 1)) : 0;
      ino.data = extra > 0 ? d.slice(0, s.length + extra) : s.slice();
    }
    this.entries = new Map(this.durable);
  }

  mount(): OutboxFs {
    const epoch = this.epoch;
    const op = <A extends unknown[], R>(name: keyof OutboxFs, fn: (...a: A) => R) =>
      async (...a: A): Promise<Awaited<R>> => {
        this.calls[name]++;
        if (epoch !== this.epoch) throw errno('ECRASHED', 'this process is dead');
        if (this.armed !== undefined && --this.armed.after <= 0) {
          const { mode, torn } = this.armed;
          if (name === 'append') {
            try {
              fn(...a);
            } catch {
              // a refused append still crashes the machine
            }
          }
          this.crash(mode, torn);
          throw errno('ECRASHED', `crashed during ${name}`);
        }
        return fn(...a) as Awaited<R>;
      };
    return {
      mkdir: op('mkdir', (dir: string) => this.mkdir(dir)),
      readdir: op('readdir', (dir: string) => this.readdir(dir)),
      readFile: op('readFile', (file: string) => this.inode(file).data.slice()),
      append: op('append', (file: string, data: Uint8Array) => this.append(file, data)),
      fsync: op('fsync', (file: string) => {
        const ino = this.inode(file);
        ino.synced = ino.data.slice();
      }),
      fsyncDir: op('fsyncDir', (dir: string) => this.syncDir(dir)),
      truncate: op('truncate', (file: string, length: number) => {
        this.writable(file);
        const ino = this.inode(file);
        const next = new Uint8Array(length);
        next.set(ino.data.subarray(0, Math.min(length, ino.data.length)));
        ino.data = next;
      }),
      rename: op('rename', (from: string, to: string) => {
        this.writable(from);
        const ino = this.inode(from);
        this.parent(to);
        this.entries.delete(from);
        this.entries.set(to, ino);
      }),
      unlink: op('unlink', (file: string) => {
        this.writable(file);
        this.inode(file);
        this.entries.delete(file);
      }),
    };
  }

  /** The process's view of a file, for tests that corrupt or inspect it. */
  read(file: string): Uint8Array | undefined {
    return this.entries.get(file)?.data;
  }

  /** Replaces a file's bytes, durably (the rot a test plants). */
  write(file: string, data: Uint8Array): void {
    const ino = this.entries.get(file) ?? { data, synced: data };
    ino.data = data.slice();
    ino.synced = data.slice();
    this.entries.set(file, ino);
    this.durable.set(file, ino);
  }

  list(dir: string): string[] {
    return this.readdir(dir);
  }

  private mkdir(dir: string): void {
    for (let d = dir; !this.dirs.has(d); d = path.dirname(d)) this.dirs.add(d);
  }

  private readdir(dir: string): string[] {
    if (!this.dirs.has(dir)) throw errno('ENOENT', dir);
    const names = [...this.entries.keys(), ...this.dirs].filter((p) => p !== dir && path.dirname(p) === dir);
    return names.map((p) => path.basename(p)).sort();
  }

  private inode(file: string): Inode {
    const ino = this.entries.get(file);
    if (ino === undefined) throw errno('ENOENT', file);
    return ino;
  }

  private parent(file: string): void {
    if (!this.dirs.has(path.dirname(file))) throw errno('ENOENT', path.dirname(file));
  }

  private writable(file: string): void {
    if (this.disk === 'read-only') throw errno('EROFS', file);
  }

  private append(file: string, data: Uint8Array): void {
    this.writable(file);
    this.parent(file);
    let ino = this.entries.get(file);
    if (ino === undefined) {
      ino = { data: new Uint8Array(0), synced: new Uint8Array(0) };
      this.entries.set(file, ino);
    }
    // A full disk takes part of the write, then refuses the rest.
    const take = this.disk === 'full' ? Math.floor(this.rng() * data.length) : data.length;
    const next = new Uint8Array(ino.data.length + take);
    next.set(ino.data);
    next.set(data.subarray(0, take), ino.data.length);
    ino.data = next;
    this.bytesAppended += take;
    if (this.disk === 'full') throw errno('ENOSPC', file);
  }

  private syncDir(dir: string): void {
    if (!this.dirs.has(dir)) throw errno('ENOENT', dir);
    for (const p of [...this.durable.keys()]) if (path.dirname(p) === dir && !this.entries.has(p)) this.durable.delete(p);
    for (const [p, ino] of this.entries) if (path.dirname(p) === dir) this.durable.set(p, ino);
  }
}

