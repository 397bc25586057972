// The facts about the unit the `channels` and `status --json` commands show:
// model and serial, OS, USB and audio devices, free space where the agent
// keeps state and media. For the operator, never for a decision.
//
// systeminformation forks processes on every call (dmidecode, lsusb, lspci,
// some of them synchronously), so it is imported only here, only when a
// command asks, and its answers are kept for the life of the process; the
// daemon never calls this. Of its functions only system(), usb() and
// audio() are used: the OS comes from os-release and uname (osInfo() forks
// five times for the same three strings) and free space from statfs on the
// path itself (fsSize() forks df and lists every mount).
import * as fs from '../lib/fs-async.js';
import os from 'node:os';
import path from 'node:path';
import { SystemClock, type Clock } from '../lib/clock.js';
import { oneLine } from '../lib/text.js';
import { READ_LIMITS, readBoundedText } from '../lib/bounded-read.js';

export interface OsFacts {
  distro?: string;
  release?: string;
  codename?: string;
  kernel?: string;
  arch?: string;
}

export interface UsbDeviceFacts {
  name?: string;
  vendor?: string;
  manufacturer?: string;
  type?: string;
  bus?: number;
  deviceId?: number;
}

export interface AudioDeviceFacts {
  name?: string;
  manufacturer?: string;
  type?: string;
  driver?: string;
  in?: boolean;
  out?: boolean;
}

export interface SpaceFacts {
  /** The path asked about. */
  path: string;
  /** The nearest existing ancestor measured instead, when the path does not exist (yet). */
  measuredAt?: string;
  freeBytes?: number;
  totalBytes?: number;
}

export interface HardwareFacts {
  manufacturer?: string;
  model?: string;
  serial?: string;
  os?: OsFacts;
  usb?: UsbDeviceFacts[];
  audio?: AudioDeviceFacts[];
  space?: { stateDir?: SpaceFacts; mediaDir?: SpaceFacts };
  /** Facts that could not be read (failed or too slow), by name. */
  missing?: string[];
}

/** The part of systeminformation used here, so tests can stand in for it. */
export interface SystemInfoLike {
  system(): Promise<{ manufacturer?: string; model?: string; serial?: string }>;
  usb(): Promise<Array<Record<string, unknown>>>;
  audio(): Promise<Array<Record<string, unknown>>>;
}

export interface HardwareProbeDeps {
  load?: () => Promise<SystemInfoLike>;
  clock?: Clock;
  /** Agent ms one systeminformation call may take before its fact is left out (default 10 000). */
  limitMs?: number;
  osReleaseFiles?: string[];
}

const DEFAULT_LIMIT_MS = 10_000;

// systeminformation's stand-ins for "unknown", and firmware vendors' filler.
const PLACEHOLDER = /^(?:-|computer|unknown|default string|to be filled by o\.e\.m\.|not specified|none|0+)$/i;

const text = (v: unknown): string | undefined => {
  if (typeof v !== 'string') return undefined;
  const s = oneLine(v, 120);
  return s === '' || PLACEHOLDER.test(s) ? undefined : s;
};
const int = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) ? v : undefined);
const bool = (v: unknown): boolean | undefined => (typeof v === 'boolean' ? v : undefined);

/** Drops undefined fields, so the JSON output has no nulls and the types' "optional" holds. */
function compact<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return o;
}

// The three modules by path, not the package's index: the index loads all of
// its 20 modules (300 KB of the bundle) to offer functions never called here.
async function loadSystemInformation(): Promise<SystemInfoLike> {
  const [system, usb, audio] = await Promise.all([
    import('systeminformation/lib/system.js'),
    import('systeminformation/lib/usb.js'),
    import('systeminformation/lib/audio.js'),
  ]);
  const pick = <K extends keyof SystemInfoLike>(mod: { default?: unknown }, name: K): SystemInfoLike[K] =>
    ((mod.default ?? mod) as SystemInfoLike)[name];
  return { system: pick(system, 'system'), usb: pick(usb, 'usb'), audio: pick(audio, 'audio') };
}

/** Resolves with fn's value, or undefined when it fails or outlasts the limit. */
function bounded<T>(clock: Clock, limitMs: number, fn: () => Promise<T>): Promise<T | undefined> {
  return new Promise((resolve) => {
    const timer = clock.setTimer(() => resolve(undefined), limitMs);
    const done = (v: T | undefined): void => {
      timer.cancel();
      resolve(v);
    };
    try {
      fn().then(done, () => done(undefined));
    } catch {
      done(undefined);
    }
  });
}

function usbOf(list: unknown): UsbDeviceFacts[] | undefined {
  if (!Array.isArray(list)) return undefined;
  return list.map((d: Record<string, unknown>) =>
    compact({ name: text(d.name), vendor: text(d.vendor), manufacturer: text(d.manufacturer), type: text(d.type), bus: int(d.bus), deviceId: int(d.deviceId) }),
  );
}

function audioOf(list: unknown): AudioDeviceFacts[] | undefined {
  if (!Array.isArray(list)) return undefined;
  return list.map((d: Record<string, unknown>) =>
    compact({ name: text(d.name), manufacturer: text(d.manufacturer), type: text(d.type), driver: text(d.driver), in: bool(d.in), out: bool(d.out) }),
  );
}

async function osFacts(files: string[]): Promise<OsFacts> {
  const out: OsFacts = { kernel: text(os.release()), arch: text(os.arch()) };
  for (const file of files) {
    const body = await readBoundedText(file, { what: 'os-release file', maxBytes: READ_LIMITS.small }).catch(() => undefined);
    if (body === undefined) continue;
    const vars = new Map<string, string>();
    for (const line of body.split('\n')) {
      const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
      if (m) vars.set(m[1]!, m[2]!.replace(/^(["'])(.*)\1$/, '$2'));
    }
    out.distro = text(vars.get('NAME') ?? vars.get('ID'));
    out.release = text(vars.get('VERSION_ID') ?? vars.get('VERSION'));
    out.codename = text(vars.get('VERSION_CODENAME'));
    break;
  }
  return compact(out);
}

/** statfs of the path, or of its nearest existing ancestor when it does not exist. */
async function spaceAt(p: string): Promise<SpaceFacts> {
  const asked = path.resolve(p);
  let at = asked;
  for (;;) {
    try {
      const s = await fs.statfs(at);
      const out: SpaceFacts = { path: asked, freeBytes: s.bavail * s.bsize, totalBytes: s.blocks * s.bsize };
      if (at !== asked) out.measuredAt = at;
      return out;
    } catch {
      const up = path.dirname(at);
      if (up === at) return { path: asked };
      at = up;
    }
  }
}

/** A probe with its own process-long cache of the forking facts. */
export function createHardwareProbe(deps: HardwareProbeDeps = {}): (paths: { stateDir: string; mediaDir?: string }) => Promise<HardwareFacts> {
  let cached: Promise<HardwareFacts> | undefined;

  async function forkingFacts(): Promise<HardwareFacts> {
    const clock = deps.clock ?? new SystemClock();
    const limit = deps.limitMs ?? DEFAULT_LIMIT_MS;
    const si = await bounded(clock, limit, deps.load ?? loadSystemInformation);
    const [system, usb, audio, osInfo] = await Promise.all([
      si ? bounded(clock, limit, () => si.system()) : undefined,
      si ? bounded(clock, limit, () => si.usb()) : undefined,
      si ? bounded(clock, limit, () => si.audio()) : undefined,
      osFacts(deps.osReleaseFiles ?? ['/etc/os-release', '/usr/lib/os-release']).catch(() => undefined),
    ]);
    const facts: HardwareFacts = compact({
      manufacturer: text(system?.manufacturer),
      model: text(system?.model),
      serial: text(system?.serial),
      os: osInfo,
      usb: usbOf(usb),
      audio: audioOf(audio),
    });
    const missing = [system === undefined ? 'system' : '', usb === undefined ? 'usb' : '', audio === undefined ? 'audio' : ''].filter(Boolean);
    if (missing.length > 0) facts.missing = missing;
    return facts;
  }

  return async (paths) => {
    cached ??= forkingFacts().catch((): HardwareFacts => ({ missing: ['system', 'usb', 'audio'] }));
    const [base, state, media] = await Promise.all([
      cached,
      spaceAt(paths.stateDir).catch(() => undefined),
      paths.mediaDir === undefined ? undefined : spaceAt(paths.mediaDir).catch(() => undefined),
    ]);
    const space = compact({ stateDir: state, mediaDir: media });
    // A copy: callers may edit what they print without changing the cache.
    const out: HardwareFacts = structuredClone(base);
    if (Object.keys(space).length > 0) out.space = space;
    return out;
  };
}

/** The facts, systeminformation loaded on first use and its answers kept for the process. */
export const hardwareFacts = createHardwareProbe();
