// The daemon's wiring: everything `c2c-agent run` starts, in one place. The
// CLI parses the command line and loads settings; from there this file takes
// the runtime dir and its lock, builds the api client, the token source, the
// controller and the units around it, and owns the process's signals until
// it exits. The units themselves are built in units.ts.
import { readdirSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { ensureDir } from '../lib/ensure-dir.js';
import { removeStaleTemps } from '../lib/atomic-write.js';
import { loadProfiles, selectProfile } from '../config/profiles.js';
import type { Settings } from '../config/types.js';
import type { ClientCredentials } from '../api/oauth.js';
import { getClientId } from '../auth/client-id.js';
import { readClientSecret } from '../auth/client-secret.js';
import { sweepCredentialTemps } from '../auth/credentials-store.js';
import { CLIENT_ID_STORE } from '../auth/client-id.js';
import { CHANNEL_MAP_STORE } from '../channels/channel-map.js';
import { UPLOADED_INDEX_FILE } from '../uploads/uploaded-index.js';
import { UPLOAD_URLS_DIR } from '../uploads/upload-urls.js';
import { queueDirOf } from '../outbox/location.js';
import { SystemClock } from '../lib/clock.js';
import { AgentError, configError } from '../lib/errors.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { ATTEMPT_FILE, attemptToStartFrom, createAttemptStore, readLastAttempt } from './runtime/attempt-record.js';
import { procStartOf } from './runtime/proc.js';
import { acquireRunLock, removeStaleLockTemps } from './runtime/run-lock.js';
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

function sweepTemps(dir: string, logger: Logger, swept: string[]): void {
  if (swept.length > 0) logger.info({ files: swept }, `removed ${swept.length} stale temp file(s) from ${dir}`);
}

/**
 * conf (the client id, the channel record) writes through a temp file named
 * `<store>.json.tmp-<suffix>`; a kill between its creation and the rename
 * leaves it on flash for good. The channel record has no writer but the
 * daemon, which holds the lock now; the client id may be being created by a
 * CLI command (pair, upload), so only its old temps go.
 */
function sweepConfTemps(stateDir: string): string[] {
  const minAgeMs = new Map([
    [`${CHANNEL_MAP_STORE}.json`, 0],
    [`${CLIENT_ID_STORE}.json`, 60_000],
  ]);
  const removed: string[] = [];
  let names: string[] = [];
  try {
    names = readdirSync(stateDir);
  } catch {
    return removed;
  }
  for (const name of names) {
    const m = /^(.+\.json)\.tmp-[0-9a-z]+$/i.exec(name);
    const age = m ? minAgeMs.get(m[1] as string) : undefined;
    if (age === undefined) continue;
    try {
      const file = path.join(stateDir, name);
      if (age > 0 && Date.now() - statSync(file).mtimeMs < age) continue;
      unlinkSync(file);
      removed.push(name);
    } catch {
      // Gone meanwhile: nothing to do.
    }
  }
  return removed;
}

function removeTempsQuietly(dir: string, prefix?: string): string[] {
  try {
    return removeStaleTemps(dir, prefix === undefined ? {} : { prefix });
  } catch {
    // An unlistable dir shows up as soon as we write to it; nothing to add here.
    return [];
  }
}

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
    await ensureDir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw configError(`cannot create the runtime dir ${dir} (${code}); set --runtime-dir or C2C_RUNTIME_DIR (systemd: RuntimeDirectory=)`, 'runtimeDir');
  }
}

/** Runs the daemon until SIGTERM or SIGINT; resolves with the exit code. */
export async function runDaemon(settings: Settings, agentVersion: string): Promise<number> {
  const profile = selectProfile(loadProfiles(settings.profilesDir, settings.sources.profilesDir), settings.firmwareVersion, settings.sources.firmwareVersion ?? 'default');
  const logger = createLogger(settings.logLevel);
  const clock = new SystemClock(settings.timeScale);
  await prepareRuntimeDir(settings.runtimeDir);
  const lock = acquireRunLock(settings.runtimeDir);
  if (lock.kind === 'held') {
    // 75: try again later; the other daemon already keeps this camera online.
    throw new AgentError('conflict', `another c2c-agent run is active (pid ${lock.owner.pid}); stop it first (systemctl stop c2c-agent) or see it with c2c-agent status`);
  }
  // Holding the lock, we are the only writer here: temp files are leftovers of a
  // kill -9, and RuntimeDirectoryPreserve=yes would keep them across restarts.
  sweepTemps(settings.runtimeDir, logger, [...removeTempsQuietly(settings.runtimeDir), ...removeStaleLockTemps(settings.runtimeDir)]);

  const fileBased = settings.token === undefined || settings.token === '';
  if (fileBased) sweepTemps(path.dirname(settings.tokenFile), logger, sweepCredentialTemps(settings.tokenFile));
  sweepTemps(settings.stateDir, logger, sweepConfTemps(settings.stateDir));
  // The upload index and the upload URL files have no writer but the daemon, which holds the lock now.
  sweepTemps(settings.stateDir, logger, removeTempsQuietly(settings.stateDir, UPLOADED_INDEX_FILE));
  sweepTemps(settings.stateDir, logger, removeTempsQuietly(path.join(queueDirOf(settings.stateDir), UPLOAD_URLS_DIR)));
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
