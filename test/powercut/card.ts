// A camera's card for the power-cut suite: an ext4 image on a loop device,
// mounted where the agent keeps its state dir and the recorder its media dir.
// A power cut is a copy of the image file taken the instant the agent is
// killed: the loop device writes into the image file only what the mounted
// filesystem has written back, so what sat in its page cache (unsynced data,
// metadata in an uncommitted journal transaction) is missing from the copy,
// as from a card whose camera lost its battery. Nothing is synced or
// unmounted before the copy. The copy is checked (`e2fsck -fy`, which replays
// the journal as a mount after a crash would) and mounted at the same place
// as the next boot's card.
//
// Mount options: `commit=600` (no periodic journal commit within a boot: only
// an fsync commits, so the self-test's unsynced file is reliably lost) and
// `noauto_da_alloc` (ext4 does not flush a file renamed over another on its
// own: the card keeps only what the writer made durable). The machine's
// vm.dirty_* settings are left alone (other work shares it): their 30 s
// expiry is far beyond a boot's few seconds.
//
// Needs root, util-linux (losetup, mount, umount), e2fsprogs and a loop
// device. `prerequisites()` says in one line what is missing. Every loop
// device and mount made is released by `releaseAll()` (afterAll), failed
// run or not; a run killed before that leaves them, and `sweepStale()` at the
// next start removes those whose run (named by pid) is gone.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quiet, run, tool } from '../support/system-command.js';

const PREFIX = 'c2c-powercut-';
export const MOUNT_OPTIONS = 'commit=600,noauto_da_alloc';
const TOOLS = ['losetup', 'mount', 'umount', 'mkfs.ext4', 'e2fsck'] as const;

/** Why this machine cannot run the suite, in one line; undefined when it can. */
export function prerequisites(): string | undefined {
  if (process.getuid?.() !== 0) return `the power-cut suite needs root (loop devices and mounts); uid is ${process.getuid?.() ?? 'unknown'}: run it as root, as CI does`;
  if (!existsSync('/dev/loop-control')) return 'the power-cut suite needs loop devices: /dev/loop-control is missing (modprobe loop, or give the container the loop devices)';
  for (const t of TOOLS) {
    try {
      tool(t);
    } catch {
      return `the power-cut suite needs ${t} (util-linux and e2fsprogs): not found in /usr/sbin, /sbin, /usr/bin or /bin`;
    }
  }
  return undefined;
}

/** Where images go: tmpfs (/dev/shm) when there is one, so a cut's copy costs memory bandwidth, not disk writes. */
function imageBase(): string {
  try {
    if (statSync('/dev/shm').isDirectory()) return '/dev/shm';
  } catch {
    // none
  }
  return tmpdir();
}

const loops = new Set<string>();
const mounts = new Set<string>();
const workDirs = new Set<string>();

function loopsBacking(): Array<{ name: string; file: string }> {
  try {
    const j = JSON.parse(run('losetup', ['--list', '--json', '--output', 'NAME,BACK-FILE'])) as { loopdevices?: Array<{ name: string; 'back-file'?: string | null }> };
    return (j.loopdevices ?? []).map((l) => ({ name: l.name, file: (l['back-file'] ?? '').replace(/ \(deleted\)$/, '') }));
  } catch {
    return [];
  }
}

function mountsOf(source: (dev: string, target: string) => boolean): string[] {
  try {
    return readFileSync('/proc/self/mounts', 'utf8')
      .split('\n')
      .map((l) => l.split(' '))
      .filter((f) => f.length > 2 && source(f[0]!, f[1]!))
      .map((f) => f[1]!.replace(/\\040/g, ' '));
  } catch {
    return [];
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Mounts, loop devices and images a killed run left (its pid gone): released and removed. */
export function sweepStale(): string[] {
  const swept: string[] = [];
  const stale = (p: string): boolean => {
    const m = new RegExp(`/${PREFIX}(\\d+)-`).exec(p);
    return m !== null && Number(m[1]) !== process.pid && !alive(Number(m[1]));
  };
  for (const target of mountsOf((_d, t) => stale(t))) {
    quiet('umount', ['-l', target]);
    swept.push(target);
  }
  for (const l of loopsBacking().filter((l) => stale(l.file))) {
    quiet('losetup', ['-d', l.name]);
    swept.push(l.name);
  }
  for (const base of new Set([imageBase(), tmpdir()])) {
    for (const d of readdirSync(base)) {
      if (d.startsWith(PREFIX) && stale(`/${d}`)) {
        rmSync(join(base, d), { recursive: true, force: true });
        swept.push(join(base, d));
      }
    }
  }
  return swept;
}

export interface FsckResult {
  /** e2fsck's exit status: 0 clean, 1 errors corrected, 2 corrected (reboot), 4 and up: errors left or failure. */
  code: number;
  output: string;
}

export class Card {
  /** Where the card is mounted, boot after boot. */
  readonly mnt: string;
  private image: string;
  private loop: string | undefined;
  private generation = 0;

  private constructor(private readonly dir: string) {
    this.mnt = join(dir, 'card');
    this.image = join(dir, 'card-0.img');
    mkdirSync(this.mnt);
  }

  /** A fresh card: a sparse image of `mib` MiB, mkfs.ext4, attached and mounted. */
  static create(mib = 64): Card {
    const dir = mkdtempSync(join(imageBase(), `${PREFIX}${process.pid}-`));
    workDirs.add(dir);
    const card = new Card(dir);
    run('truncate', ['-s', `${mib}M`, card.image]);
    run('mkfs.ext4', ['-q', '-F', card.image]);
    card.attach();
    return card;
  }

  get imageFile(): string {
    return this.image;
  }

  /**
   * The power cut: the image as the card holds it now, copied with plain reads of the backing
   * file (nothing synced first). Synchronous, so nothing else in this process runs between the
   * caller's kill and the copy. Returns the copy's path.
   */
  cut(): string {
    const copy = join(this.dir, `card-${this.generation + 1}.img`);
    copyFileSync(this.image, copy);
    return copy;
  }

  /**
   * The next boot: the old card released (its page cache goes with it), `copy` checked with
   * `e2fsck -fy` and mounted in its place. Returns e2fsck's result; throws when e2fsck left
   * errors (4 and up) or the mount fails.
   */
  bootFrom(copy: string): FsckResult {
    this.detach();
    rmSync(this.image, { force: true });
    this.image = copy;
    this.generation++;
    const fsck = fsckImage(copy);
    if (fsck.code >= 4) throw new Error(`e2fsck -fy on the card after cut ${this.generation} exited ${fsck.code}:\n${fsck.output}`);
    this.attach();
    return fsck;
  }

  /** Unmounts and detaches the card (the copy, if any, stays). */
  detach(): void {
    if (mounts.has(this.mnt)) {
      const r = spawnSync(tool('umount'), [this.mnt], { encoding: 'utf8' });
      if (r.status !== 0) quiet('umount', ['-l', this.mnt]);
      mounts.delete(this.mnt);
    }
    if (this.loop !== undefined) {
      quiet('losetup', ['-d', this.loop]);
      loops.delete(this.loop);
      this.loop = undefined;
    }
  }

  private attach(): void {
    const loop = run('losetup', ['--find', '--show', this.image]).trim();
    loops.add(loop);
    this.loop = loop;
    run('mount', ['-t', 'ext4', '-o', MOUNT_OPTIONS, loop, this.mnt]);
    mounts.add(this.mnt);
  }
}

export function fsckImage(image: string): FsckResult {
  const r = spawnSync(tool('e2fsck'), ['-fy', image], { encoding: 'utf8' });
  return { code: r.status ?? -1, output: `${r.stdout}${r.stderr}` };
}

/** Every mount and loop device this process made, released; its images removed. For afterAll, failed run or not. */
export function releaseAll(): void {
  for (const m of mounts) quiet('umount', ['-l', m]);
  mounts.clear();
  for (const l of loops) quiet('losetup', ['-d', l]);
  loops.clear();
  // A loop device a failed call attached without our knowing its name: found by its backing file.
  for (const l of loopsBacking().filter((l) => [...workDirs].some((d) => l.file.startsWith(`${d}/`)))) {
    for (const m of mountsOf((dev) => dev === l.name)) quiet('umount', ['-l', m]);
    quiet('losetup', ['-d', l.name]);
  }
  for (const d of workDirs) rmSync(d, { recursive: true, force: true });
  workDirs.clear();
}

/** What is still attached or mounted from this process's cards (empty after releaseAll). */
export function leftovers(): string[] {
  const mine = (p: string): boolean => p.includes(`/${PREFIX}${process.pid}-`);
  return [...mountsOf((_d, t) => mine(t)), ...loopsBacking().filter((l) => mine(l.file)).map((l) => `${l.name} (${l.file})`)];
}
