// The unit's secrets as systemd hands them over (docs/packaging.md, "Secrets
// at rest"): the unit's LoadCredentialEncrypted= lines decrypt
// `client-secret` (the device model's secret) and `token-key` (at least 32
// random bytes, the key the credentials file is encrypted under) into
// $CREDENTIALS_DIRECTORY, memory-backed and readable only by the unit's user
// and root. Every reader of either comes here.
//
// A command run from a shell has no CREDENTIALS_DIRECTORY. While the unit
// runs, its credentials sit in /run/credentials/c2c-agent.service, which
// root and the agent's user may read: a command run by either uses those,
// so `sudo c2c-agent check` reads the encrypted credentials file. With the
// unit stopped there is nothing to read there; docs/packaging.md says how
// to run a command with the unit's credentials (systemd-run).
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import type { Settings } from '../config/types.js';
import { isMissing, READ_LIMITS, readBoundedFileSync } from '../lib/bounded-read.js';
import { configError } from '../lib/errors.js';
import { registerSecret } from '../lib/secrets.js';
import { TOKEN_KEY_MIN_BYTES } from './credentials-envelope.js';

/** Where systemd puts c2c-agent.service's credentials while it runs (systemd.exec(5), "Credentials"). */
export const UNIT_CREDENTIALS_DIR = '/run/credentials/c2c-agent.service';
export const CLIENT_SECRET_CREDENTIAL = 'client-secret';
export const TOKEN_KEY_CREDENTIAL = 'token-key';
/** How a token-key is made and given to the unit (the packaging does this when it installs). */
const MAKE_TOKEN_KEY = 'head -c 32 /dev/urandom | systemd-creds encrypt --name=token-key - /etc/credstore.encrypted/c2c-agent.token-key';

type CredentialSettings = Pick<Settings, 'credentialsDir' | 'sources'>;

export interface CredentialsDirectory {
  dir: string;
  /** For messages: 'environment CREDENTIALS_DIRECTORY' or the running unit's. */
  source: string;
}

/** The directory holding the unit's credentials for this process, or undefined when it has none. */
export function credentialsDirectory(settings: CredentialSettings, unitDir: string = UNIT_CREDENTIALS_DIR): CredentialsDirectory | undefined {
  if (settings.credentialsDir !== undefined) return { dir: settings.credentialsDir, source: settings.sources.credentialsDir ?? 'environment CREDENTIALS_DIRECTORY' };
  try {
    // Only root and the unit's user may list it; anyone else has no credentials here.
    accessSync(unitDir, constants.R_OK | constants.X_OK);
    return { dir: unitDir, source: 'the running c2c-agent.service' };
  } catch {
    return undefined;
  }
}

/** Why this process has no token-key, and what would give it one: for the message about a file it cannot decrypt. */
export function noTokenKey(settings: CredentialSettings, unitDir: string = UNIT_CREDENTIALS_DIR): { why: string; fix: string } {
  const d = credentialsDirectory(settings, unitDir);
  if (d === undefined) return { why: 'CREDENTIALS_DIRECTORY is unset and c2c-agent.service is not running', fix: 'run the command with the unit\'s credentials (docs/packaging.md, "Secrets at rest")' };
  return { why: `${path.join(d.dir, TOKEN_KEY_CREDENTIAL)} (from ${d.source}) does not exist`, fix: 'give the unit its token-key back (docs/packaging.md, "Secrets at rest")' };
}

export interface Credential {
  bytes: Buffer;
  file: string;
  source: string;
}

/**
 * A credential's bytes, or undefined when there is no such credential.
 * No mode check: systemd made the file for this unit's user in a directory
 * only it and root may enter, and the ACL it may add shows in the group bits.
 */
function readCredential(name: string, what: string, settings: CredentialSettings, unitDir?: string): Credential | undefined {
  const d = credentialsDirectory(settings, unitDir);
  if (d === undefined) return undefined;
  const file = path.join(d.dir, name);
  try {
    return { bytes: readBoundedFileSync(file, { what, maxBytes: READ_LIMITS.secret, source: d.source }), file, source: d.source };
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
}

/** The `client-secret` credential, trimmed and registered as a secret; undefined when there is none. */
export function clientSecretCredential(settings: CredentialSettings, unitDir?: string): { secret: string; file: string; source: string } | undefined {
  const c = readCredential(CLIENT_SECRET_CREDENTIAL, 'client secret credential', settings, unitDir);
  if (c === undefined) return undefined;
  const text = c.bytes.toString('utf8');
  registerSecret(text);
  const secret = text.trim();
  registerSecret(secret);
  if (secret === '') throw configError(`the client secret credential ${c.file} (from ${c.source}) is empty`, c.source);
  return { secret, file: c.file, source: c.source };
}

export type TokenKey = Credential;

/**
 * The `token-key` credential; undefined when there is none (the credentials
 * file is then written in clear, as before). Shorter than 32 bytes is a
 * configuration error (78): a weak key must not look like protection.
 */
export function tokenKeyOf(settings: CredentialSettings, unitDir?: string): TokenKey | undefined {
  const key = readCredential(TOKEN_KEY_CREDENTIAL, 'token-key credential', settings, unitDir);
  if (key === undefined) return undefined;
  // Never printed; registered in the forms it could be printed in all the same.
  for (const form of [key.bytes.toString('utf8'), key.bytes.toString('utf8').trim(), key.bytes.toString('hex'), key.bytes.toString('base64')]) registerSecret(form);
  if (key.bytes.length < TOKEN_KEY_MIN_BYTES) {
    throw configError(
      `the token-key credential ${key.file} (from ${key.source}) holds ${key.bytes.length} bytes; it must hold at least ${TOKEN_KEY_MIN_BYTES} random bytes: make one with \`${MAKE_TOKEN_KEY}\` and restart the unit`,
      key.source,
    );
  }
  return key;
}
