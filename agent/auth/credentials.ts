// Where the access token comes from: C2C_TOKEN (a token given directly, no
// refresh possible) wins over the token file that pairing writes. Every
// secret read here is registered with scrub() the moment it is read, so no
// later log line, error or --json output can carry it.
//
// readStoredCredentials() is the one reader of the token file (the daemon's
// token source, check, channels, unpair): in clear, or encrypted under the
// unit's token-key (credentials-envelope.ts, credentials-systemd.ts). A file
// that does not decrypt is "pair again" (77), never an internal error.
import type { Stats } from 'node:fs';
import { isMissing, READ_LIMITS, readBoundedTextSync, TOO_LARGE } from '../lib/bounded-read.js';
import { errnoOf } from '../lib/fs-errors.js';
import { PAIR_ADVICE } from '../lib/advice.js';
import { AgentError, configError } from '../lib/errors.js';
import { registerSecret } from '../lib/secrets.js';
import type { Settings } from '../config/types.js';
import { EnvelopeError, isEnvelope, open } from './credentials-envelope.js';
import { clientSecretCredential, noTokenKey, tokenKeyOf, type TokenKey } from './credentials-systemd.js';

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
  /**
   * Read from a file in clear while a token-key is at hand (written before
   * the unit had one): the daemon refreshes at once, so the pair that was in
   * clear is spent and the new one is stored encrypted.
   */
  inClear?: true;
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
  try {
    if (!file) {
      clientSecretCredential(settings);
      return;
    }
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

/**
 * What the token file holds, as far as this process can tell:
 * - absent: no file, or an empty one (not paired);
 * - no-token: a file without an access token (not paired either);
 * - paired: the credentials;
 * - unreadable: there, but not credentials this agent can use (broken JSON,
 *   a bad field; encrypted and it does not decrypt: the key changed or the
 *   file was altered); `error` says which, with what to do;
 * - locked: encrypted, and this process has no token-key (a command run
 *   from a shell while the unit is stopped); `error` says what to do.
 * A file that cannot be read at all (permissions, a FIFO) throws.
 */
export type StoredCredentials =
  | { state: 'absent' | 'no-token' }
  | { state: 'paired'; creds: Credentials }
  | { state: 'unreadable' | 'locked'; error: AgentError };

/** The one reader of the token file (see StoredCredentials). A token-key shorter than 32 bytes throws (78). */
export function readStoredCredentials(settings: Pick<Settings, 'tokenFile' | 'credentialsDir' | 'sources'>, warn: Warn = () => {}): StoredCredentials {
  const file = settings.tokenFile;
  let text: string;
  try {
    text = readCredentialsText(file, settings.sources.tokenFile, warn);
  } catch (err) {
    if (isMissing(err)) return { state: 'absent' };
    // Larger than anything this agent writes: with a token-key, a file altered like any other (77, not 78).
    if (errnoOf(err) === TOO_LARGE) {
      const key = tokenKeyOf(settings);
      if (key !== undefined) return { state: 'unreadable', error: doesNotDecrypt(file, key) };
    }
    throw err;
  }
  if (text.trim() === '') return { state: 'absent' };
  const key = tokenKeyOf(settings);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // With a token-key the file should be an envelope: whatever broke it, it no longer decrypts.
    if (key !== undefined) return { state: 'unreadable', error: doesNotDecrypt(file, key) };
    return { state: 'unreadable', error: configError(`credentials file ${file} is not valid JSON; remove it and run \`c2c-agent pair\``, file) };
  }
  let plain = text;
  if (isEnvelope(parsed)) {
    if (key === undefined) {
      const none = noTokenKey(settings);
      return { state: 'locked', error: new AgentError('unauthorized', `credentials file ${file} is encrypted and this process has no token-key (${none.why}): ${none.fix}, or pair again; ${PAIR_ADVICE}`, { source: file, code: 'ENOKEY' }) };
    }
    try {
      plain = open(parsed as Record<string, unknown>, key.bytes);
    } catch (err) {
      if (!(err instanceof EnvelopeError)) throw err;
      if (err.why === 'unknown-version') {
        return { state: 'unreadable', error: new AgentError('unauthorized', `credentials file ${file} is encrypted in a format this agent does not read (written by a newer one?): pair again; ${PAIR_ADVICE}`, { source: file, code: 'EBADMSG' }) };
      }
      return { state: 'unreadable', error: doesNotDecrypt(file, key) };
    }
  }
  let creds: Credentials | undefined;
  try {
    creds = parseCredentialsFile(plain, file);
  } catch (err) {
    if (!(err instanceof AgentError)) throw err;
    // With a token-key the file is an envelope this agent sealed, or a valid file in clear from before the key:
    // anything else in clear (not an object, a field of the wrong type) was altered, as a broken envelope is (77).
    if (key !== undefined && plain === text) return { state: 'unreadable', error: doesNotDecrypt(file, key) };
    return { state: 'unreadable', error: err };
  }
  if (creds === undefined) return { state: 'no-token' };
  if (key !== undefined && plain === text) creds.inClear = true;
  return { state: 'paired', creds };
}

function doesNotDecrypt(file: string, key: TokenKey): AgentError {
  return new AgentError('unauthorized', `credentials file ${file} does not decrypt with the token-key ${key.file} (from ${key.source}): the key changed or the file was altered; pair again; ${PAIR_ADVICE}`, { source: file, code: 'EBADMSG' });
}

export function loadCredentials(settings: Settings, warn: Warn = () => {}): Credentials {
  registerClientSecret(settings, warn);
  if (settings.token !== undefined && settings.token !== '') {
    registerSecret(settings.token);
    return { accessToken: settings.token, source: 'environment C2C_TOKEN' };
  }
  const stored = readStoredCredentials(settings, warn);
  switch (stored.state) {
    case 'paired':
      return stored.creds;
    case 'unreadable':
    case 'locked':
      throw stored.error;
    default:
      throw notPaired(settings.tokenFile);
  }
}
