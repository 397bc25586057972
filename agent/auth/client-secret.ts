// The device model's client secret, which pairing, refresh and revoke send.
// From clientSecretFile when that is set, else from the unit's encrypted
// `client-secret` credential (credentials-systemd.ts). It must not be
// readable by ordinary users of the camera: a file readable by group or
// others is refused (exit 78) with the fix, not used with a warning.
import type { Settings } from '../config/types.js';
import { READ_LIMITS, readBoundedTextSync } from '../lib/bounded-read.js';
import { configError } from '../lib/errors.js';
import { registerSecret } from '../lib/secrets.js';
import { clientSecretCredential } from './credentials-systemd.js';

export function readClientSecret(settings: Pick<Settings, 'clientSecretFile' | 'sources' | 'credentialsDir'>): string {
  const file = settings.clientSecretFile;
  const source = settings.sources.clientSecretFile ?? 'clientSecretFile';
  if (file === undefined) {
    const credential = clientSecretCredential(settings);
    if (credential !== undefined) return credential.secret;
    throw configError(
      "no client secret: set --client-secret-file, C2C_CLIENT_SECRET_FILE or clientSecretFile in the config file, or give the unit an encrypted client-secret credential (docs/packaging.md); it is the device model's secret, issued by the service",
      'clientSecretFile',
    );
  }
  // The mode is judged on the file that was opened, before a byte of it is read.
  const text = readBoundedTextSync(file, {
    what: 'client secret file',
    maxBytes: READ_LIMITS.secret,
    source,
    onStat: (st) => {
      const mode = st.mode & 0o777;
      if ((mode & 0o077) !== 0) {
        throw configError(
          `the client secret file ${file} has mode ${mode.toString(8).padStart(4, '0')}: group or others can read it; run \`chmod 600 ${file}\` (owned by the agent's user) and try again`,
          source,
        );
      }
    },
  });
  registerSecret(text);
  const secret = text.trim();
  registerSecret(secret);
  if (secret === '') throw configError(`the client secret file ${file} from ${source} is empty`, source);
  return secret;
}
