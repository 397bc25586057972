// The one place the rest of the agent asks for an access token. The api
// client reads `current()` on every request, the daemon calls `reload()` when
// it must look again (start-up, SIGHUP, a changed file), and `fingerprint()`
// lets it notice a re-paired unit without re-reading secrets every poll.
import { statSync } from 'node:fs';
import type { Settings } from '../config/types.js';
import { loadCredentials, type Credentials } from './credentials.js';

export interface TokenSource {
  /** The access token to send now; undefined before a successful reload(). */
  current(): string | undefined;
  /** Reads the credentials again; throws AgentError('unauthorized') when there are none. */
  reload(): void;
  /**
   * A cheap fingerprint (inode, size, mtime) of the credentials file, or
   * undefined while it is absent. Absent when the token does not come from a
   * file (C2C_TOKEN): nothing to watch then.
   */
  fingerprint?: () => string | undefined;
}

export function createTokenSource(settings: Settings, warn: (message: string) => void = () => {}): TokenSource {
  let creds: Credentials | undefined;
  const source: TokenSource = {
    current: () => creds?.accessToken,
    reload: () => {
      creds = undefined;
      creds = loadCredentials(settings, warn);
    },
  };
  const fileBased = settings.token === undefined || settings.token === '';
  if (fileBased) {
    source.fingerprint = () => {
      try {
        const st = statSync(settings.tokenFile);
        return `${st.ino}:${st.size}:${st.mtimeMs}`;
      } catch {
        return undefined;
      }
    };
  }
  return source;
}
