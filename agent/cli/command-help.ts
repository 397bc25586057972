// `c2c-agent <command> --help`: the usage, what the command does, its own
// options with their defaults, the settings it needs, and the settings every
// command takes, wrapped to the terminal (80 columns when not a terminal).
// Generated from the command module (agent/cli/<name>.ts: usage, summary,
// optionHelp, needs) and the setting table (config/setting-table.ts: each
// needed setting's option, variable, config key, help and default), so no
// fact is written twice.
import { optionText, SETTING_ROWS, type SettingKey, type SettingRow } from '../config/setting-table.js';
import { wrap } from '../lib/text.js';
import type { CommandModule } from './command.js';

/** Columns when the output is not a terminal (a pipe, a file, a CI log). */
export const HELP_WIDTH_OFF_TERMINAL = 80;
/** Narrower than this, two columns stop helping: wrap as if this wide. */
const MIN_WIDTH = 40;
const NBSP = '\u00a0';
/** Fewer columns than this left for the text: it goes under the labels instead. */
const MIN_TEXT_COLUMN = 30;
/** A label wider than this puts its text on the next line. */
const MAX_LABEL = 28;

export function helpWidth(out: { isTTY?: boolean; columns?: number }): number {
  const columns = out.isTTY === true && typeof out.columns === 'number' && out.columns > 0 ? out.columns : HELP_WIDTH_OFF_TERMINAL;
  return Math.max(MIN_WIDTH, columns);
}

/** Markdown's code spans (the table's defaults are written for docs/configuration.md) as plain text. */
const plain = (markdown: string): string => markdown.replace(/`/g, '');

/** "label  text", the text wrapped under its own column (or under the label, indented, when `stacked`). */
function entries(rows: Array<[string, string]>, width: number, stacked = false): string[] {
  const widest = Math.min(MAX_LABEL, Math.max(0, ...rows.map(([l]) => l.length)));
  // On a narrow terminal the text goes under its label, indented, rather than into a sliver of a column.
  const labelWidth = !stacked && width - (2 + widest + 2) >= MIN_TEXT_COLUMN ? widest : 0;
  const textColumn = labelWidth === 0 ? 6 : 2 + labelWidth + 2;
  const out: string[] = [];
  for (const [label, text] of rows) {
    if (label.length > labelWidth) {
      out.push(`  ${label}`);
      out.push(...wrap(text, width - textColumn).map((l) => `${' '.repeat(textColumn)}${l}`));
      continue;
    }
    const [first = '', ...rest] = wrap(text, width - textColumn);
    out.push(`  ${label.padEnd(labelWidth)}  ${first}`.trimEnd(), ...rest.map((l) => `${' '.repeat(textColumn)}${l}`));
  }
  return out;
}

/** Where a setting may come from, in the order the first found wins. */
function sourcesOf(row: SettingRow): string {
  return [row.env && `environment ${row.env}`, row.configKey && `config key ${row.configKey}`].filter(Boolean).join(', ');
}

export function commandHelp(name: string, mod: CommandModule, width: number): string[] {
  const lines = [...wrap(`usage: c2c-agent ${mod.usage}`, width, 2)];
  if (mod.summary) lines.push('', ...wrap(mod.summary, width));
  for (const l of mod.help ?? []) lines.push(...wrap(l, width));
  const own = Object.entries(mod.optionHelp ?? {});
  if (own.length > 0) {
    lines.push('', 'options:');
    lines.push(...entries(own.map(([opt, h]) => [`--${opt}${h.value ? ` ${h.value}` : ''}`, `${h.help}${h.default !== undefined ? ` (default: ${h.default})` : ''}`]), width));
  }
  const needs = mod.needs ?? [];
  if (needs.length > 0 || (mod.needsAlso ?? []).length > 0) {
    lines.push('', 'needs:');
    lines.push(...entries(needs.map((k) => [optionText(SETTING_ROWS[k]), `${SETTING_ROWS[k].help}; or ${sourcesOf(SETTING_ROWS[k])}; default: ${plain(SETTING_ROWS[k].default)}`]), width));
    for (const also of mod.needsAlso ?? []) lines.push(...wrap(also, width - 2, 2).map((l) => `  ${l}`));
  }
  const others = (Object.keys(SETTING_ROWS) as SettingKey[]).filter((k) => !needs.includes(k)).map((k) => optionText(SETTING_ROWS[k]).replace(/ /g, NBSP));
  lines.push('', ...wrap('settings every command takes (each also from its environment variable or the config file; `c2c-agent --help` lists them):', width));
  lines.push(...wrap(others.join(', '), width - 2).map((l) => `  ${l.replace(/\u00a0/g, ' ')}`));
  return lines;
}

/** The same facts for `--json --help`. */
export function commandHelpJson(mod: CommandModule): Record<string, unknown> {
  const needs = (mod.needs ?? []).map((k) => {
    const r: SettingRow = SETTING_ROWS[k];
    return { setting: k, option: optionText(r), env: r.env, configKey: r.configKey, help: r.help, default: plain(r.default) };
  });
  const options = Object.entries(mod.optionHelp ?? {}).map(([opt, h]) => ({ option: `--${opt}${h.value ? ` ${h.value}` : ''}`, help: h.help, ...(h.default !== undefined && { default: h.default }) }));
  return { ...(mod.summary && { summary: mod.summary }), options, needs, ...(mod.needsAlso && { needsAlso: mod.needsAlso }) };
}

/**
 * `c2c-agent --help`: every command (its usage and what it does, from its
 * module: nothing restated here), the settings (from the setting table) and
 * the exit codes, wrapped like a command's help.
 */
export function topLevelHelp(commands: Array<[string, CommandModule]>, exitCodes: string, width: number): string[] {
  const lines = ['usage: c2c-agent <command> [options]', '', ...wrap('commands (`c2c-agent <command> --help` says what each needs, its options and their defaults):', width)];
  lines.push(...entries(commands.map(([, mod]) => [`c2c-agent ${mod.usage}`, mod.summary ?? '']), width, true));
  lines.push('  c2c-agent --version | --help');
  lines.push('', ...wrap('settings, accepted by every command; each also comes from its environment variable or the config file (first match wins: option, environment, config file):', width));
  lines.push(...entries((Object.keys(SETTING_ROWS) as SettingKey[]).map((k) => {
    const r: SettingRow = SETTING_ROWS[k];
    return [`${optionText(r)}${r.env ? `  ${r.env}` : ''}`, r.help];
  }), width, true));
  lines.push('', ...wrap(`exit codes: ${exitCodes}.`, width));
  return lines;
}
