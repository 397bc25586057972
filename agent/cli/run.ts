// `c2c-agent run`: the daemon in the foreground, as systemd runs it
// (Type=notify). The daemon's wiring lives in agent/daemon/main.ts.
import v8 from 'node:v8';
import { loadSettings } from '../config/settings.js';
import type { CommandContext, CommandOptions } from './command.js';
import { agentVersion } from './version.js';

export const usage = 'run';
export const options = {} satisfies CommandOptions;

export async function run(ctx: CommandContext): Promise<number> {
  // No TurboFan in the daemon: its code runs a few times a minute, never hot
  // enough to repay an optimizing compile, yet once the heartbeat path has run
  // some thousand times (hours on a camera, seconds at --time-scale 600) the
  // compiler's own pages and its output stay mapped: 4-5 MiB of RSS
  // (`npm run bench`). Sparkplug (and Maglev on Node 22+) still compile.
  // The flag is read when V8 decides to optimize, so setting it here works.
  v8.setFlagsFromString('--no-opt');
  const settings = loadSettings(ctx.settingsOptions, ctx.env);
  const { runDaemon } = await import('../daemon/main.js');
  return runDaemon(settings, agentVersion());
}
