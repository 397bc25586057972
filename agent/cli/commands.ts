// The command registry: one line per command, each imported only when run
// (see ./command.ts for the module shape).
import type { CommandModule } from './command.js';

// The order is the one `--help` lists them in: the daemon and pairing
// first, then the uploads, then the hardware.
export const COMMANDS: Record<string, () => Promise<CommandModule>> = {
  run: () => import('./run.js'),
  check: () => import('./check.js'),
  status: () => import('./status.js'),
  pair: () => import('./pair.js'),
  unpair: () => import('./unpair.js'),
  upload: () => import('./upload.js'),
  queue: () => import('./queue.js'),
  cancel: () => import('./cancel.js'),
  priority: () => import('./priority.js'),
  prefs: () => import('./prefs.js'),
  press: () => import('./press.js'),
  comment: () => import('./comment.js'),
  channels: () => import('./channels.js'),
  profiles: () => import('./profiles.js'),
  'web-pin': () => import('./web-pin.js'),
};
