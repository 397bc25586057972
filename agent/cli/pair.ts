// `c2c-agent pair [--json] [--timeout SECONDS]`: device-code pairing. Shows
// the code (large, with a QR code of the verification URL on a terminal;
// plain lines elsewhere; JSON Lines with --json, so a camera's own screen can
// drive the flow), polls until the person approves, stores the credentials
// durably, verifies them with GET /v2/devices/me and tells a running daemon
// to use them at once. Ctrl-C or SIGTERM cancels at any step (130 / 143).
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Device } from '../api/types.js';
import { createServiceApi, type ServiceApi } from '../api/service.js';
import { getClientId } from '../auth/client-id.js';
import { readClientSecret } from '../auth/client-secret.js';
import { fileFromGrant, saveCredentials } from '../auth/credentials-store.js';
import { pairDevice, type PairingEvent } from '../auth/pairing.js';
import { loadSettings } from '../config/settings.js';
import type { Settings } from '../config/types.js';
import { nudgeDaemon } from '../daemon/runtime/run-lock.js';
import { checkDirectorySync, checkRegularFileSync, READ_LIMITS } from '../lib/bounded-read.js';
import { SystemClock, sleep } from '../lib/clock.js';
import { ensureDir } from '../lib/ensure-dir.js';
import { AgentError, EXIT, usageError } from '../lib/errors.js';
import { fsError } from '../lib/fs-errors.js';
import { oneLine, quote } from '../lib/text.js';
import type { CommandContext, CommandOptions } from './command.js';
import { describeError, fail, printError, printJsonLine } from './output.js';
import { PairReporter } from './pair-report.js';
import { agentVersion } from './version.js';

export const usage = 'pair [--json] [--timeout SECONDS]';
export const options = { json: { type: 'boolean' }, timeout: { type: 'string' } } satisfies CommandOptions;

/** Long enough for a person to find the app and type a code a few times over. */
export const DEFAULT_TIMEOUT_S = 600;
const SIGNAL_EXIT: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };

function timeoutOf(value: unknown): number {
  if (value === undefined) return DEFAULT_TIMEOUT_S;
  const n = typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) : NaN;
  if (!(n > 0)) throw usageError(`pair: --timeout ${quote(String(value))} must be a positive number of seconds; run c2c-agent pair --help`);
  return n;
}

/** About what writing the credentials takes (temp file, rename): a full disk fails here, not after the grant. */
const PROBE_BYTES = 4096;

/** Writes, flushes and removes a small file in `dir`: what saving the credentials will do there. Throws the raw fs error. */
export async function writeProbe(dir: string): Promise<void> {
  const file = path.join(dir, `.c2c-agent-write-probe.${process.pid}.${randomBytes(4).toString('hex')}`);
  const handle = await fs.open(file, 'wx', 0o600);
  try {
    await handle.writeFile(Buffer.alloc(PROBE_BYTES));
    await handle.sync();
  } finally {
    await handle.close().catch(() => undefined);
    await fs.rm(file, { force: true });
  }
}

/**
 * Before the service is asked for a code: once it has issued tokens, a
 * state dir that is missing, not a directory or not writable would lose the
 * approved pairing. The state dir (and the token file's directory, when
 * elsewhere) is made if missing (0700) and must take a write; the token file,
 * if there, must be a regular file (rename cannot replace a directory).
 */
export async function prepareCredentialsDirs(settings: Pick<Settings, 'stateDir' | 'tokenFile' | 'sources'>, probe: (dir: string) => Promise<void> = writeProbe): Promise<void> {
  const dirs = new Map([[settings.stateDir, { what: 'state dir', source: settings.sources.stateDir }]]);
  const tokenDir = path.dirname(settings.tokenFile);
  if (!dirs.has(tokenDir)) dirs.set(tokenDir, { what: 'directory of the credentials file', source: settings.sources.tokenFile });
  for (const [dir, spec] of dirs) {
    if (!checkDirectorySync(dir, spec)) {
      await ensureDir(dir, 0o700).catch((err: unknown) => {
        throw fsError(err, `create the ${spec.what}`, dir, spec.source);
      });
    }
    await probe(dir).catch((err: unknown) => {
      throw fsError(err, `write in the ${spec.what} (where the credentials will be stored)`, dir, spec.source);
    });
  }
  checkRegularFileSync(settings.tokenFile, { what: 'credentials file', maxBytes: READ_LIMITS.credentials, source: settings.sources.tokenFile });
}

class Cancelled extends Error {
  constructor(readonly signal: string) {
    super(`pairing cancelled (${signal}); nothing was stored`);
  }
}

function deviceSummary(d: Device): Record<string, unknown> {
  return { id: d.id, name: d.name ?? null, status: d.status ?? null, project_id: d.project_id ?? d.project?.id ?? null, project: d.project?.name ?? null };
}

export async function run(ctx: CommandContext): Promise<number> {
  const ac = new AbortController();
  let storing = false;
  const onSignal = (sig: NodeJS.Signals): void => {
    // Once the service has issued the tokens, storing them is the only way not to lose the pairing.
    if (!storing) ac.abort(new Cancelled(sig));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let reporter: PairReporter | undefined;
  let api: ServiceApi | undefined;
  try {
    const timeoutS = timeoutOf(ctx.values.timeout);
    const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: true });
    const clientSecret = readClientSecret(settings);
    await prepareCredentialsDirs(settings);
    const { clientId } = await getClientId(settings);
    const clock = new SystemClock(settings.timeScale);
    const startedAt = clock.now();
    let accessToken: string | undefined;
    api = createServiceApi({ baseUrl: settings.apiUrl, token: () => accessToken, firmwareVersion: settings.firmwareVersion, agentVersion: agentVersion(), clock });
    reporter = new PairReporter(ctx.json, clock);
    const shown = reporter;
    const grant = await pairDevice({
      oauth: api.oauth,
      client: { clientId, clientSecret },
      clock,
      random: Math.random,
      signal: ac.signal,
      timeoutMs: timeoutS * 1000,
      onEvent: (e: PairingEvent) => shown.event(e),
    });
    // Verified before stored, so no answer a proxy or a captive portal made up
    // ever lands on flash as credentials (verifyGrant says what is kept when).
    accessToken = grant.accessToken;
    reporter.status('approved; verifying the new credentials with the service…');
    const verified = await verifyGrant(api, clock, startedAt + timeoutS * 1000, ac.signal);
    storing = true;
    reporter.status(verified.device ? 'verified; storing the credentials…' : 'storing the credentials (not verified yet)…');
    await saveCredentials(settings.tokenFile, fileFromGrant(grant, clock)).catch((err: unknown) => {
      // Checked writable before the code was asked for, so something changed meanwhile; the grant is gone with this process.
      throw fsError(err, 'store the approved credentials (pair again once this is fixed)', settings.tokenFile, settings.sources.tokenFile);
    });
    // The daemon hears of the new pair at once: the old one was revoked by this pairing.
    const nudge = nudgeDaemon(settings.runtimeDir);
    if (verified.device === undefined) {
      const e = verified.error;
      throw new AgentError(e.kind, `paired, and the credentials are stored in ${settings.tokenFile}, but the service could not confirm them yet: ${e.message}; the daemon verifies them once it reaches the service (or run \`c2c-agent check\`)`, e.details);
    }
    const device = verified.device;
    const daemon =
      nudge.kind === 'signalled' ? `the running daemon (pid ${nudge.pid}) now uses them` : nudge.kind === 'denied' ? `run \`systemctl reload c2c-agent\` so the daemon (pid ${nudge.pid}) uses them` : 'no daemon runs; start it with `systemctl start c2c-agent`';
    const warnings = settings.token ? ['C2C_TOKEN is set and takes precedence over the stored credentials; unset it'] : [];
    reporter.done(
      { event: 'paired', ok: true, exitCode: EXIT.ok, device: deviceSummary(device), credentials: settings.tokenFile, daemon: nudge.kind, warnings },
      [
        // Names the service sent: one bounded line each, whatever they hold.
        `paired: ${oneLine(device.name ?? '(unnamed)', 120)} (device ${oneLine(device.id, 80)})`,
        `project: ${oneLine(device.project?.name ?? '(name not sent)', 120)} (id ${oneLine(device.project_id ?? device.project?.id ?? 'unknown', 80)})`,
        `credentials: ${settings.tokenFile}`,
        `daemon: ${daemon}`,
        ...warnings.map((w) => `warning: ${w}`),
      ],
    );
    return EXIT.ok;
  } catch (err) {
    const cancelled = err instanceof Cancelled;
    const exitCode = cancelled ? (SIGNAL_EXIT[err.signal] ?? 130) : exitOf(err);
    const error = cancelled ? { kind: 'cancelled', message: err.message } : describeError(err);
    const last = { event: 'failed', ok: false, exitCode, error };
    // --json promises a failed event as the last line, setup errors (a bad secret file) included.
    if (reporter) reporter.done(last, []);
    else if (ctx.json) printJsonLine(last);
    if (cancelled) {
      printError(err.message);
      return exitCode;
    }
    return fail(err, { json: false });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    api?.close();
  }
}

function exitOf(err: unknown): number {
  return err instanceof AgentError ? err.exitCode : EXIT.internal;
}

/** Tries of GET /v2/devices/me with the new token, and the pause between them (agent ms). */
const VERIFY_TRIES = 4;
const VERIFY_PAUSE_MS = 3_000;

/**
 * GET /v2/devices/me with the granted token, as the service asks after every
 * new authorization, tried a few times within the pairing's time limit. What
 * the last failure was decides what happens to the grant:
 * - refused (401, 403), or an answer that is not the service's (a 101, a
 *   body that is not a device record): thrown, and nothing is stored;
 * - the network or the service having a bad moment (timeout, 5xx, 429): the
 *   grant is returned unverified and stored all the same. The service revoked
 *   the unit's previous tokens when it issued these, so they are the only
 *   authorization it has; the daemon verifies them when it gets through.
 */
async function verifyGrant(api: ServiceApi, clock: SystemClock, deadline: number, signal: AbortSignal): Promise<{ device: Device } | { device?: undefined; error: AgentError }> {
  let last: AgentError | undefined;
  for (let i = 0; i < VERIFY_TRIES; i++) {
    if (i > 0) {
      if (clock.now() + VERIFY_PAUSE_MS >= deadline) break;
      await sleep(clock, VERIFY_PAUSE_MS, signal);
    }
    try {
      return { device: (await api.getDevice(signal)).value };
    } catch (err) {
      if (!(err instanceof AgentError)) throw err;
      last = err;
      if (!TEMPORARY.has(err.kind)) break;
    }
  }
  const e = last as AgentError;
  if (TEMPORARY.has(e.kind)) return { error: e };
  throw new AgentError(e.kind, `approved, but the service did not confirm the new credentials (${e.message}); nothing was stored: run \`c2c-agent pair\` again`, e.details);
}

// 'paused': the service knows the token and says the device is paused, which the daemon shows.
const TEMPORARY: ReadonlySet<string> = new Set(['network', 'server', 'rate-limited', 'timeout', 'paused']);
