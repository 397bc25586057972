// Every file the agent writes goes through here. On flash (durable: true) a
// power cut must leave either the old or the new file, never a torn one:
// write a temp file, fsync it, rename over the target, fsync the directory.
// On tmpfs (durable: false) the fsyncs are pointless and skipped.
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import * as fs from './fs-async.js';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

export interface WriteOptions {
  mode?: number;
  durable?: boolean;
  /** Give the file to this owner before it takes the target's name (root writing for a service user). */
  owner?: { uid: number; gid: number };
}

/** The temp files writeFileAtomic makes: `.<name>.<12 hex>.tmp`, next to the target. */
const TEMP_NAME = /^\..+\.[0-9a-f]{12}\.tmp$/;

export function tempPathFor(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
}

export function isAtomicTemp(name: string): boolean {
  return TEMP_NAME.test(name);
}

/**
 * Removes the temp files a writer killed between open and rename left in
 * `dir` (kill -9 skips the cleanup). Only call it while no other process
 * writes there (their temp files look the same), or with `olderThanMs` past
 * any write's duration. `prefix` limits it to one target's temps (its base
 * name). Returns the names removed.
 */
export function removeStaleTemps(dir: string, opts: { prefix?: string; olderThanMs?: number } = {}): string[] {
  const removed: string[] = [];
  for (const name of readdirSync(dir)) {
    if (!isAtomicTemp(name) || (opts.prefix !== undefined && !name.startsWith(`.${opts.prefix}.`))) continue;
    try {
      if (opts.olderThanMs !== undefined && Date.now() - statSync(path.join(dir, name)).mtimeMs < opts.olderThanMs) continue;
      unlinkSync(path.join(dir, name));
      removed.push(name);
    } catch {
      // Gone meanwhile, or not ours to remove: it costs a few bytes, not correctness.
    }
  }
  return removed;
}

/**
 * conf (through `atomically`) writes a store `<name>.json` through
 * `<name>.json.tmp-<suffix>`; a kill between its creation and the rename
 * leaves that file on flash for good. Removes the ones of `storeFile` in
 * `dir` (older than `olderThanMs` where another process may be writing).
 */
export function removeConfTemps(dir: string, storeFile: string, olderThanMs = 0): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return removed; // an unlistable dir shows up as soon as the store is written
  }
  for (const name of names) {
    if (!name.startsWith(`${storeFile}.tmp-`)) continue;
    try {
      const file = path.join(dir, name);
      if (olderThanMs > 0 && Date.now() - statSync(file).mtimeMs < olderThanMs) continue;
      unlinkSync(file);
      removed.push(name);
    } catch {
      // Gone meanwhile: nothing to do.
    }
  }
  return removed;
}

/** removeStaleTemps for a store that sweeps as it opens: a dir it cannot list is the write's problem to report, not this. */
export function sweepOwnTemps(dir: string, opts: { prefix?: string; olderThanMs?: number } = {}): string[] {
  try {
    return removeStaleTemps(dir, opts);
  } catch {
    return [];
  }
}

export async function writeFileAtomic(file: string, data: string | Uint8Array, options: WriteOptions = {}): Promise<void> {
  const { mode = 0o600, durable = true } = options;
  const dir = path.dirname(file);
  const tmp = tempPathFor(file);
  const handle = await fs.open(tmp, 'wx', mode);
  try {
    await handle.writeFile(data);
    if (options.owner !== undefined) await handle.chown(options.owner.uid, options.owner.gid);
    if (durable) await handle.sync();
  } catch (err) {
    await handle.close();
    await fs.rm(tmp, { force: true });
    throw err;
  }
  await handle.close();
  try {
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
  if (durable) await syncDirectory(dir);
}

/**
 * writeFileAtomic without fsync, at once: for a snapshot in the runtime dir
 * (tmpfs, so no disk is waited for) that must be there before the caller's
 * next step, with nothing else let in between. The directory is made when
 * it is gone.
 */
export function writeFileAtomicSync(file: string, data: string, mode = 0o600): void {
  const tmp = tempPathFor(file);
  try {
    writeFileSync(tmp, data, { flag: 'wx', mode });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(tmp, data, { flag: 'wx', mode });
  }
  try {
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/**
 * fsync a directory, so a file created or renamed in it survives a power cut
 * (fsyncing the file alone does not persist its directory entry).
 */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
