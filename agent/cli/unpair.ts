// `c2c-agent unpair [--json] [--local]`: the "deauthorize" every device must
// offer. Revokes the authorization at the service (best effort, bounded
// wait), forgets the credentials here (the file goes, durably) and puts a
// running daemon into needs-pairing. Offline it still forgets locally, and
// says that the service keeps listing the device until someone removes it
// there. Without what a revocation needs (the client secret, the API URL) it
// forgets nothing and exits 78, since the token would stay valid at the
// service; `--local` forgets here without asking the service at all.
import { createServiceApi } from '../api/service.js';
import { getClientId } from '../auth/client-id.js';
import { readClientSecret } from '../auth/client-secret.js';
import { parseCredentialsFile, readCredentialsText } from '../auth/credentials.js';
import { removeCredentials } from '../auth/credentials-store.js';
import { loadSettings } from '../config/settings.js';
import type { Settings } from '../config/types.js';
import { nudgeDaemon } from '../daemon/runtime/run-lock.js';
import { SystemClock } from '../lib/clock.js';
import { isMissing } from '../lib/bounded-read.js';
import { AgentError, EXIT } from '../lib/errors.js';
import { fsError } from '../lib/fs-errors.js';
import type { CommandContext, CommandOptions } from './command.js';
import { fail, printJson, printLine } from './output.js';
import { agentVersion } from './version.js';

export const usage = 'unpair [--json] [--local]';
export const options = { json: { type: 'boolean' }, local: { type: 'boolean' } } satisfies CommandOptions;
export const help = [
  'Revokes the authorization at the service, then forgets the credentials here.',
  'Without a client secret or an API URL nothing is forgotten (exit 78): the token would stay valid at the service.',
  '--local   forget the credentials here without asking the service (it keeps the authorization until the device is removed in the app)',
];

/** What --local says in every refusal: the one way to forget without revoking. */
const LOCAL_ADVICE = 'or run `c2c-agent unpair --local` to forget the credentials here only (the service keeps the authorization until the device is removed in the app)';

/**
 * The client secret a revocation sends; without it nothing may be forgotten,
 * so the refusal (78) comes before any file is touched and says how to go on.
 */
function secretForRevoke(settings: Settings): string {
  try {
    return readClientSecret(settings);
  } catch (err) {
    if (!(err instanceof AgentError)) throw err;
    throw new AgentError(err.kind, `cannot revoke the authorization at the service, so nothing was forgotten: ${err.message}; ${LOCAL_ADVICE}`, err.details);
  }
}

/** Revocation is a courtesy to the service: a camera being decommissioned must not hang on it. */
const REVOKE_TIMEOUT_MS = 10_000;

type Stored = { kind: 'token'; token: string } | { kind: 'none'; why: string };

/**
 * The token to revoke. A file that is not there, or holds no token, leaves
 * nothing to revoke; one that cannot be read (permissions, a FIFO, a
 * directory, a wrong path) stops the command: it must not delete what it
 * could not read, nor say there was nothing when it could not look.
 */
function storedToken(file: string, source: string | undefined): Stored {
  let text: string;
  try {
    text = readCredentialsText(file, source);
  } catch (err) {
    if (isMissing(err)) return { kind: 'none', why: `no credentials in ${file}: nothing to revoke here` };
    throw err;
  }
  try {
    const creds = parseCredentialsFile(text, file);
    // Revoking any token of the unit ends its whole authorization; the refresh token lives longest.
    const token = creds?.refreshToken ?? creds?.accessToken;
    return token === undefined ? { kind: 'none', why: `no token in ${file}: nothing to revoke here` } : { kind: 'token', token };
  } catch (err) {
    // Read but not understood: there is no token to send, and forgetting the file is what was asked.
    return { kind: 'none', why: `${err instanceof Error ? err.message : String(err)}: nothing to revoke here` };
  }
}

/** 'revoked', or why not, as one line for people. */
async function revoke(settings: Settings, clientSecret: string, token: string): Promise<{ revoked: boolean; why?: string }> {
  const { clientId } = await getClientId(settings);
  const clock = new SystemClock(settings.timeScale);
  const api = createServiceApi({ baseUrl: settings.apiUrl, token: () => undefined, firmwareVersion: settings.firmwareVersion, agentVersion: agentVersion(), clock, timeoutMs: REVOKE_TIMEOUT_MS });
  try {
    await api.oauth.revoke({ clientId, clientSecret }, token);
    return { revoked: true };
  } catch (err) {
    return { revoked: false, why: err instanceof AgentError ? err.message : String(err) };
  } finally {
    api.close();
  }
}

export async function run(ctx: CommandContext): Promise<number> {
  try {
    const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: false });
    const file = settings.tokenFile;
    const stored = storedToken(file, settings.sources.tokenFile);
    const warnings: string[] = [];
    let revoked = false;
    if (stored.kind === 'none') {
      warnings.push(stored.why);
    } else if (ctx.values.local === true) {
      warnings.push('--local: forgot the credentials here only; the service still lists the device (remove it in the app)');
    } else if (settings.apiUrl === '') {
      throw new AgentError('config', `no API URL configured (set --api-url, C2C_API_URL or apiUrl in the config file): cannot revoke the authorization at the service, so nothing was forgotten; ${LOCAL_ADVICE}`, { source: 'apiUrl' });
    } else {
      const r = await revoke(settings, secretForRevoke(settings), stored.token);
      revoked = r.revoked;
      if (!r.revoked) warnings.push(`could not revoke at the service (${r.why}); forgot the credentials here only: the service still lists the device (remove it in the app)`);
    }
    let removed: boolean;
    try {
      removed = await removeCredentials(file);
    } catch (err) {
      const doing = revoked ? 'remove the credentials file (the authorization was revoked at the service)' : 'remove the credentials file';
      throw fsError(err, doing, file, settings.sources.tokenFile);
    }
    const nudge = nudgeDaemon(settings.runtimeDir);
    if (nudge.kind === 'denied') warnings.push(`run \`systemctl reload c2c-agent\` so the daemon (pid ${nudge.pid}) notices`);
    if (settings.token) warnings.push('C2C_TOKEN is set: the agent keeps using it until it is unset');
    if (ctx.json) {
      printJson({ ok: true, exitCode: EXIT.ok, revoked, removed, credentials: file, daemon: nudge.kind, warnings });
    } else {
      printLine(
        revoked ? 'revoked the authorization at the service' : 'not revoked at the service',
        removed ? `forgot the credentials (${file})` : `no credentials file (${file})`,
        nudge.kind === 'signalled' ? `the running daemon (pid ${nudge.pid}) now needs pairing` : nudge.kind === 'not-running' ? 'no daemon runs' : `daemon pid ${nudge.pid} not told`,
        ...warnings.map((w) => `warning: ${w}`),
      );
    }
    return EXIT.ok;
  } catch (err) {
    return fail(err, { json: ctx.json });
  }
}
