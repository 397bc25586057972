// Writing and forgetting the credentials file. A refresh token is single
// use: once the service has answered a refresh, only the new pair works, so
// the new pair goes to flash before anything uses it, and a power cut at any
// instant leaves the old pair or the new one, never a torn file
// (lib/atomic-write: temp, fsync, rename, directory fsync). With the unit's
// token-key the file, and so its temp, holds only the sealed envelope
// (credentials-envelope.ts): no token in clear on flash.
import { statSync } from 'node:fs';
import * as fs from '../lib/fs-async.js';
import path from 'node:path';
import type { TokenGrant } from '../api/oauth.js';
import type { Clock } from '../lib/clock.js';
import { removeStaleTemps, syncDirectory, writeFileAtomic } from '../lib/atomic-write.js';
import { registerSecret } from '../lib/secrets.js';
import type { Credentials } from './credentials.js';
import { seal } from './credentials-envelope.js';
import type { TokenKey } from './credentials-systemd.js';
import { isoTime } from '../lib/iso-time.js';

/** The credentials file's content (snake_case, as the service names the fields). */
export interface CredentialsFile {
  access_token: string;
  refresh_token?: string;
  token_type: string;
  /** The access token's lifetime in seconds, as granted. */
  expires_in: number;
  /** When it was granted, ISO 8601: by the service's Date header where it sent one (this unit's clock may be wrong). */
  obtained_at: string;
  /** obtained_at + expires_in, for people and `check`. */
  expires_at: string;
  /** 'service' when obtained_at comes from the service's Date, 'local' when from this unit's clock. */
  clock: 'service' | 'local';
}

/** The file a grant makes; the service's clock is preferred over ours for the times in it. */
export function fileFromGrant(grant: TokenGrant, clock: Clock): CredentialsFile {
  const offset = grant.meta.clockOffsetMs;
  const obtained = clock.wallNow() + (offset ?? 0);
  const out: CredentialsFile = {
    access_token: grant.accessToken,
    token_type: grant.tokenType,
    expires_in: grant.expiresInSeconds,
    obtained_at: isoTime(obtained),
    expires_at: isoTime(obtained + grant.expiresInSeconds * 1000),
    clock: offset === undefined ? 'local' : 'service',
  };
  if (grant.refreshToken !== undefined) out.refresh_token = grant.refreshToken;
  return out;
}

export function credentialsOf(file: CredentialsFile, source: string): Credentials {
  const c: Credentials = { accessToken: file.access_token, source, expiresAt: file.expires_at, tokenType: file.token_type, expiresInSeconds: file.expires_in, obtainedAt: file.obtained_at };
  if (file.refresh_token !== undefined) c.refreshToken = file.refresh_token;
  return c;
}

/**
 * root (a manual `sudo c2c-agent pair`) writing into the service user's
 * state dir must leave a file that user can read: it gets the directory's owner.
 */
function ownerFor(dir: string): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const st = statSync(dir);
    return st.uid === 0 ? undefined : { uid: st.uid, gid: st.gid };
  } catch {
    return undefined;
  }
}

/**
 * Stores a new pair durably (0600): sealed under `key` (the unit's token-key,
 * credentials-systemd.ts tokenKeyOf) when given, else in clear. Resolves only
 * once it would survive a power cut.
 */
export async function saveCredentials(file: string, content: CredentialsFile, key?: TokenKey): Promise<void> {
  registerSecret(content.access_token, { rotating: 'tokens' });
  registerSecret(content.refresh_token, { rotating: 'tokens' });
  const owner = ownerFor(path.dirname(file));
  const text = `${JSON.stringify(content, null, 2)}\n`;
  await writeFileAtomic(file, key === undefined ? text : seal(text, key.bytes), { mode: 0o600, durable: true, ...(owner && { owner }) });
}

/** Forgets the credentials: the file goes, and its removal is made durable. Resolves false when there was none. */
export async function removeCredentials(file: string): Promise<boolean> {
  try {
    await fs.unlink(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  await syncDirectory(path.dirname(file));
  return true;
}

/**
 * A writer killed between open and rename leaves a temp file that holds
 * secrets: remove those of the credentials file. Only old ones, since a
 * `pair` in another process may be writing one right now.
 */
export function sweepCredentialTemps(file: string): string[] {
  try {
    return removeStaleTemps(path.dirname(file), { prefix: path.basename(file), olderThanMs: 60_000 });
  } catch {
    return [];
  }
}
