// Which of the profile's channels are present on this unit: a channel is
// present when any of its detection paths exists under the host root. The
// detector rescans on a timer and on file-system events, and reports a new
// set only once it has held still for the debounce time, so a connector
// that rattles does not connect and disconnect channels at the service.
// Cheap on purpose: existsSync and statSync only, never a child process.
import { existsSync, statSync, watch as fsWatch } from 'node:fs';
import path from 'node:path';
import type { Clock, Timer } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { ChannelSpec } from '../config/types.js';

export const DETECT_INTERVAL_MS = 30_000;
export const DETECT_DEBOUNCE_MS = 5_000;
/** Events within this many agent ms of the first make one scan: udev adds a device as a burst of nodes. */
export const DETECT_EVENT_COALESCE_MS = 250;

/**
 * The absolute path of `rel` under `hostRoot`, or undefined when it is not
 * a relative path strictly inside the root. Profiles are schema-checked for
 * this already; a profile from a directory given at run time is checked
 * again here because a path outside the root would probe the wrong system.
 */
export function underRoot(hostRoot: string, rel: string): string | undefined {
  if (rel === '' || rel.includes('\0') || path.isAbsolute(rel)) return undefined;
  const root = path.resolve(hostRoot);
  const full = path.resolve(root, rel);
  const inside = path.relative(root, full);
  if (inside === '' || inside.startsWith('..') || path.isAbsolute(inside)) return undefined;
  return full;
}

/** Keys of the specs with at least one detection path present under the host root. */
export function detectChannels(specs: ChannelSpec[], hostRoot: string, exists: (p: string) => boolean = existsSync): Set<string> {
  const found = new Set<string>();
  for (const spec of specs) {
    for (const rel of spec.detect.anyPath) {
      const full = underRoot(hostRoot, rel);
      if (full !== undefined && safeExists(exists, full)) {
        found.add(spec.key);
        break;
      }
    }
  }
  return found;
}

function safeExists(exists: (p: string) => boolean, p: string): boolean {
  try {
    return exists(p);
  } catch {
    return false;
  }
}

/**
 * The directories worth watching: for each detection path, the nearest
 * existing ancestor of its parent, inside the root. Watching an ancestor
 * when the parent is missing catches the parent's creation (/dev/snd
 * appears with the first sound card), after which the next scan moves the
 * watch down.
 */
export function watchDirs(specs: ChannelSpec[], hostRoot: string, exists: (p: string) => boolean = existsSync): string[] {
  const root = path.resolve(hostRoot);
  const dirs = new Set<string>();
  for (const spec of specs) {
    for (const rel of spec.detect.anyPath) {
      const full = underRoot(root, rel);
      if (full === undefined) continue;
      let dir = path.dirname(full);
      while (dir !== root && dir.startsWith(root) && !safeExists(exists, dir)) dir = path.dirname(dir);
      if (safeExists(exists, dir)) dirs.add(dir);
    }
  }
  return [...dirs].sort();
}

export interface DirWatch {
  close(): void;
}

/** Starts watching `dir`; `onEvent` on any change in it, `onDead` when the watch stops on its own. Throws when it cannot start. */
export type WatchDir = (dir: string, onEvent: () => void, onDead: (err: unknown) => void) => DirWatch;

const nodeWatch: WatchDir = (dir, onEvent, onDead) => {
  const w = fsWatch(dir, { persistent: false }, () => onEvent());
  w.on('error', (err) => {
    w.close();
    onDead(err);
  });
  return { close: () => w.close() };
};

export interface ChannelDetectorOptions {
  specs: ChannelSpec[];
  hostRoot: string;
  clock: Clock;
  /** The detected keys: once during start(), then after each change that held still for debounceMs. */
  onChange: (detected: Set<string>) => void;
  /** Agent ms between rescans (default DETECT_INTERVAL_MS). */
  intervalMs?: number;
  /** Agent ms a new set must hold before it is reported (default DETECT_DEBOUNCE_MS). */
  debounceMs?: number;
  exists?: (p: string) => boolean;
  /** Replaces fs.watch (tests); `null` turns watching off. */
  watch?: WatchDir | null;
  logger?: Logger;
}

interface Armed {
  watch: DirWatch;
  /** The directory's identity when armed: a directory removed and made again needs a new watch. */
  id: string | undefined;
}

const sameSet = (a: Set<string>, b: Set<string>): boolean => a.size === b.size && [...a].every((k) => b.has(k));

export class ChannelDetector {
  private reported: Set<string> | undefined;
  private candidate: Set<string> | undefined;
  private settleTimer: Timer | undefined;
  private tickTimer: Timer | undefined;
  private eventTimer: Timer | undefined;
  private readonly watches = new Map<string, Armed>();
  /** Directories whose watch died since the last tick: re-armed by the tick, so a failing watch cannot spin. */
  private readonly cooling = new Set<string>();
  private running = false;

  constructor(private readonly options: ChannelDetectorOptions) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    const detected = this.scanNow();
    this.reported = detected;
    this.armTick();
    this.report(detected);
  }

  stop(): void {
    this.running = false;
    for (const t of [this.tickTimer, this.settleTimer, this.eventTimer]) t?.cancel();
    this.tickTimer = this.settleTimer = this.eventTimer = undefined;
    this.candidate = undefined;
    for (const armed of this.watches.values()) armed.watch.close();
    this.watches.clear();
    this.cooling.clear();
  }

  /** The set last reported, for status output. */
  get current(): ReadonlySet<string> | undefined {
    return this.reported;
  }

  private get exists(): (p: string) => boolean {
    return this.options.exists ?? existsSync;
  }

  private scanNow(): Set<string> {
    this.rearmWatches();
    return detectChannels(this.options.specs, this.options.hostRoot, this.exists);
  }

  private armTick(): void {
    this.tickTimer = this.options.clock.setTimer(() => {
      if (!this.running) return;
      this.cooling.clear();
      this.rescan();
      this.armTick();
    }, this.options.intervalMs ?? DETECT_INTERVAL_MS);
  }

  private onWatchEvent(): void {
    if (!this.running || this.eventTimer !== undefined) return;
    this.eventTimer = this.options.clock.setTimer(() => {
      this.eventTimer = undefined;
      this.rescan();
    }, DETECT_EVENT_COALESCE_MS);
  }

  /** A scan from the timer or a watch event: starts, keeps or drops the wait for a new set to settle. */
  private rescan(): void {
    if (!this.running) return;
    const detected = this.scanNow();
    if (this.reported !== undefined && sameSet(detected, this.reported)) {
      // Back to what was reported: a flap shorter than the debounce is no change.
      this.settleTimer?.cancel();
      this.settleTimer = this.candidate = undefined;
      return;
    }
    if (this.candidate !== undefined && sameSet(detected, this.candidate)) return;
    this.candidate = detected;
    this.settleTimer?.cancel();
    this.settleTimer = this.options.clock.setTimer(() => this.settle(), this.options.debounceMs ?? DETECT_DEBOUNCE_MS);
  }

  private settle(): void {
    this.settleTimer = undefined;
    if (!this.running || this.candidate === undefined) return;
    const candidate = this.candidate;
    // Confirm with a fresh look: without watch events (sysfs and procfs send
    // none) the set may have moved on since the last scan.
    this.rescan();
    if (this.settleTimer !== undefined || this.candidate !== candidate) return;
    this.candidate = undefined;
    this.reported = candidate;
    this.report(candidate);
  }

  private report(detected: Set<string>): void {
    try {
      this.options.onChange(new Set(detected));
    } catch (err) {
      this.options.logger?.warn({ err: String(err) }, 'channel detection listener failed');
    }
  }

  private rearmWatches(): void {
    const watchFn = this.options.watch === undefined ? nodeWatch : this.options.watch;
    if (watchFn === null) return;
    const wanted = new Set(watchDirs(this.options.specs, this.options.hostRoot, this.exists));
    for (const [dir, armed] of this.watches) {
      if (!wanted.has(dir) || identityOf(dir) !== armed.id) {
        armed.watch.close();
        this.watches.delete(dir);
      }
    }
    for (const dir of wanted) {
      if (this.watches.has(dir) || this.cooling.has(dir)) continue;
      const armed: Armed = { watch: { close: () => undefined }, id: identityOf(dir) };
      try {
        armed.watch = watchFn(
          dir,
          () => this.onWatchEvent(),
          (err) => this.watchDied(dir, armed, err),
        );
        this.watches.set(dir, armed);
      } catch (err) {
        // Out of inotify watches, or the directory went away: the timer still rescans.
        this.options.logger?.debug({ dir, err: String(err) }, 'cannot watch a channel directory');
      }
    }
  }

  private watchDied(dir: string, armed: Armed, err: unknown): void {
    if (this.watches.get(dir) !== armed) return;
    this.watches.delete(dir);
    this.cooling.add(dir);
    this.options.logger?.debug({ dir, err: String(err) }, 'channel directory watch stopped');
    // Whatever killed the watch may have changed the set; the next tick re-arms it.
    this.rescan();
  }
}

/** Inode and birth time: a directory made again at once often gets the same inode number back. */
function identityOf(dir: string): string | undefined {
  try {
    const s = statSync(dir, { bigint: true, throwIfNoEntry: false });
    return s === undefined ? undefined : `${s.dev}:${s.ino}:${s.birthtimeNs}`;
  } catch {
    return undefined;
  }
}
