// `c2c-agent run`: the daemon in the foreground, as systemd runs it
// (Type=notify). The daemon's wiring lives in agent/daemon/main.ts.
import type { SettingKey } from '../config/setting-table.js';
import { loadSettings } from '../config/settings.js';
import type { Settings } from '../config/types.js';
import { tokenKeyOf } from '../auth/credentials-systemd.js';
import { checkDirectorySync, checkRegularFileSync, READ_LIMITS } from '../lib/bounded-read.js';
import { queueDirOf } from '../outbox/location.js';
import type { CommandContext, CommandOptions } from './command.js';
import { agentVersion } from './version.js';

export const usage = 'run';
export const options = {} satisfies CommandOptions;
export const summary = 'The daemon, in the foreground (systemd Type=notify): heartbeats, channels, uploads through the durable queue.';
export const needs = ['apiUrl', 'clientSecretFile'] as const satisfies readonly SettingKey[];
export const needsAlso = ['credentials from `c2c-agent pair` (or C2C_TOKEN); without them it runs and waits in needs-pairing'];

/**
 * The paths the daemon works in are what they should be, or absent (made
 * when first written; no credentials means needs-pairing): a state dir that
 * is a file, a token file that is a FIFO or a directory is exit 78 now, one
 * line naming it and its setting, rather than a daemon that runs without its
 * queue or waits on a pipe. Looked at only (stat): nothing is opened here.
 */
export function checkDaemonPaths(settings: Settings): void {
  const { sources } = settings;
  if (checkDirectorySync(settings.stateDir, { what: 'state dir', source: sources.stateDir })) {
    checkDirectorySync(queueDirOf(settings.stateDir), { what: 'queue directory', source: `<state-dir>/queue, the state dir from ${sources.stateDir ?? 'default'}` });
  }
  checkDirectorySync(settings.runtimeDir, { what: 'runtime dir', source: sources.runtimeDir });
  if (settings.token === undefined || settings.token === '') {
    checkRegularFileSync(settings.tokenFile, { what: 'credentials file', maxBytes: READ_LIMITS.credentials, source: sources.tokenFile });
  }
  if (settings.clientSecretFile !== undefined) {
    checkRegularFileSync(settings.clientSecretFile, { what: 'client secret file', maxBytes: READ_LIMITS.secret, source: sources.clientSecretFile });
  }
}

export async function run(ctx: CommandContext): Promise<number> {
  const settings = loadSettings(ctx.settingsOptions, ctx.env);
  checkDaemonPaths(settings);
  // A token-key shorter than 32 bytes is exit 78 now, not a daemon that cannot store what it is granted.
  tokenKeyOf(settings);
  const { runDaemon } = await import('../daemon/main.js');
  return runDaemon(settings, agentVersion());
}
