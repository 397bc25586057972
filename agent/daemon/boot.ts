// Entry of dist/c2c-agentd.cjs, the file the unit's ExecStart runs. It loads
// the daemon (dist/c2c-agentd-main.cjs, built from entry.ts) and, when systemd
// gives the service a cache directory (CacheDirectory=, $CACHE_DIRECTORY),
// through V8's code cache there: a start then deserializes the bytecode of
// what the last start compiled instead of parsing and compiling the daemon's
// 500 KB again (docs/benchmarks.md, "Start-up"). The daemon writes the cache
// itself once it is up (code-cache.ts), as a whole file or not at all (temp,
// fsync, rename). Without the directory, or when V8 refuses the file (its
// own version, its flags, the source's length and the data's length are
// checked; and the loader checks the file's own digest before V8 sees it,
// code-cache-hook.ts), the daemon is compiled without the cache.
//
// The daemon's file is built as CommonJS's wrapper function itself
// (`daemonOptions` in scripts/build-config.mjs): it is compiled as read, with
// no wrapped copy of its 500 KB made at every start, which V8 would keep in
// its large-object space until its first full collection (docs/benchmarks.md).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type Module from 'node:module';
import path from 'node:path';
import { Script } from 'node:vm';
import { CODE_CACHE_DIGEST_BYTES, CODE_CACHE_HOOK, codeCacheName, type CodeCacheFound, type CodeCacheHook } from './code-cache-hook.js';

const MAIN = path.join(__dirname, 'c2c-agentd-main.cjs');

const sha256 = (data: Buffer): Buffer => createHash('sha256').update(data).digest();

/** Compiles the daemon's file (through the cache in `dir`, when given) and runs it as CommonJS runs a file. */
function loadDaemon(main: string, dir: string | undefined): void {
  // One read: the bytes that are hashed for the cache's name are the bytes compiled.
  const bytes = readFileSync(main);
  const source = bytes.toString('utf8');
  if (dir === undefined) return run(main, new Script(source, { filename: main }));
  const file = path.join(dir, codeCacheName(sha256(bytes).toString('hex').slice(0, 16)));
  let cachedData: Buffer | undefined;
  let found: CodeCacheFound = 'none';
  let error: string | undefined;
  try {
    const stored = readFileSync(file);
    const data = stored.subarray(CODE_CACHE_DIGEST_BYTES);
    if (stored.length > CODE_CACHE_DIGEST_BYTES && sha256(data).equals(stored.subarray(0, CODE_CACHE_DIGEST_BYTES))) cachedData = data;
    else {
      found = 'rejected';
      error = 'digest';
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') {
      found = 'unreadable';
      error = code ?? String(err);
    }
  }
  // No import() in the daemon's code: node 20 answers it here only behind --experimental-vm-modules (lib/builtin.ts).
  const script = new Script(source, { filename: main, ...(cachedData !== undefined && { cachedData }) });
  if (cachedData !== undefined) found = script.cachedDataRejected === true ? 'rejected' : 'accepted';
  const produce = (): Buffer => {
    const data = script.createCachedData();
    return Buffer.concat([sha256(data), data]);
  };
  const hook: CodeCacheHook = { dir, file, found, ...(error !== undefined && { error }), produce };
  (globalThis as Record<symbol, unknown>)[CODE_CACHE_HOOK] = hook;
  run(main, script);
}

/** The file's function, called with what CommonJS gives a file, so the daemon's code runs as it would from require(). */
function run(main: string, script: Script): void {
  // This file's own Module class and require(), which resolve from the same directory: node:module itself
  // would load node's ES module loader with it (about 1.3 ms of a start under the unit's flags).
  const mod = new (module.constructor as typeof Module)(main, module);
  mod.filename = main;
  (script.runInThisContext() as (...args: unknown[]) => void)(mod.exports, require, mod, main, path.dirname(main));
}

// systemd's variable may list several directories (CacheDirectory= with several names): the first is ours.
const cacheDir = (process.env.CACHE_DIRECTORY ?? '').split(':')[0];
loadDaemon(MAIN, cacheDir === undefined || cacheDir === '' ? undefined : cacheDir);
