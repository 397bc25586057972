// One parser for every command: the common settings options plus the
// command's own, strict, so a typo is exit 64 rather than a silently
// ignored setting.
import { parseArgs } from 'node:util';
import { SETTINGS_FLAGS, type SettingsOptions } from '../config/settings.js';
import { optionText, SETTING_ROWS } from '../config/setting-table.js';
import { usageError } from '../lib/errors.js';
import { didYouMean } from '../lib/near-miss.js';
import type { CommandContext, CommandModule, CommandOptions } from './command.js';

export const COMMON_OPTIONS: CommandOptions = {
  ...Object.fromEntries(Object.values(SETTINGS_FLAGS).map((flag) => [flag.slice(2), { type: 'string' as const }])),
  help: { type: 'boolean', short: 'h' },
};

const SETTINGS_KEYS = Object.keys(SETTINGS_FLAGS) as (keyof SettingsOptions)[];

export function commonOptionsHelp(): string {
  return Object.values(SETTING_ROWS).map(optionText).join(' ');
}

// parseArgs' messages run to several sentences; keep the first, lower-cased start.
function firstSentence(message: string): string {
  const s = message.split(/\.\s/)[0]?.replace(/\.$/, '') ?? message;
  return s.charAt(0).toLowerCase() + s.slice(1);
}

/** " (did you mean --api-url?)" for an unknown long option close to one the command takes, else ''. */
function nearOption(err: unknown, options: CommandOptions): string {
  if ((err as { code?: unknown }).code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return '';
  const given = /'(--[^'=]+)/.exec((err as Error).message)?.[1];
  return given === undefined ? '' : didYouMean(given, Object.keys(options).map((o) => `--${o}`));
}

export interface ParsedCommand {
  ctx: CommandContext;
  help: boolean;
}

export function parseCommandArgs(name: string, mod: CommandModule, args: string[], env: NodeJS.ProcessEnv): ParsedCommand {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args, options: { ...COMMON_OPTIONS, ...mod.options }, strict: true, allowPositionals: mod.allowPositionals ?? false });
  } catch (err) {
    throw usageError(`${name}: ${firstSentence((err as Error).message)}${nearOption(err, { ...COMMON_OPTIONS, ...mod.options })}; run c2c-agent ${name} --help`);
  }
  const values = parsed.values as Record<string, string | boolean | (string | boolean)[] | undefined>;
  const settingsOptions: SettingsOptions = {};
  const own: CommandContext['values'] = {};
  for (const k of SETTINGS_KEYS) {
    const v = values[SETTINGS_FLAGS[k].slice(2)];
    if (typeof v === 'string') settingsOptions[k] = v;
  }
  for (const k of Object.keys(mod.options)) own[k] = values[k];
  return {
    help: values.help === true,
    ctx: { name, values: own, positionals: parsed.positionals, settingsOptions, json: 'json' in mod.options && values.json === true, env },
  };
}
