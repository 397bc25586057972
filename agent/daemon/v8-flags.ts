// The daemon's V8 flags. No TurboFan: its code runs a few times a minute,
// never hot enough to repay an optimizing compile, yet once the heartbeat
// path has run some thousand times (hours on a camera, seconds at
// --time-scale 600) the compiler's own pages and its output stay mapped: 4-5
// MiB of RSS (`npm run bench`). Nor Sparkplug, the baseline compiler, for the
// same reason: its code and the compiler's pages cost an idle daemon 1 MiB
// (docs/benchmarks.md); the interpreter runs a heartbeat in a few ms.
// --optimize-for-size makes V8 favour memory: its own full collections
// reduce memory, and at a quiet scavenge the old generation's limit is set
// in the conservative mode, about 3 MiB over the live heap instead of 9
// (a 2 MiB minimum step, not 8). The daemon's live heap is about 7 MiB and
// every heartbeat leaves some garbage in it, so by default its RSS climbed
// 5 to 6 MiB over a day's heartbeats before a collection took it back; now
// it holds (docs/benchmarks.md, "The heap's growth step").
//
// The unit gives them on node's command line (its ExecStart; a test holds the
// two equal), so the daemon's start loads no node:v8 (8 to 12 ms under the
// unit's node options) and V8's code cache of the daemon (boot.ts) is made
// and read under the same flags. `c2c-agent run` anywhere else sets them
// itself as it starts (daemon/main.ts), before anything is hot: V8 reads them when it decides
// to compile a hot function.

import { builtin } from '../lib/builtin.js';

export const DAEMON_V8_FLAGS = ['--no-opt', '--no-sparkplug', '--optimize-for-size'] as const;

/** Sets the flags node was not started with. */
export function useDaemonV8Flags(): void {
  const missing = DAEMON_V8_FLAGS.filter((f) => !process.execArgv.includes(f));
  if (missing.length === 0) return;
  const v8 = builtin<typeof import('node:v8')>('node:v8');
  for (const flag of missing) v8.setFlagsFromString(flag);
}
