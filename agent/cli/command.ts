// The shape of a command module. Each command lives in its own file under
// agent/cli/ and is imported lazily by the registry (agent/cli/commands.ts),
// so `c2c-agent profiles` never loads got or pino.
//
// To add a command, write agent/cli/<name>.ts exporting:
//
//   export const usage = 'check [--json]';               // shown by `c2c-agent check --help`
//   export const options = { json: { type: 'boolean' } } satisfies CommandOptions;
//   export const help = ['what it does', '--opt  what it changes'];  // optional, under the usage
//   export async function run(ctx: CommandContext): Promise<number> { ... return 0; }
//
// and add ONE line to COMMANDS in agent/cli/commands.ts:
//
//   check: () => import('./check.js'),
//
// The settings options every command accepts (--config, --api-url, ...,
// --log-level, --help) are added by the CLI; `options` lists only the
// command's own. Parsing is strict: an unknown option or a stray positional
// is exit 64 before `run` is called. Then:
//   - settings: loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl })
//   - output:   printJson / printLine from ./output.js (scrubbed, redacted)
//   - failure:  throw an AgentError; the CLI prints one line on stderr, and
//               with --json also {ok:false, exitCode, error}. To put more
//               facts in the failure JSON, catch it and
//               `return fail(err, { json: ctx.json, extra: {...} })`.
//   - the returned number becomes the exit code (process.exitCode: output
//     is flushed, nothing calls process.exit()).
import type { ParseArgsConfig } from 'node:util';
import type { SettingsOptions } from '../config/settings.js';

export type CommandOptions = NonNullable<ParseArgsConfig['options']>;

export interface CommandContext {
  /** The command name as typed, e.g. 'profiles'. */
  name: string;
  /** The command's own options, parsed (the common settings options are in settingsOptions). */
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  /** Positional arguments; only non-empty when the module sets allowPositionals. */
  positionals: string[];
  /** The common settings options from the command line, ready for loadSettings(). */
  settingsOptions: SettingsOptions;
  /** True when the command declared --json and it was given. */
  json: boolean;
  env: NodeJS.ProcessEnv;
}

export interface CommandModule {
  usage: string;
  /** Lines `c2c-agent <name> --help` prints under the usage: what it does, its own options, its exit codes. */
  help?: readonly string[];
  options: CommandOptions;
  allowPositionals?: boolean;
  run(ctx: CommandContext): Promise<number>;
}
