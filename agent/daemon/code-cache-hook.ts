// What the daemon file's loader (boot.ts, dist/c2c-agentd.cjs) tells the
// daemon (code-cache.ts, in dist/c2c-agentd-main.cjs) about V8's code cache:
// where it is, what the loader found there, and how to make a new one. The
// two are separate files, so this goes through one well-known global.

export const CODE_CACHE_HOOK = Symbol.for('c2c-agent.daemon-code-cache');

/** What the loader found in the cache directory for this daemon file, node and architecture. */
export type CodeCacheFound = 'accepted' | 'rejected' | 'none' | 'unreadable';

export interface CodeCacheHook {
  /** The cache directory ($CACHE_DIRECTORY, systemd's CacheDirectory=). */
  readonly dir: string;
  /** The cache file of this daemon file, node version and architecture, in `dir`. */
  readonly file: string;
  readonly found: CodeCacheFound;
  /** Why the file could not be read ('unreadable'): an errno code; or 'digest' for a file whose data is not what its digest says ('rejected'). */
  readonly error?: string;
  /** The cache file's bytes (digest, then V8's data) of everything compiled so far: the daemon's start and first heartbeat, when called then. */
  produce(): Buffer;
}

/** The cache files the loader writes end so: the daemon removes every other one (an older agent's or node's) when it writes its own. */
export const CODE_CACHE_SUFFIX = '.v8cache';

/**
 * The cache file's name. V8 checks a cache against its own version, its flags
 * and the source's length only, so the name holds what else must match: the
 * daemon file's bytes (`sourceId`, a hash of what the loader read: two builds
 * of one length and time never share a cache), node's version, the
 * architecture, and the node options it runs with (a daemon started with
 * other V8 flags gets a file of its own, not one V8 refuses).
 */
export function codeCacheName(sourceId: string): string {
  return `c2c-agentd-${sourceId}-${process.version}-${process.arch}-${fnv1a(`${process.execArgv.join(' ')}|${process.env.NODE_OPTIONS ?? ''}`)}${CODE_CACHE_SUFFIX}`;
}

/**
 * A cache file is the SHA-256 of V8's data, then the data. V8 checks no
 * checksum of its own (only with --verify-snapshot-checksum), and a damaged
 * cache that passes its header's checks can crash node before the daemon
 * logs a line: the loader checks this first and gives V8 nothing that fails.
 */
export const CODE_CACHE_DIGEST_BYTES = 32;

/** FNV-1a, 32 bits, as 8 hex digits: a name, not a secret, and no module to load for it. */
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

/** The loader's hook, taken once: the global lets go of it, so the loader's script is not kept for it after its one use. */
export function takeCodeCacheHook(): CodeCacheHook | undefined {
  const g = globalThis as Record<symbol, unknown>;
  const hook = g[CODE_CACHE_HOOK] as CodeCacheHook | undefined;
  delete g[CODE_CACHE_HOOK];
  return hook;
}
