// `c2c-agent unpair [--json] [--local]`: the "deauthorize" every device must
// offer. Revokes the authorization at the service (best effort, bounded
// wait), forgets the credentials here (the file goes, durably) and puts a
// running daemon into needs-pairing. Offline it still forgets locally, and
// says that the service keeps listing the device until someone removes it
// there. Without what a revocation needs (the client secret, the API URL) it
// forgets nothing and exits 78, since the token would stay valid at the
// service; `--local` forgets here without asking the service at all.
import type { ClientCredentials } from '../api/oauth.js';
import { createServiceApi } from '../api/service.js';
import { getClientId } from '../auth/client-id.js';
import { removeCredentials } from '../auth/credentials-store.js';
import { REVOKE_TIMEOUT_MS, unpairHere } from '../auth/revocation.js';
import { loadSettings } from '../config/settings.js';
import type { Settings } from '../config/types.js';
import { nudgeDaemon } from '../daemon/runtime/run-lock.js';
import { SystemClock } from '../lib/clock.js';
import { EXIT } from '../lib/errors.js';
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

/** Revokes with an API client of its own, bounded by REVOKE_TIMEOUT_MS. */
async function revokeAtService(settings: Settings, client: ClientCredentials, token: string): Promise<void> {
  const clock = new SystemClock(settings.timeScale);
  const api = createServiceApi({ baseUrl: settings.apiUrl, token: () => undefined, firmwareVersion: settings.firmwareVersion, agentVersion: agentVersion(), clock, timeoutMs: REVOKE_TIMEOUT_MS });
  try {
    await api.oauth.revoke(client, token);
  } finally {
    api.close();
  }
}

export async function run(ctx: CommandContext): Promise<number> {
  try {
    const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: false });
    const file = settings.tokenFile;
    const { revoked, removed, warnings } = await unpairHere(settings, {
      local: ctx.values.local === true,
      clientId: async () => (await getClientId(settings)).clientId,
      localAdvice: LOCAL_ADVICE,
      revoke: (client, token) => revokeAtService(settings, client, token),
      remove: () => removeCredentials(file),
    });
    const nudge = nudgeDaemon(settings.runtimeDir);
    if (nudge.kind === 'denied') warnings.push(`run \`systemctl reload c2c-agent\` so the daemon (pid ${nudge.pid}) notices`);
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
