// The daemon's wiring: everything `c2c-agent run` starts, in one place. The
// CLI parses the command line and loads settings; from there this file takes
// the runtime dir and its lock, builds the api client, the token source, the
// controller and the units around it, and owns the process's signals until
// it exits. The units themselves are built in units.ts.
import { ensureDir } from '../lib/ensure-dir.js';
import { loadProfiles, selectProfile } from '../config/profiles.js';
import type { Settings } from '../config/types.js';
import type { ClientCredentials } from '../api/oauth.js';
import { getClientId } from '../auth/client-id.js';
import { readClientSecret } from '../auth/client-secret.js';
import { SystemClock } from '../lib/clock.js';
import { AgentError, configError } from '../lib/errors.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { ATTEMPT_FILE, attemptToStartFrom, createAttemptStore, readLastAttempt } from './runtime/attempt-record.js';
import { procStartOf } from './runtime/proc.js';
import { acquireRunLock } from './runtime/run-lock.js';
import { crashHandler, ignoreSignals } from './process-guards.js';
import { createSystemdNotifier } from './systemd/notify.js';
import { buildUnits } from './units.js';
import { buildCore } from './core.js';
import { boundsOf } from './heartbeat/policy.js';
import { EventBus } from '../core/event-bus.js';
import { startUnit, stopUnit } from '../core/unit.js';
import { readBootId } from '../outbox/outbox.js';

/** A stop must be over within 5 s (TimeoutStopSec is 10 s): leave room to spare. */
const HARD_EXIT_MS = 4_500;

/**
 * The client id and secret a refresh sends, read once when first needed. No
 * secret configured means no refresh: the token works until it expires and
 * the unit then needs pairing, which the warning says up front.
 */
function clientCredentials(settings: Settings, logger: Logger): () => Promise<ClientCredentials | undefined> {
  let cached: Promise<ClientCredentials | undefined> | undefined;
  return () =>
    (cached ??= (async () => {
      try {
        const { clientId } = await getClientId(settings);
        return { clientId, clientSecret: readClientSecret(settings) };
      } catch (err) {
        logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'cannot refresh tokens without the client id and secret; the unit will need pairing when its token expires');
        cached = undefined;
        return undefined;
      }
    })());
}

async function prepareRuntimeDir(dir: string): Promise<void> {
  try {
    // 0750: the agent's group may reach the local API's socket (api.sock, 0660); nothing in it is secret.
    await ensureDir(dir, 0o750);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw configError(`cannot create the runtime dir ${dir} (${code}); set --runtime-dir or C2C_RUNTIME_DIR (systemd: RuntimeDirectory=)`, 'runtimeDir');
  }
}

/** Runs the daemon until SIGTERM or SIGINT; resolves with the exit code. */
export async function runDaemon(settings: Settings, agentVersion: string): Promise<number> {
  // SIGHUP (systemctl reload: ExecReload sends it) re-reads the credentials.
  // Its default action ends the process, so one that comes before the units
  // run is taken and dropped: the start-up reads the credentials anyway.
  const earlyHup = (): void => undefined;
  process.on('SIGHUP', earlyHup);
  const profile = selectProfile(loadProfiles(settings.profilesDir, settings.sources.profilesDir), settings.firmwareVersion, settings.sources.firmwareVersion ?? 'default');
  const logger = createLogger(settings.logLevel);
  const clock = new SystemClock(settings.timeScale);
  await prepareRuntimeDir(settings.runtimeDir);
  const lock = acquireRunLock(settings.runtimeDir);
  if (lock.kind === 'held') {
    // 75: try again later; the other daemon already keeps this camera online.
    throw new AgentError('conflict', `another c2c-agent run is active (pid ${lock.owner.pid}); stop it first (systemctl stop c2c-agent) or see it with c2c-agent status`);
  }
  if (lock.swept !== undefined && lock.swept.length > 0) logger.info({ files: lock.swept }, `removed ${lock.swept.length} stale temp file(s) from ${settings.runtimeDir}`);

  const logWriteError = (what: string) => (err: unknown) => logger.warn({ err: String(err) }, `cannot write ${what} in ${settings.runtimeDir}`);
  const attempts = createAttemptStore(settings.runtimeDir, settings.timeScale, logWriteError('last heartbeat time'));
  const lastRead = readLastAttempt(settings.runtimeDir, settings.timeScale);
  if (lastRead.kind === 'unreadable') {
    logger.warn({ error: lastRead.error }, `cannot read ${ATTEMPT_FILE} in ${settings.runtimeDir}; waiting a full minute before the first heartbeat`);
  }
  const notifier = createSystemdNotifier(process.env, undefined, (err) => logger.warn({ err: String(err) }, 'systemd-notify failed'));
  const procStart = procStartOf(process.pid);
  const bus = new EventBus(logger);
  const core = buildCore({
    settings,
    agentVersion,
    clock,
    random: Math.random,
    logger,
    bus,
    bounds: boundsOf(profile.heartbeat),
    client: clientCredentials(settings, logger),
    controller: {
      lastAttempt: attemptToStartFrom(lastRead, clock.now()),
      persistAttempt: (rec) => attempts.save(rec),
      info: {
        firmwareVersion: settings.firmwareVersion,
        profile: profile.id,
        agentVersion,
        timeScale: settings.timeScale,
        pid: process.pid,
        ...(procStart !== undefined && { procStart }),
      },
    },
  });
  const { api } = core;
  const { units, controller } = buildUnits({
    settings,
    profile,
    clock,
    random: Math.random,
    logger,
    bus,
    core,
    notifier,
    bootId: await readBootId(),
    onStatusWriteError: logWriteError('status'),
    agentVersion,
  });
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
        for (const u of [...units].reverse()) await stopUnit(bus, u).catch((err: unknown) => logger.warn({ unit: u.name, err: String(err) }, 'unit failed to stop cleanly'));
        await attempts.flush().catch(() => undefined);
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
    process.off('SIGHUP', earlyHup);
    process.on('SIGHUP', () => controller.reload());
    process.on('unhandledRejection', (err) => logger.error({ err: String(err) }, 'unhandled rejection (a bug); carrying on'));
    process.on('uncaughtException', crashHandler(logger, () => lock.release(), (code) => process.exit(code)));

    for (const u of units) {
      startUnit(bus, u);
      // READY does not wait for the network: start-up is done once the loop runs.
      if (u === controller) void notifier.ready(controller.statusLine());
    }
    logger.info(
      { apiUrl: settings.apiUrl, firmwareVersion: settings.firmwareVersion, profile: profile.id, timeScale: settings.timeScale, runtimeDir: settings.runtimeDir },
      'daemon started',
    );
  });
}
