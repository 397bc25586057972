// Unpairing: revoke the authorization at the service, then forget the
// credentials here. Shared by `c2c-agent unpair` (no daemon) and the daemon's
// POST /v1/unpair (auth/daemon-pairing.ts), so both refuse and forget by the
// same rules:
// - a token file that cannot be read stops everything (nothing is deleted
//   unread, nor called empty when it could not be looked at), and so does an
//   encrypted one this process has no token-key for, unless `local`;
// - without what a revocation needs (the API URL, the client secret) nothing
//   is forgotten: the token would stay valid at the service. `local` forgets
//   here without asking the service at all;
// - the service unreachable or refusing: forgotten here all the same, with a
//   warning that the service still lists the device.
import type { ClientCredentials } from '../api/oauth.js';
import type { Settings } from '../config/types.js';
import { AgentError } from '../lib/errors.js';
import { fsError } from '../lib/fs-errors.js';
import { readClientSecret } from './client-secret.js';
import { readStoredCredentials } from './credentials.js';

/** Revocation is a courtesy to the service: a camera being decommissioned must not hang on it. */
export const REVOKE_TIMEOUT_MS = 10_000;

export interface UnpairOptions {
  /** Forget here without asking the service. */
  local: boolean;
  /** How the caller is told to forget locally ("or run `c2c-agent unpair --local` …"). */
  localAdvice: string;
  /** The unit's client id (auth/client-id.ts). */
  clientId: () => Promise<string>;
  /** Sends the revocation (bounded by REVOKE_TIMEOUT_MS); rejects with an AgentError. */
  revoke: (client: ClientCredentials, token: string) => Promise<void>;
  /** Forgets the credentials file durably; resolves false when there was none. */
  remove: () => Promise<boolean>;
}

export interface Unpaired {
  revoked: boolean;
  removed: boolean;
  warnings: string[];
}

type Stored = { kind: 'token'; token: string } | { kind: 'none'; why: string };

/** The token to revoke; throws when the file is there but cannot be read (or, unless `local`, not decrypted here). */
function storedToken(settings: Settings, local: boolean): Stored {
  const file = settings.tokenFile;
  const stored = readStoredCredentials(settings);
  switch (stored.state) {
    case 'absent':
      return { kind: 'none', why: `no credentials in ${file}: nothing to revoke here` };
    case 'no-token':
      return { kind: 'none', why: `no token in ${file}: nothing to revoke here` };
    case 'locked':
      // The token is there and valid at the service: forgetting it unrevoked must be asked for.
      if (!local) throw stored.error;
      return { kind: 'none', why: `${stored.error.message.split(' (')[0]}: nothing to revoke here` };
    case 'unreadable':
      // Read but not understood: there is no token to send, and forgetting the file is what was asked.
      return { kind: 'none', why: `${stored.error.message}: nothing to revoke here` };
    default:
      // Revoking any token of the unit ends its whole authorization; the refresh token lives longest.
      return { kind: 'token', token: stored.creds.refreshToken ?? stored.creds.accessToken };
  }
}

/** The client id and secret a revocation sends; without them nothing may be forgotten (78, before any file is touched). */
async function clientForRevoke(settings: Settings, o: UnpairOptions): Promise<ClientCredentials> {
  try {
    const clientSecret = readClientSecret(settings);
    return { clientId: await o.clientId(), clientSecret };
  } catch (err) {
    if (!(err instanceof AgentError)) throw err;
    throw new AgentError(err.kind, `cannot revoke the authorization at the service, so nothing was forgotten: ${err.message}; ${o.localAdvice}`, err.details);
  }
}

export async function unpairHere(settings: Settings, o: UnpairOptions): Promise<Unpaired> {
  const file = settings.tokenFile;
  const stored = storedToken(settings, o.local);
  const warnings: string[] = [];
  let revoked = false;
  if (stored.kind === 'none') {
    warnings.push(stored.why);
  } else if (o.local) {
    warnings.push('local: forgot the credentials here only; the service still lists the device (remove it in the app)');
  } else if (settings.apiUrl === '') {
    throw new AgentError('config', `no API URL configured (set --api-url, C2C_API_URL or apiUrl in the config file): cannot revoke the authorization at the service, so nothing was forgotten; ${o.localAdvice}`, { source: 'apiUrl' });
  } else {
    const client = await clientForRevoke(settings, o);
    try {
      await o.revoke(client, stored.token);
      revoked = true;
    } catch (err) {
      const why = err instanceof AgentError ? err.message : String(err);
      warnings.push(`could not revoke at the service (${why}); forgot the credentials here only: the service still lists the device (remove it in the app)`);
    }
  }
  let removed: boolean;
  try {
    removed = await o.remove();
  } catch (err) {
    const doing = revoked ? 'remove the credentials file (the authorization was revoked at the service)' : 'remove the credentials file';
    throw fsError(err, doing, file, settings.sources.tokenFile);
  }
  if (settings.token) warnings.push('C2C_TOKEN is set: the agent keeps using it until it is unset');
  return { revoked, removed, warnings };
}
