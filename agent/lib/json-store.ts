// A small JSON object kept in one file of the state dir (the client id, the
// channel record): read whole within a bound, a regular file only (a FIFO
// or a device there is refused before anything opens it), written through
// writeFileAtomic (temp, fsync, rename, directory fsync), mode 0600. It
// replaces conf for these two stores: conf and what it loads (atomically,
// dot-prop, env-paths, node:assert...) cost an idle daemon 1.4 MiB of RSS
// for two keys. The text is conf's (tab-indented JSON), so either reads the
// other's file; conf's leftover temps are still swept (removeConfTemps).
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from './atomic-write.js';
import { checkRegularFileSync, readBoundedTextSync, READ_LIMITS } from './bounded-read.js';

/**
 * The object in `file`, or undefined when there is no file (`source`: the
 * setting that placed it, for the refusal's words). Throws the
 * bounded read's AgentError for a file that is not a regular one or too
 * large, and a SyntaxError (or a TypeError: not an object) for one that is not
 * a JSON object: a caller says which store is corrupt.
 */
export function readJsonStore(file: string, what: string, source?: string): Record<string, unknown> | undefined {
  const spec = { what, maxBytes: READ_LIMITS.small, ...(source !== undefined && { source }) };
  if (checkRegularFileSync(file, spec) === undefined) return undefined;
  const text = readBoundedTextSync(file, spec);
  // An empty file is an empty store, as conf read it.
  if (text.trim() === '') return {};
  const value: unknown = JSON.parse(text);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TypeError('not a JSON object');
  return value as Record<string, unknown>;
}

/** Writes `value` to `file` (its directory made first when missing), durably. */
export async function writeJsonStore(file: string, value: Record<string, unknown>): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  await writeFileAtomic(file, JSON.stringify(value, undefined, '\t'), { mode: 0o600 });
}
