// The shape of a command module. Each command lives in its own file under
// agent/cli/ and is imported lazily by the registry (agent/cli/commands.ts),
// so `c2c-agent profiles` never loads got or pino.
//
// To add a command, write agent/cli/<name>.ts exporting:
//
//   export const usage = 'check [--json]';               // shown by `c2c-agent check --help`
//   export const options = { json: { type: 'boolean' } } satisfies CommandOptions;
//   export const summary = 'what it does, one sentence';
//   export const optionHelp = { json: { help: 'one JSON object' } };  // its own options, with defaults
//   export const needs = ['apiUrl'] as const;   // settings it cannot work without (setting-table.ts keys)
//   export const help = ['more lines under the summary'];  // optional
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
import type { SettingKey } from '../config/setting-table.js';

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

/** One of a command's own options, for its --help: what its value is called, what it does, its default. */
export interface OptionHelp {
  value?: string;
  help: string;
  default?: string;
}

export interface CommandModule {
  usage: string;
  /** What the command does, one sentence, first under the usage in --help. */
  summary?: string;
  /** Its own options (keys of `options`) explained, with their defaults. */
  optionHelp?: Readonly<Record<string, OptionHelp>>;
  /** The settings it cannot work without: --help shows each from the setting table (option, variable, config key, help, default). */
  needs?: readonly SettingKey[];
  /** What else it needs that is no setting ("credentials from `c2c-agent pair`"). */
  needsAlso?: readonly string[];
  /** Lines `c2c-agent <name> --help` prints under the usage: what it does, its own options, its exit codes. */
  help?: readonly string[];
  options: CommandOptions;
  allowPositionals?: boolean;
  run(ctx: CommandContext): Promise<number>;
}
