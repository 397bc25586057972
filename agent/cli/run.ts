// `c2c-agent run`: the daemon in the foreground, as systemd runs it
// (Type=notify). Wires settings, profile, credentials, the api client, the
// controller, the runtime-dir files and systemd; owns the signals.
import { statSync } from 'node:fs';
import { ensureDir } from '../lib/ensure-dir.js';
import { removeStaleTemps } from '../lib/atomic-write.js';
import { loadSettings } from '../config/settings.js';
import { loadProfiles, selectProfile } from '../config/profiles.js';
import { loadCredentials, type Credentials } from '../auth/credentials.js';
import { createDeviceApi } from '../api/client.js';
import { SystemClock } from '../lib/clock.js';
import { AgentError, configError } from '../lib/errors.js';
import { createLogger } from '../lib/logger.js';
import { Controller } from '../daemon/controller.js';
import { clampBounds } from '../daemon/heartbeat-policy.js';
import { ATTEMPT_FILE, attemptToStartFrom, createAttemptStore, createStatusSink, procStartOf, readLastAttempt } from '../daemon/live-status.js';
import { statusLine } from '../daemon/snapshot.js';
import { acquireRunLock } from '../daemon/run-lock.js';
import { crashHandler, ignoreSignals } from '../daemon/process-guards.js';
import { createSystemdNotifier, Watchdog } from '../daemon/systemd.js';
import type { CommandContext, CommandOptions } from './command.js';
import { agentVersion } from './version.js';

export const usage = 'run';
export const options = {} satisfies CommandOptions;

/** A stop must be over within 5 s (the promise; TimeoutStopSec is 10 s): leave room to spare. */
const HARD_EXIT_MS = 4_500;

function sweepTemps(dir: string): string[] {
  try {
    return removeStaleTemps(dir);
  } catch {
    // An unlistable dir shows up as soon as we write to it; nothing to add here.
    return [];
  }
}

export async function run(ctx: CommandContext): Promise<number> {
  const settings = loadSettings(ctx.settingsOptions, ctx.env);
  const profile = selectProfile(loadProfiles(settings.profilesDir), settings.firmwareVersion, settings.sources.firmwareVersion ?? 'default');
  const logger = createLogger(settings.logLevel);
  const clock = new SystemClock(settings.timeScale);
  const version = agentVersion();
  try {
    await ensureDir(settings.runtimeDir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw configError(`cannot create the runtime dir ${settings.runtimeDir} (${code}); set --runtime-dir or C2C_RUNTIME_DIR (systemd: RuntimeDirectory=)`, 'runtimeDir');
  }
  const lock = acquireRunLock(settings.runtimeDir);
  if (lock.kind === 'held') {
    // 75: try again later; the other daemon already keeps this camera online.
    throw new AgentError(
      'conflict',
      `another c2c-agent run is active (pid ${lock.owner.pid}); stop it first (systemctl stop c2c-agent) or see it with c2c-agent status`,
    );
  }
  // Holding the lock, we are the only writer here: temp files are leftovers of a
  // kill -9, and RuntimeDirectoryPreserve=yes would keep them across restarts.
  const swept = sweepTemps(settings.runtimeDir);
  if (swept.length > 0) logger.info({ files: swept }, `removed ${swept.length} stale temp file(s) from ${settings.runtimeDir}`);

  let creds: Credentials | undefined;
  const warn = (message: string): void => logger.warn(message);
  const api = createDeviceApi({
    baseUrl: settings.apiUrl,
    token: () => creds?.accessToken,
    firmwareVersion: settings.firmwareVersion,
    agentVersion: version,
    clock,
    logger,
  });
  const fileBased = settings.token === undefined || settings.token === '';
  const fingerprint = (): string | undefined => {
    try {
      const st = statSync(settings.tokenFile);
      return `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return undefined;
    }
  };

  const logWriteError = (what: string) => (err: unknown) => logger.warn({ err: String(err) }, `cannot write ${what} in ${settings.runtimeDir}`);
  const statusSink = createStatusSink(settings.runtimeDir, logWriteError('status'));
  const attempts = createAttemptStore(settings.runtimeDir, settings.timeScale, logWriteError('last heartbeat time'));
  const lastRead = readLastAttempt(settings.runtimeDir, settings.timeScale);
  if (lastRead.kind === 'unreadable') {
    logger.warn({ error: lastRead.error }, `cannot read ${ATTEMPT_FILE} in ${settings.runtimeDir}; waiting a full minute before the first heartbeat`);
  }
  const notifier = createSystemdNotifier(process.env, undefined, (err) => logger.warn({ err: String(err) }, 'systemd-notify failed'));

  const controller: Controller = new Controller({
    clock,
    random: Math.random,
    logger,
    api,
    reloadCredentials: () => {
      creds = undefined;
      creds = loadCredentials(settings, warn);
    },
    ...(fileBased && { credentialsFingerprint: fingerprint }),
    bounds: clampBounds(profile.heartbeat),
    lastAttempt: attemptToStartFrom(lastRead, clock.now()),
    persistAttempt: (rec) => attempts.save(rec),
    publish: (snap) => {
      statusSink.write(snap);
      if (notifier.enabled) void notifier.status(statusLine(snap, clock.now()));
    },
    info: {
      firmwareVersion: settings.firmwareVersion,
      profile: profile.id,
      agentVersion: version,
      timeScale: settings.timeScale,
      pid: process.pid,
      ...(procStartOf(process.pid) !== undefined && { procStart: procStartOf(process.pid) as string }),
    },
  });

  const watchdog = new Watchdog(notifier, () => controller.isHealthy());
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
        void notifier.stopping();
        watchdog.stop();
        await controller.stop();
        await Promise.allSettled([statusSink.flush(), attempts.flush()]);
        api.close();
        await notifier.idle();
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
    process.on('SIGHUP', () => controller.reload());
    process.on('unhandledRejection', (err) => logger.error({ err: String(err) }, 'unhandled rejection (a bug); carrying on'));
    process.on('uncaughtException', crashHandler(logger, () => lock.release(), (code) => process.exit(code)));

    controller.start();
    // READY does not wait for the network: start-up is done once the loop runs.
    void notifier.ready(controller.statusLine());
    watchdog.start();
    logger.info(
      { apiUrl: settings.apiUrl, firmwareVersion: settings.firmwareVersion, profile: profile.id, timeScale: settings.timeScale, runtimeDir: settings.runtimeDir },
      'daemon started',
    );
  });
}
