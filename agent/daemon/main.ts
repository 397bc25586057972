// The daemon's wiring: everything `c2c-agent run` starts, in one place. The
// CLI parses the command line and loads settings; from there this file takes
// the runtime dir and its lock and the state dir's lock (state-lock.ts),
// builds the api client, the token source, the controller and the units
// around it (daemon.ts, which the end-to-end tests build in their own
// process too), and owns the process's signals until it exits. The units
// themselves are built in units.ts.
import { ensureDir } from '../lib/ensure-dir.js';
import { loadProfiles, selectProfile } from '../config/profiles.js';
import type { Settings } from '../config/types.js';
import { SystemClock } from '../lib/clock.js';
import { AgentError, configError } from '../lib/errors.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { procStartOf } from './runtime/proc.js';
import { acquireRunLock } from './runtime/run-lock.js';
import { acquireStateLock, type StateLockHolder } from './state-lock.js';
import { crashHandler, ignoreSignals } from './process-guards.js';
import { createSystemdNotifier } from './systemd/notify.js';
import { buildDaemon } from './daemon.js';
import { readBootId } from '../outbox/outbox.js';
import { keepCodeCacheWhenUp } from './code-cache.js';
import { useDaemonV8Flags } from './v8-flags.js';

/** A stop must be over within 5 s (TimeoutStopSec is 10 s): leave room to spare. */
const HARD_EXIT_MS = 4_500;

async function prepareRuntimeDir(dir: string): Promise<void> {
  try {
    // 0750: the agent's group may reach the local API's socket (api.sock, 0660); nothing in it is secret.
    await ensureDir(dir, 0o750);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw configError(`cannot create the runtime dir ${dir} (${code}); set --runtime-dir or C2C_RUNTIME_DIR (systemd: RuntimeDirectory=)`, 'runtimeDir');
  }
}

/**
 * The state dir's lock (state-lock.ts), the state dir made first when
 * missing (its inode names the lock; the daemon would make it anyway). Held
 * by another process: 75, naming it.
 */
async function takeStateLock(settings: Settings, me: StateLockHolder, clock: SystemClock, logger: Logger): Promise<{ release(): void }> {
  await ensureDir(settings.stateDir, 0o700).catch((err: unknown) =>
    logger.warn({ stateDir: settings.stateDir, err: String(err) }, 'cannot create the state dir; its lock is taken by its path'),
  );
  const r = await acquireStateLock(settings.stateDir, me, clock);
  if (r.kind === 'acquired') return r;
  const h = r.holder;
  const who = h === undefined ? 'a process that did not say its pid' : `pid ${h.pid}${h.runtimeDir !== undefined && h.runtimeDir !== settings.runtimeDir ? `, runtime dir ${h.runtimeDir}` : ''}`;
  throw new AgentError('conflict', `another c2c-agent run is active (${who}) on the state dir ${settings.stateDir}; stop it first (systemctl stop c2c-agent), or give this one a state dir of its own (--state-dir)`);
}

/** Runs the daemon until SIGTERM or SIGINT; resolves with the exit code. */
export async function runDaemon(settings: Settings, agentVersion: string): Promise<number> {
  // The daemon's V8 flags (v8-flags.ts): the unit gives them to node; set here when it did not, before anything is hot.
  useDaemonV8Flags();
  // SIGHUP (systemctl reload: ExecReload sends it) re-reads the credentials.
  // Its default action ends the process, so one that comes before the units
  // run is taken and dropped: the start-up reads the credentials anyway.
  const earlyHup = (): void => undefined;
  process.on('SIGHUP', earlyHup);
  const profile = selectProfile(loadProfiles(settings.profilesDir, settings.sources.profilesDir), settings.firmwareVersion, settings.sources.firmwareVersion ?? 'default');
  const logger = createLogger(settings.logLevel);
  const clock = new SystemClock(settings.timeScale);
  await prepareRuntimeDir(settings.runtimeDir);
  const runLock = acquireRunLock(settings.runtimeDir);
  if (runLock.kind === 'held') {
    // 75: try again later; the other daemon already keeps this camera online.
    throw new AgentError('conflict', `another c2c-agent run is active (pid ${runLock.owner.pid}); stop it first (systemctl stop c2c-agent) or see it with c2c-agent status`);
  }
  const procStart = procStartOf(process.pid);
  // One daemon per state dir too, whatever its runtime dir (state-lock.ts): before anything reads or sweeps the state dir.
  const stateLock = await takeStateLock(settings, { pid: process.pid, ...(procStart !== undefined && { procStart }), runtimeDir: settings.runtimeDir }, clock, logger).catch((err: unknown) => {
    runLock.release();
    throw err;
  });
  const lock = {
    release: (): void => {
      stateLock.release();
      runLock.release();
    },
  };
  const swept = runLock.swept;
  if (swept !== undefined && swept.length > 0) logger.info({ files: swept }, `removed ${swept.length} stale temp file(s) from ${settings.runtimeDir}`);

  const notifier = createSystemdNotifier(process.env, undefined, (err) => logger.warn({ err: String(err) }, 'systemd-notify failed'));
  // The daemon itself (daemon.ts): the end-to-end tests build the same one in their own process.
  const daemon = buildDaemon({
    settings,
    agentVersion,
    profile,
    clock,
    random: Math.random,
    logger,
    notifier,
    bootId: await readBootId(),
    pid: process.pid,
    ...(procStart !== undefined && { procStart }),
  });
  const { controller } = daemon;
  // Once up: V8's code cache of the daemon written, when its loader found none (code-cache.ts).
  const cancelCodeCache = keepCodeCacheWhenUp(daemon.bus, clock, logger);
  // Timers come and go with the state; this keeps the loop alive between them until a signal.
  const keepAlive = setInterval(() => {}, 3_600_000);

  return new Promise<number>((resolve) => {
    let stopping = false;
    const shutdown = (signal: string): void => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, 'stopping');
      // Whatever hangs (a stuck socket, a slow disk), systemd must see us gone within 5 s.
      const hard = setTimeout(() => {
        logger.warn('clean shutdown took too long; exiting anyway');
        lock.release();
        process.exit(0);
      }, HARD_EXIT_MS);
      void (async () => {
        cancelCodeCache();
        await daemon.stop();
        lock.release();
        clearInterval(keepAlive);
        clearTimeout(hard);
        ignoreSignals(process);
        // A handle someone forgot must not keep a stopped daemon alive.
        setTimeout(() => process.exit(0), 500).unref();
        resolve(0);
      })();
    };
    process.on('SIGTERM', () => shutdown('SIGTERM'));
    process.on('SIGINT', () => shutdown('SIGINT'));
    process.off('SIGHUP', earlyHup);
    process.on('SIGHUP', () => controller.reload());
    process.on('unhandledRejection', (err) => logger.error({ err: String(err) }, 'unhandled rejection (a bug); carrying on'));
    process.on('uncaughtException', crashHandler(logger, () => lock.release(), (code) => process.exit(code)));

    void daemon.start();
    logger.info(
      { apiUrl: settings.apiUrl, firmwareVersion: settings.firmwareVersion, profile: profile.id, timeScale: settings.timeScale, runtimeDir: settings.runtimeDir },
      'daemon started',
    );
  });
}
