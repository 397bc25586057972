// The command registry: one line per command, each imported only when run
// (see ./command.ts for the module shape).
import type { CommandModule } from './command.js';

export const COMMANDS: Record<string, () => Promise<CommandModule>> = {
  cancel: () => import('./cancel.js'),
  channels: () => import('./channels.js'),
  check: () => import('./check.js'),
  prefs: () => import('./prefs.js'),
  priority: () => import('./priority.js'),
  profiles: () => import('./profiles.js'),
  queue: () => import('./queue.js'),
  pair: () => import('./pair.js'),
  run: () => import('./run.js'),
  status: () => import('./status.js'),
  unpair: () => import('./unpair.js'),
  upload: () => import('./upload.js'),
};
