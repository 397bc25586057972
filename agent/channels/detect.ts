// Which of the profile's channels are present on this unit: a channel is
// present when any of its detection paths exists under the host root. The
// detector rescans on a timer and on file-system events (lib/dir-watcher.ts
// decides when), and reports a new set only once it has held still for the
// debounce time, so a connector that rattles does not connect and
// disconnect channels at the service. Cheap on purpose: existsSync and
// statSync only, never a child process.
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Clock, Timer } from '../lib/clock.js';
import { DirWatcher, type WatchDir } from '../lib/dir-watcher.js';
import type { Logger } from '../lib/logger.js';
import type { ChannelSpec } from '../config/types.js';

export const DETECT_INTERVAL_MS = 30_000;
export const DETECT_DEBOUNCE_MS = 5_000;

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

const sameSet = (a: Set<string>, b: Set<string>): boolean => a.size === b.size && [...a].every((k) => b.has(k));

export class ChannelDetector {
  private reported: Set<string> | undefined;
  private candidate: Set<string> | undefined;
  private settleTimer: Timer | undefined;
  private running = false;
  private readonly dirs: DirWatcher;

  constructor(private readonly options: ChannelDetectorOptions) {
    this.dirs = new DirWatcher({
      clock: options.clock,
      pollMs: options.intervalMs ?? DETECT_INTERVAL_MS,
      look: () => this.rescan(),
      watch: options.watch,
      what: 'a channel directory',
      logger: options.logger,
    });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.dirs.start();
    const detected = this.scanNow();
    this.reported = detected;
    this.report(detected);
  }

  stop(): void {
    this.running = false;
    this.settleTimer?.cancel();
    this.settleTimer = this.candidate = undefined;
    this.dirs.stop();
  }

  /** The set last reported, for status output. */
  get current(): ReadonlySet<string> | undefined {
    return this.reported;
  }

  private get exists(): (p: string) => boolean {
    return this.options.exists ?? existsSync;
  }

  private scanNow(): Set<string> {
    // Without watching, the watched directories need not be worked out at all.
    if (this.options.watch !== null) this.dirs.setDirs(watchDirs(this.options.specs, this.options.hostRoot, this.exists));
    return detectChannels(this.options.specs, this.options.hostRoot, this.exists);
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
}
