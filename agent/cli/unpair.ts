// `c2c-agent unpair [--json] [--local]`: the "deauthorize" every device must
// offer. Revokes the authorization at the service (best effort, bounded
// wait) and forgets the credentials here (the file goes, durably). A running
// daemon does it itself (POST /v1/unpair) and needs pairing at once. Offline it still forgets locally, and
// says that the service keeps listing the device until someone removes it
// there. Without what a revocation needs (the client secret, the API URL) it
// forgets nothing and exits 78, since the token would stay valid at the
// service; `--local` forgets here without asking the service at all.
import type { SettingKey } from '../config/setting-table.js';
import type { ClientCredentials } from '../api/oauth.js';
import { createServiceApi } from '../api/service.js';
import { getClientId } from '../auth/client-id.js';
import { removeCredentials } from '../auth/credentials-store.js';
import { REVOKE_TIMEOUT_MS, unpairHere } from '../auth/revocation.js';
import { loadSettings } from '../config/settings.js';
import type { Settings } from '../config/types.js';
import { SystemClock } from '../lib/clock.js';
import { AgentError, EXIT } from '../lib/errors.js';
import { assertNoDaemon, DaemonApi, refusal } from './daemon-api.js';
import type { CommandContext, CommandOptions } from './command.js';
import { fail, printJson, printLine } from './output.js';
import { agentVersion } from './version.js';

export const usage = 'unpair [--json] [--local]';
export const options = { json: { type: 'boolean' }, local: { type: 'boolean' } } satisfies CommandOptions;
export const summary = 'Revokes the authorization at the service, then forgets the credentials here (the running daemon does both when one runs, and needs pairing at once).';
export const help = ['Without a client secret or an API URL nothing is forgotten (exit 78): the token would stay valid at the service.'];
export const optionHelp = {
  json: { help: 'one JSON object on stdout instead of lines of text' },
  local: { help: 'forget the credentials here without asking the service (it keeps the authorization until the device is removed in the app)' },
};
export const needs = ['apiUrl', 'clientSecretFile'] as const satisfies readonly SettingKey[];

/** What --local says in every refusal: the one way to forget without revoking. */
const LOCAL_ADVICE = 'or run `c2c-agent unpair --local` to forget the credentials here only (the service keeps the authorization until the device is removed in the app)';

/** Revokes with an API client of its own, bounded by REVOKE_TIMEOUT_MS. */
async function revokeAtService(settings: Settings, client: ClientCredentials, token: string): Promise<void> {
  const clock = new SystemClock(settings.timeScale);
  const api = createServiceApi({ baseUrl: settings.apiUrl, token: () => undefined, firmwareVersion: settings.firmwareVersion, agentVersion: agentVersion(), clock, timeoutMs: REVOKE_TIMEOUT_MS, extraCas: settings.extraCas });
  try {
    await api.oauth.revoke(client, token);
  } finally {
    api.close();
  }
}

/** What the daemon's POST /v1/unpair answers. */
interface DaemonUnpaired {
  revoked: boolean;
  removed: boolean;
  warnings: string[];
}

function isUnpaired(v: unknown): v is DaemonUnpaired {
  const o = v as Partial<DaemonUnpaired> | undefined;
  return typeof o?.revoked === 'boolean' && typeof o.removed === 'boolean' && Array.isArray(o.warnings) && o.warnings.every((w) => typeof w === 'string');
}

export async function run(ctx: CommandContext): Promise<number> {
  try {
    const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: false });
    const file = settings.tokenFile;
    const local = ctx.values.local === true;
    // A running daemon unpairs itself (it alone writes its credentials while it runs) and needs pairing at once.
    const daemon = new DaemonApi(settings);
    const reply = await daemon.request('POST', '/v1/unpair', local ? { local: true } : {}, 30_000);
    let done: DaemonUnpaired;
    let pid: number | undefined;
    if (reply !== undefined) {
      if (reply.status !== 200) throw refusal(reply, 'POST /v1/unpair');
      if (!isUnpaired(reply.body)) throw new AgentError('protocol', `the daemon's answer to POST /v1/unpair is not what this agent sends (${daemon.socket})`);
      done = reply.body;
      const st = await daemon.request<{ pid?: unknown }>('GET', '/v1/status').catch(() => undefined);
      pid = typeof st?.body?.pid === 'number' ? st.body.pid : undefined;
    } else {
      assertNoDaemon(settings, daemon.socket, 'forget its credentials');
      done = await unpairHere(settings, {
        local,
        clientId: async () => (await getClientId(settings)).clientId,
        localAdvice: LOCAL_ADVICE,
        revoke: (client, token) => revokeAtService(settings, client, token),
        remove: () => removeCredentials(file),
      });
    }
    const { revoked, removed, warnings } = done;
    const running = reply !== undefined;
    if (ctx.json) {
      printJson({ ok: true, exitCode: EXIT.ok, revoked, removed, credentials: file, daemon: running ? 'running' : 'not-running', warnings });
    } else {
      printLine(
        revoked ? 'revoked the authorization at the service' : 'not revoked at the service',
        removed ? `forgot the credentials (${file})` : `no credentials file (${file})`,
        running ? `the running daemon${pid === undefined ? '' : ` (pid ${pid})`} forgot them and now needs pairing` : 'no daemon runs',
        ...warnings.map((w) => `warning: ${w}`),
      );
    }
    return EXIT.ok;
  } catch (err) {
    return fail(err, { json: ctx.json });
  }
}
