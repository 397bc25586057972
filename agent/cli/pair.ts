// `c2c-agent pair [--json] [--timeout SECONDS]`: device-code pairing. Shows
// the code (large, with a QR code of the verification URL on a terminal;
// plain lines elsewhere; JSON Lines with --json, so a camera's own screen can
// drive the flow), polls until the person approves, verifies the grant with
// GET /v2/devices/me and stores the credentials durably. When a daemon runs,
// the daemon pairs (POST /v1/pair, its own client secret) and this command
// shows its flow the same way (pair-via-daemon.ts): the daemon is the only
// writer of its state while it runs. Ctrl-C or SIGTERM cancels at any step
// (130 / 143).
import type { SettingKey } from '../config/setting-table.js';
import { createServiceApi, type ServiceApi } from '../api/service.js';
import { getClientId } from '../auth/client-id.js';
import { readClientSecret } from '../auth/client-secret.js';
import { fileFromGrant, saveCredentials } from '../auth/credentials-store.js';
import { tokenKeyOf } from '../auth/credentials-systemd.js';
import { pairDevice, type PairingEvent } from '../auth/pairing.js';
import { loadSettings } from '../config/settings.js';
import type { Settings } from '../config/types.js';
import { prepareCredentialsDirs } from '../auth/credentials-dirs.js';
import { deviceSummary, verifyGrant } from '../auth/grant-verify.js';
import { SystemClock } from '../lib/clock.js';
import { PAIRING_TIMEOUT_MAX_MS, PAIRING_TIMEOUT_MS } from '../lib/timing.js';
import { AgentError, EXIT, usageError } from '../lib/errors.js';
import { fsError } from '../lib/fs-errors.js';
import { oneLine, quote } from '../lib/text.js';
import type { CommandContext, CommandOptions } from './command.js';
import { describeError, fail, printError, printJsonLine } from './output.js';
import { PairReporter } from './pair-report.js';
import { assertNoDaemon, DaemonApi } from './daemon-api.js';
import { pairThroughDaemon } from './pair-via-daemon.js';
import { agentVersion } from './version.js';

export const usage = 'pair [--json] [--timeout SECONDS]';
export const options = { json: { type: 'boolean' }, timeout: { type: 'string' } } satisfies CommandOptions;

export const DEFAULT_TIMEOUT_S = PAIRING_TIMEOUT_MS / 1000;
export const summary = 'Device-code pairing: shows a code a person approves in the app, then stores the tokens (through the daemon when one runs).';
export const optionHelp = {
  json: { help: 'JSON Lines on stdout, one object per event' },
  timeout: { value: 'SECONDS', help: 'how long to wait for a person to approve the code', default: `${DEFAULT_TIMEOUT_S} s` },
};
export const needs = ['apiUrl', 'clientSecretFile'] as const satisfies readonly SettingKey[];
const SIGNAL_EXIT: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };

function timeoutOf(value: unknown): number {
  if (value === undefined) return DEFAULT_TIMEOUT_S;
  const n = typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) : NaN;
  if (!(n > 0) || n * 1000 > PAIRING_TIMEOUT_MAX_MS) throw usageError(`pair: --timeout ${quote(String(value))} must be a positive number of seconds, at most ${PAIRING_TIMEOUT_MAX_MS / 1000}; run c2c-agent pair --help`);
  return n;
}

class Cancelled extends Error {
  constructor(readonly signal: string) {
    super(`pairing cancelled (${signal}); nothing was stored`);
  }
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
    // A running daemon pairs with its own secret; this command then only shows the flow.
    const local = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: false });
    const daemon = new DaemonApi(local);
    const viaDaemon = await pairThroughDaemon(daemon, { settings: local, json: ctx.json, timeoutS, cancel: ac.signal }, (onEvent) => daemon.events(onEvent));
    if (viaDaemon !== undefined) {
      if (viaDaemon.error !== undefined) printError(viaDaemon.error.message);
      return viaDaemon.exitCode;
    }
    const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: true });
    assertNoDaemon(settings, daemon.socket, 'store credentials');
    const clientSecret = readClientSecret(settings);
    // A token-key too short is refused before a code is asked for: a grant that cannot be stored is lost.
    const tokenKey = tokenKeyOf(settings);
    await prepareCredentialsDirs(settings);
    const { clientId } = await getClientId(settings);
    const clock = new SystemClock(settings.timeScale);
    const startedAt = clock.now();
    let accessToken: string | undefined;
    api = createServiceApi({ baseUrl: settings.apiUrl, token: () => accessToken, firmwareVersion: settings.firmwareVersion, agentVersion: agentVersion(), clock, extraCas: settings.extraCas });
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
    await saveCredentials(settings.tokenFile, fileFromGrant(grant, clock), tokenKey).catch((err: unknown) => {
      // Checked writable before the code was asked for, so something changed meanwhile; the grant is gone with this process.
      throw fsError(err, 'store the approved credentials (pair again once this is fixed)', settings.tokenFile, settings.sources.tokenFile);
    });
    if (verified.device === undefined) {
      const e = verified.error;
      throw new AgentError(e.kind, `paired, and the credentials are stored in ${settings.tokenFile}, but the service could not confirm them yet: ${e.message}; the daemon verifies them once it reaches the service (or run \`c2c-agent check\`)`, e.details);
    }
    const device = verified.device;
    const warnings = settings.token ? ['C2C_TOKEN is set and takes precedence over the stored credentials; unset it'] : [];
    reporter.done(
      { event: 'paired', ok: true, exitCode: EXIT.ok, device: deviceSummary(device), credentials: settings.tokenFile, daemon: 'not-running', warnings },
      [
        // Names the service sent: one bounded line each, whatever they hold.
        `paired: ${oneLine(device.name ?? '(unnamed)', 120)} (device ${oneLine(device.id, 80)})`,
        `project: ${oneLine(device.project?.name ?? '(name not sent)', 120)} (id ${oneLine(device.project_id ?? device.project?.id ?? 'unknown', 80)})`,
        `credentials: ${settings.tokenFile}`,
        `daemon: no daemon runs; ${settings.startAdvice}`,
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
