// `c2c-agent run`: the daemon in the foreground, as systemd runs it
// (Type=notify). The daemon's wiring lives in agent/daemon/main.ts.
import { loadSettings } from '../config/settings.js';
import type { CommandContext, CommandOptions } from './command.js';
import { agentVersion } from './version.js';

export const usage = 'run';
export const options = {} satisfies CommandOptions;

export async function run(ctx: CommandContext): Promise<number> {
  const settings = loadSettings(ctx.settingsOptions, ctx.env);
  const { runDaemon } = await import('../daemon/main.js');
  return runDaemon(settings, agentVersion());
}
