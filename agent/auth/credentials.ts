// Where the access token comes from: C2C_TOKEN (a token given directly, no
// refresh possible) wins over the token file that pairing writes. Every
// secret read here is registered with scrub() the moment it is read, so no
// later log line, error or --json output can carry it.
import type { Stats } from 'node:fs';
import { isMissing, READ_LIMITS, readBoundedTextSync } from '../lib/bounded-read.js';
import { AgentError, configError } from '../lib/errors.js';
import { registerSecret } from '../lib/secrets.js';
import type { Settings } from '../config/types.js';

export interface Credentials {
  accessToken: string;
  refreshToken?: string;
  /** ISO 8601 time the access token expires, when the file says. */
  expiresAt?: string;
  tokenType?: string;
  /** The access token's lifetime as granted, seconds. */
  expiresInSeconds?: number;
  /** ISO 8601 time it was granted (the service's clock where known). */
  obtainedAt?: string;
  /** 'environment C2C_TOKEN' or the token file's path, for messages. */
  source: string;
}

type Warn = (message: string) => void;

function notPaired(file: string): AgentError {
  return new AgentError('unauthorized', `not paired: no credentials in ${file} and C2C_TOKEN is unset; run \`c2c-agent pair\``, { source: file });
}

/** Group- or world-readable secrets are a certification failure, but not worth refusing to run. */
function checkMode(file: string, what: string, st: Stats, warn: Warn): void {
  const mode = st.mode & 0o777;
  if ((mode & 0o077) !== 0) {
    warn(`${what} ${file} has mode ${mode.toString(8).padStart(4, '0')}: other users can read it; run \`chmod 600 ${file}\``);
  }
}

/** The token file's text, read within its bound; the mode is looked at on the file that was opened. */
export function readCredentialsText(file: string, source: string | undefined, warn: Warn = () => {}): string {
  return readBoundedTextSync(file, { what: 'credentials file', maxBytes: READ_LIMITS.credentials, source, onStat: (st) => checkMode(file, 'credentials file', st, warn) });
}

function optionalString(rec: Record<string, unknown>, key: string, file: string): string | undefined {
  const v = rec[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw configError(`credentials file ${file}: field '${key}' is not a string; remove the file and run \`c2c-agent pair\``, file);
  return v;
}

/** Parses the token file's JSON; never echoes its content, which is all secret. */
export function parseCredentialsFile(text: string, file: string): Credentials | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw configError(`credentials file ${file} is not valid JSON; remove it and run \`c2c-agent pair\``, file);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw configError(`credentials file ${file} does not hold a JSON object; remove it and run \`c2c-agent pair\``, file);
  }
  const rec = parsed as Record<string, unknown>;
  // Register before validating the rest, so even a half-broken file's tokens never leak.
  for (const key of ['access_token', 'refresh_token']) if (typeof rec[key] === 'string') registerSecret(rec[key] as string, { rotating: 'tokens' });
  const accessToken = optionalString(rec, 'access_token', file);
  const refreshToken = optionalString(rec, 'refresh_token', file);
  const expiresAt = optionalString(rec, 'expires_at', file);
  const tokenType = optionalString(rec, 'token_type', file);
  const obtainedAt = optionalString(rec, 'obtained_at', file);
  for (const [key, v] of [['expires_at', expiresAt], ['obtained_at', obtainedAt]] as const) {
    if (v !== undefined && !Number.isFinite(Date.parse(v))) {
      throw configError(`credentials file ${file}: '${key}' is not an ISO 8601 time; remove the file and run \`c2c-agent pair\``, file);
    }
  }
  const lifetime = rec.expires_in;
  if (lifetime !== undefined && lifetime !== null && (typeof lifetime !== 'number' || !Number.isFinite(lifetime) || lifetime <= 0)) {
    throw configError(`credentials file ${file}: 'expires_in' is not a positive number; remove the file and run \`c2c-agent pair\``, file);
  }
  if (!accessToken) return undefined;
  const out: Credentials = { accessToken, source: file };
  if (refreshToken) out.refreshToken = refreshToken;
  if (expiresAt !== undefined) out.expiresAt = expiresAt;
  if (tokenType !== undefined) out.tokenType = tokenType;
  if (typeof lifetime === 'number') out.expiresInSeconds = lifetime;
  if (obtainedAt !== undefined) out.obtainedAt = obtainedAt;
  return out;
}

/**
 * Reads the client secret only to register it as a secret (pairing reads it
 * again when it needs it). Unreadable is not an error here: `check` does not
 * need it, and `pair` reports it properly.
 */
export function registerClientSecret(settings: Settings, warn: Warn = () => {}): void {
  const file = settings.clientSecretFile;
  if (!file) return;
  try {
    const text = readBoundedTextSync(file, {
      what: 'client secret file',
      maxBytes: READ_LIMITS.secret,
      source: settings.sources.clientSecretFile,
      onStat: (st) => checkMode(file, 'client secret file', st, warn),
    });
    registerSecret(text);
    registerSecret(text.trim());
  } catch {
    // see above
  }
}

export function loadCredentials(settings: Settings, warn: Warn = () => {}): Credentials {
  registerClientSecret(settings, warn);
  if (settings.token !== undefined && settings.token !== '') {
    registerSecret(settings.token);
    return { accessToken: settings.token, source: 'environment C2C_TOKEN' };
  }
  const file = settings.tokenFile;
  let text: string;
  try {
    text = readCredentialsText(file, settings.sources.tokenFile, warn);
  } catch (err) {
    if (isMissing(err)) throw notPaired(file);
    throw err;
  }
  if (text.trim() === '') throw notPaired(file);
  const creds = parseCredentialsFile(text, file);
  if (creds === undefined) throw notPaired(file);
  return creds;
}
