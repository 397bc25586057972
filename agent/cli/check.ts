// `c2c-agent check [--json]`: is this unit paired, is its token valid, which
// project is it linked to, and what does it present (firmware version,
// profile)? One GET /v2/devices/me; when that fails for a reason other than
// the token, GET /health tells "service unreachable" from "service up but
// this call failed", so an installer knows whom to call.
import type { SettingKey } from '../config/setting-table.js';
import { createServiceApi, type ServiceApi } from '../api/service.js';
import type { ResponseMeta } from '../api/types.js';
import { loadCredentials, type Credentials } from '../auth/credentials.js';
import { loadProfiles, selectProfile } from '../config/profiles.js';
import { loadSettings } from '../config/settings.js';
import { SystemClock } from '../lib/clock.js';
import { AgentError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { checkFacts, humanReport } from './check-report.js';
import type { CommandContext, CommandOptions } from './command.js';
import { fail, printJson, printLine } from './output.js';
import { agentVersion } from './version.js';

export const usage = 'check [--json]';
export const options = { json: { type: 'boolean' } } satisfies CommandOptions;
export const summary = 'Pairing check: verifies the token with GET /v2/devices/me and shows the device, its project and the firmware profile.';
export const optionHelp = { json: { help: 'one JSON object on stdout instead of lines of text' } };
export const needs = ['apiUrl'] as const satisfies readonly SettingKey[];
export const needsAlso = ['credentials from `c2c-agent pair`, or C2C_TOKEN'];

// Failures whose cause could be the service as a whole rather than this unit.
const PROBE_HEALTH = new Set(['network', 'server', 'rate-limited', 'protocol', 'not-found']);

/** check logs only requests, at debug and trace: pino is loaded only then. */
async function makeLogger(level: string): Promise<Logger | undefined> {
  if (level !== 'debug' && level !== 'trace') return undefined;
  const [{ createLogger }, { pino }] = await Promise.all([import('../lib/logger.js'), import('pino')]);
  // stderr: with --json, stdout carries exactly one JSON object.
  return createLogger(level, pino.destination({ dest: 2, sync: true }));
}

function metaFacts(meta: { rateLimit?: ResponseMeta['rateLimit'] | undefined; clockOffsetMs?: number | undefined } | undefined): Record<string, unknown> {
  return { clockOffsetMs: meta?.clockOffsetMs ?? null, rateLimit: meta?.rateLimit ?? null };
}

// The probe must not double a wait that already hit the full 30 s limit.
const HEALTH_PROBE_TIMEOUT_MS = 10_000;

/**
 * A network failure of the device call while /health answers: the network
 * error's own advice ("check the network and the API URL") would contradict
 * the probe, so say what happened and that a retry is the remedy. Still the
 * network kind (exit 69): the call got no usable answer.
 */
function brokeWhileUp(err: AgentError): AgentError {
  const what = err.details.source ?? 'the device call';
  const code = err.details.code ?? 'ERR_NETWORK';
  const message =
    code === 'ETIMEDOUT'
      ? `${what} got no answer in time (ETIMEDOUT), but the service's /health answers: the service may be overloaded; retry`
      : `the connection broke while reading ${what} (${code}); the service's /health answers, so retry`;
  return new AgentError(err.kind, message, err.details);
}

/** Re-states a failed GET /v2/devices/me with what GET /health says about the service. */
async function explain(err: AgentError, api: ServiceApi, creds: Credentials, wallNow: number, startAdvice: string): Promise<{ err: AgentError; service: string }> {
  const restate = (prefix: string): AgentError => new AgentError(err.kind, `${prefix}: ${err.message}`, err.details);
  if (err.kind === 'unauthorized' && creds.refreshToken !== undefined && creds.expiresAt !== undefined && Date.parse(creds.expiresAt) <= wallNow) {
    // check never refreshes: the daemon may be refreshing with the same single-use token right now.
    const msg = `the access token expired at ${creds.expiresAt}; the daemon renews it with the refresh token while it runs (${startAdvice}), or run \`c2c-agent pair\``;
    return { err: new AgentError(err.kind, msg, err.details), service: 'up' };
  }
  if (err.kind === 'unauthorized' || err.kind === 'forbidden') return { err: restate('unit not authorized'), service: 'up' };
  // Something answered but could not be checked to be the service: /health would meet the same certificate.
  if (err.kind === 'tls' || err.kind === 'clock') return { err, service: 'not verified' };
  if (!PROBE_HEALTH.has(err.kind)) return { err, service: 'up' };
  try {
    await api.health(undefined, HEALTH_PROBE_TIMEOUT_MS);
    if (err.kind === 'network') return { err: brokeWhileUp(err), service: 'up' };
    return { err: restate('service is up (GET /health ok) but the device call failed'), service: 'up' };
  } catch (h) {
    if (h instanceof AgentError && h.kind === 'network') return { err: restate('service unreachable'), service: 'unreachable' };
    const he = h instanceof AgentError ? h : undefined;
    const why = he?.kind === 'protocol' ? 'answer not understood' : he?.status !== undefined ? `HTTP ${he.status}` : (he?.kind ?? 'internal error');
    return { err: restate(`service answers but is unhealthy (GET /health: ${why})`), service: 'unhealthy' };
  }
}

export async function run(ctx: CommandContext): Promise<number> {
  const facts: Record<string, unknown> = { device: null, firmwareVersion: null, profile: null, clockOffsetMs: null, rateLimit: null };
  let api: ServiceApi | undefined;
  try {
    const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: true });
    facts.firmwareVersion = settings.firmwareVersion;
    const firmwareSource = settings.sources.firmwareVersion ?? 'default';
    const profile = selectProfile(loadProfiles(settings.profilesDir, settings.sources.profilesDir), settings.firmwareVersion, firmwareSource);
    facts.profile = profile.id;
    const warnings: string[] = [];
    const creds = loadCredentials(settings, (w) => warnings.push(w));
    const logger = await makeLogger(settings.logLevel);
    logger?.debug({ firmwareVersion: settings.firmwareVersion, profile: profile.id, credentials: creds.source, timeScale: settings.timeScale }, 'check');

    const clock = new SystemClock(settings.timeScale);
    api = createServiceApi({
      baseUrl: settings.apiUrl,
      token: creds.accessToken,
      firmwareVersion: settings.firmwareVersion,
      agentVersion: agentVersion(),
      clock,
      extraCas: settings.extraCas,
      ...(logger ? { logger } : {}),
    });

    let result;
    try {
      result = await api.getDevice();
    } catch (err) {
      if (!(err instanceof AgentError)) throw err;
      if (err.details.rateLimit !== undefined || err.details.clockOffsetMs !== undefined) Object.assign(facts, metaFacts({ rateLimit: err.details.rateLimit, clockOffsetMs: err.details.clockOffsetMs }));
      const { err: explained, service } = await explain(err, api, creds, clock.wallNow(), settings.startAdvice);
      facts.service = service;
      throw explained;
    }
    const serverNow = clock.wallNow() + (result.meta.clockOffsetMs ?? 0);
    const cf = checkFacts(result.value, serverNow);
    const allWarnings = warnings.concat(cf.warnings);
    if (ctx.json) {
      printJson({
        ok: true,
        exitCode: 0,
        device: cf.device,
        firmwareVersion: settings.firmwareVersion,
        firmwareSource,
        profile: profile.id,
        ...metaFacts(result.meta),
        scopes: cf.scopes,
        missingScopes: cf.missingScopes,
        expiresAt: cf.expiresAt,
        credentials: creds.source,
        service: 'up',
        warnings: allWarnings,
      });
    } else {
      const report = humanReport({
        facts: { ...cf, warnings: allWarnings },
        meta: result.meta,
        firmwareVersion: settings.firmwareVersion,
        firmwareSource,
        profileId: profile.id,
        profileName: profile.name,
        credentialsSource: creds.source,
      });
      printLine(...report);
    }
    return 0;
  } catch (err) {
    return fail(err, { json: ctx.json, extra: facts });
  } finally {
    api?.close();
  }
}
