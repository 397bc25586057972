// V8's code cache of the daemon (boot.ts reads it, this file writes it):
// written once the daemon is up, when its first heartbeat has had an outcome,
// answered or failed (or WARM_AFTER_MS after the start, for a camera that is
// not paired), so the cache holds what a start runs up to its first heartbeat
// and little else: what runs later compiles when it first runs, as before.
// Only when the loader found none it could use: once per install or upgrade.
// A daemon that dies young (a crash loop) writes nothing.
import path from 'node:path';
import { sweepOwnTemps, writeFileAtomic } from '../lib/atomic-write.js';
import { readdir, rm } from '../lib/fs-async.js';
import type { EventBus } from '../core/event-bus.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { CODE_CACHE_SUFFIX, takeCodeCacheHook, type CodeCacheHook } from './code-cache-hook.js';
import { DAEMON_V8_FLAGS } from './v8-flags.js';

/** Agent ms after the start at which a daemon with no heartbeat answered yet counts as up. */
export const WARM_AFTER_MS = 60_000;

/** Arms the write; the returned function cancels it (a stop before it ran). Nothing to do without the loader's hook. */
export function keepCodeCacheWhenUp(bus: EventBus, clock: Clock, logger: Logger): () => void {
  const hook = takeCodeCacheHook();
  if (hook === undefined) return () => undefined;
  // Only a cache to write waits for the daemon to be up; the rest is said now, and the hook let go.
  if (hook.found !== 'none') {
    void keepCodeCache(hook, logger);
    return () => undefined;
  }
  // Flags set after the daemon's code was compiled (run.ts) would make V8 refuse at every start what it wrote at the one before.
  if (!DAEMON_V8_FLAGS.every((f) => process.execArgv.includes(f))) {
    logger.debug({ flags: DAEMON_V8_FLAGS }, 'no code cache: node was not started with the daemon\'s V8 flags (the unit gives them)');
    return () => undefined;
  }
  const owner = {};
  const stop = (): void => {
    timer.cancel();
    bus.removeListeners(owner);
  };
  const write = (): void => {
    stop();
    void keepCodeCache(hook, logger);
  };
  const timer = clock.setTimer(write, WARM_AFTER_MS);
  bus.on('stateChanged', owner, ({ snapshot }) => {
    if (snapshot.lastHeartbeat !== undefined) write();
  });
  return stop;
}

/** Writes the code cache when the loader had none it could use; a failure is logged, the daemon runs on. */
export async function keepCodeCache(hook: CodeCacheHook, logger: Logger): Promise<void> {
  const name = path.basename(hook.file);
  switch (hook.found) {
    case 'accepted':
      logger.debug({ file: hook.file }, 'started from the code cache');
      return;
    case 'unreadable':
      logger.warn({ file: hook.file, error: hook.error }, `cannot read the code cache ${hook.file} (${hook.error ?? 'error'}); starts compile the daemon in full`);
      return;
    case 'rejected':
      // Its digest wrong, or refused by V8 under the very name this daemon would write: a damaged file. Gone, the next start makes it again.
      logger.warn({ file: hook.file }, `${hook.error === 'digest' ? 'the code cache is damaged (its digest does not match)' : 'V8 refused the code cache'}: ${hook.file}; removed, the next start writes it again`);
      await rm(hook.file, { force: true }).catch(() => undefined);
      return;
    case 'none':
      break;
  }
  try {
    // A write cut short (a power cut, a kill) left its temp file: the daemon is the directory's one writer.
    sweepOwnTemps(hook.dir);
    const data = hook.produce();
    await writeFileAtomic(hook.file, data, { mode: 0o600 });
    // An older agent's or node's caches: never read again.
    for (const other of await readdir(hook.dir)) {
      if (other.endsWith(CODE_CACHE_SUFFIX) && other !== name) await rm(path.join(hook.dir, other), { force: true });
    }
    logger.info({ file: hook.file, bytes: data.length }, `wrote the code cache ${hook.file}: later starts compile less`);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    logger.warn({ file: hook.file, error: code }, `cannot write the code cache ${hook.file} (${code}); starts compile the daemon in full`);
  }
}
