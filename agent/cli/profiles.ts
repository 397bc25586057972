// `c2c-agent profiles [--firmware SEMVER] [--json]`: validates every firmware
// profile, lists them and shows which one the firmware selects. No network,
// no apiUrl needed: an integrator runs it while writing profiles.
import compare from 'semver/functions/compare.js';
import { loadSettings } from '../config/settings.js';
import { describeRange, loadProfiles, selectProfile } from '../config/profiles.js';
import type { FirmwareProfile, InputSpec } from '../config/types.js';
import { formatRate } from '../lib/timecode.js';
import type { CommandContext, CommandOptions } from './command.js';
import { fail, printJson, printLine } from './output.js';

export const usage = 'profiles [--firmware SEMVER] [--json] [--profiles-dir DIR]';
export const options = {
  firmware: { type: 'string' },
  json: { type: 'boolean' },
} satisfies CommandOptions;
export const summary = 'Lists and validates the firmware profiles, and shows which one the firmware version selects. No network.';
export const optionHelp = {
  firmware: { value: 'SEMVER', help: 'the firmware version to select a profile for', default: 'the firmware version setting (--firmware-version)' },
  json: { help: 'one JSON object on stdout instead of lines of text' },
};

function profileSummary(p: FirmwareProfile, selected: boolean): Record<string, unknown> {
  return {
    id: p.id,
    name: p.name,
    file: p.file,
    minFirmware: p.minFirmware,
    maxFirmware: p.maxFirmware ?? null,
    range: describeRange(p),
    assetType: p.assetType,
    heartbeat: p.heartbeat,
    channels: p.channels.map((c) => ({ key: c.key, name: c.name, assetType: c.assetType, deviceModelId: c.deviceModelId, ...(c.inputs !== undefined && { inputs: c.inputs.map(inputSummary) }) })),
    requiredMetadata: p.requiredMetadata,
    ...(p.inputDevice !== undefined && { inputDevice: p.inputDevice }),
    ...(p.timecode !== undefined && { timecode: { rate: formatRate(p.timecode.rate), dropFrame: p.timecode.dropFrame } }),
    selected,
  };
}

/** An input as `profiles --json` shows it: its key as the profile wrote it, and its code. */
const inputSummary = (i: InputSpec): Record<string, unknown> => ({ index: i.index, name: i.name, ...(i.key !== undefined && { key: i.keyName ?? i.key, keyCode: i.key }) });

/** The buttons of a profile (real-time logging), a line each, and where their keys and the time-of-day timecode come from. */
function inputLines(p: FirmwareProfile): string[] {
  const lines = p.channels.flatMap((c) => (c.inputs ?? []).map((i) => `  ${c.key} ${i.index}: ${i.name}${i.key === undefined ? '' : ` (key ${i.keyName !== undefined && i.keyName !== String(i.key) ? `${i.keyName}, ${i.key}` : i.key})`}`));
  if (lines.length === 0) return [];
  const tc = p.timecode === undefined ? 'no timecode unless the press gives one' : `time-of-day timecode at ${formatRate(p.timecode.rate)}${p.timecode.dropFrame ? ' drop-frame' : ''}`;
  return [`${p.id} inputs (c2c-agent press CHANNEL INDEX; ${tc}${p.inputDevice === undefined ? '' : `; keys read from ${p.inputDevice} under the host root`}):`, ...lines];
}

function table(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  ').trimEnd());
}

export async function run(ctx: CommandContext): Promise<number> {
  const firmware = ctx.values.firmware;
  const settingsOptions = typeof firmware === 'string' ? { ...ctx.settingsOptions, firmwareVersion: firmware } : ctx.settingsOptions;
  const settings = loadSettings(settingsOptions, ctx.env, {
    requireApiUrl: false,
    ...(typeof firmware === 'string' ? { optionLabels: { firmwareVersion: '--firmware' } } : {}),
  });
  // Listed in firmware order, which is how selection reads them.
  const profiles = loadProfiles(settings.profilesDir, settings.sources.profilesDir).sort((a, b) => compare(a.minFirmware, b.minFirmware));
  const fw = settings.firmwareVersion;
  const fwSource = settings.sources.firmwareVersion ?? 'default';
  const facts = {
    profilesDir: settings.profilesDir === '' ? null : settings.profilesDir,
    firmwareVersion: fw,
    firmwareSource: fwSource,
  };

  let selected: FirmwareProfile;
  try {
    selected = selectProfile(profiles, fw, fwSource);
  } catch (err) {
    if (!ctx.json) listHuman(profiles, undefined, settings.profilesDir);
    return fail(err, { json: ctx.json, extra: { ...facts, selected: null, profiles: profiles.map((p) => profileSummary(p, false)) } });
  }

  if (ctx.json) {
    printJson({ ok: true, exitCode: 0, ...facts, selected: selected.id, profiles: profiles.map((p) => profileSummary(p, p === selected)) });
  } else {
    listHuman(profiles, selected, settings.profilesDir);
    printLine(`firmware ${fw} (from ${fwSource}) selects ${selected.id}: ${selected.name}`, ...inputLines(selected));
  }
  return 0;
}

function listHuman(profiles: FirmwareProfile[], selected: FirmwareProfile | undefined, dir: string): void {
  printLine(`${profiles.length} firmware profiles, all valid, from ${dir === '' ? 'the set shipped with the agent' : dir}:`);
  const rows = [['', 'id', 'firmware', 'asset', 'heartbeat', 'channels', 'name']].concat(
    profiles.map((p) => [
      p === selected ? '*' : ' ',
      p.id,
      describeRange(p),
      p.assetType,
      `${p.heartbeat.minSeconds}-${p.heartbeat.maxSeconds}s`,
      p.channels.map((c) => c.key).join(','),
      p.name,
    ]),
  );
  printLine(...table(rows));
}
