// Firmware profiles: one device-model configuration per firmware range
// (docs/service-api.md, "Firmware version"). Loaded from a directory or from the set shipped with
// the agent (embedded in the bundle at build time), validated against
// firmware-profiles/schema.json (compiled at build time by
// scripts/gen-profile-validator.mjs, so ajv is not loaded), then checked for what a schema
// cannot say. Selection: among profiles whose range holds the firmware
// (minFirmware <= fw < maxFirmware), the highest minFirmware wins. Two
// profiles with the same minFirmware are refused at load time, so the
// winner is always unique and never depends on file order.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ErrorObject } from 'ajv';
// Subpath imports: semver's index loads every function, class and range helper.
import compare from 'semver/functions/compare.js';
import gte from 'semver/functions/gte.js';
import lt from 'semver/functions/lt.js';
import { READ_LIMITS, readBoundedTextSync } from '../lib/bounded-read.js';
import { configError } from '../lib/errors.js';
import { fsError } from '../lib/fs-errors.js';
import { validate as matchesSchema } from './profile-schema-validator.js';
import { HEARTBEAT_WINDOW_SECONDS } from '../lib/timing.js';
import { isStrictSemver } from './firmware.js';
import { jsonErrorWhere, oneLine, quote } from '../lib/text.js';
import { keyCodeOf } from '../lib/key-codes.js';
import { dropFrameAllowed, formatRate, parseRate, TimecodeError } from '../lib/timecode.js';
import type { ChannelSpec, FirmwareProfile, InputSpec } from './types.js';

// Set by scripts/build.mjs: file name -> JSON text of the shipped profiles (not schema.json).
declare const __C2C_BUILTIN_PROFILES__: Record<string, string> | undefined;

export const SCHEMA_FILE = 'schema.json';
const BUILTIN_LABEL = 'firmware-profiles';

/** The shipped profile files, from the bundle or, in source/jest runs, from the repo. */
export function builtinProfileFiles(): Record<string, string> {
  if (typeof __C2C_BUILTIN_PROFILES__ !== 'undefined' && __C2C_BUILTIN_PROFILES__ !== undefined) return __C2C_BUILTIN_PROFILES__;
  const dir = fileURLToPath(new URL('../../firmware-profiles/', import.meta.url));
  return Object.fromEntries(readdirSync(dir).filter((f) => f.endsWith('.json') && f !== SCHEMA_FILE).sort().map((f) => [f, readFileSync(path.join(dir, f), 'utf8')]));
}

/** What a field with several allowed forms (a schema's oneOf) must be, by its name: the branches' own errors would name one form only. */
const FORMS: Record<string, string> = {
  key: 'must be a Linux key code (0 to 767) or a KEY_ or BTN_ name such as KEY_ENTER',
  rate: 'must be a whole number of frames per second (1 to 99) or a fraction "N/D" such as "24000/1001"',
};

function describeAjvError(first: ErrorObject, all: readonly ErrorObject[], data: unknown): string {
  // A oneOf failure is reported after its branches' errors: say what the field may be instead.
  const e = all.find((x) => x.keyword === 'oneOf' && x.instancePath === first.instancePath) ?? first;
  const where = e.instancePath === '' ? '/' : e.instancePath;
  const p = e.params as Record<string, unknown>;
  if (e.keyword === 'additionalProperties') return `${where} has unknown field ${quote(String(p.additionalProperty))}`;
  if (e.keyword === 'required') return `${e.instancePath}/${String(p.missingProperty)} is required`;
  let text = `${where} ${(e.keyword === 'oneOf' ? FORMS[e.instancePath.split('/').at(-1) ?? ''] : undefined) ?? e.message ?? 'is invalid'}`;
  if (e.keyword === 'enum') text += ` (${(p.allowedValues as unknown[]).join(', ')})`;
  const value = e.instancePath.split('/').slice(1).reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], data);
  // A value from the file is shown cut and escaped (a 5 MiB name must not make a 5 MiB message).
  if (typeof value === 'string') text += `, got ${quote(value)}`;
  else if (value === null || ['number', 'boolean'].includes(typeof value)) text += `, got ${JSON.stringify(value)}`;
  else if (e.keyword === 'type') text += `, got ${Array.isArray(value) ? 'array' : typeof value}`;
  return text;
}

interface RawProfile {
  id: string;
  name: string;
  minFirmware: string;
  maxFirmware?: string;
  assetType: FirmwareProfile['assetType'];
  heartbeat: { minSeconds: number; maxSeconds: number };
  channels: Array<Omit<ChannelSpec, 'inputs'> & { inputs?: Array<{ index: number; name: string; key?: number | string }> }>;
  requiredMetadata: string[];
  realtimeUploads?: boolean;
  inputDevice?: string;
  timecode?: { rate: number | string; dropFrame?: boolean };
}

/** Parses and checks one profile file; `file` is the name used in messages. */
export function parseProfile(text: string, file: string): FirmwareProfile {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw configError(`${file}: invalid JSON: ${jsonErrorWhere(text, err)}`, file);
  }
  if (!matchesSchema(data)) {
    const first = matchesSchema.errors?.[0];
    throw configError(`${file}: ${first ? describeAjvError(first, matchesSchema.errors ?? [], data) : 'does not match the profile schema'}`, file);
  }
  const raw = data as RawProfile;
  const fail = (msg: string): never => {
    throw configError(`${file}: ${msg}`, file);
  };
  for (const k of ['minFirmware', 'maxFirmware'] as const) {
    const v = raw[k];
    if (v !== undefined && !isStrictSemver(v)) fail(`/${k} ${quote(v)} is not strict semver (expected MAJOR.MINOR.PATCH, e.g. 1.4.2)`);
  }
  if (raw.maxFirmware !== undefined && compare(raw.maxFirmware, raw.minFirmware) <= 0) {
    fail(`/maxFirmware ${quote(raw.maxFirmware)} must be greater than /minFirmware ${quote(raw.minFirmware)} (the maximum is exclusive)`);
  }
  const window = HEARTBEAT_WINDOW_SECONDS;
  if (raw.heartbeat.minSeconds < window.min) fail(`/heartbeat/minSeconds must be >= ${window.min}, got ${raw.heartbeat.minSeconds}`);
  if (raw.heartbeat.maxSeconds > window.max) {
    fail(
      `/heartbeat/maxSeconds must be <= ${window.max}, got ${raw.heartbeat.maxSeconds} (a heartbeat started later could reach the service after its five-minute limit when the answer is slow)`,
    );
  }
  if (raw.heartbeat.minSeconds > raw.heartbeat.maxSeconds) {
    fail(`/heartbeat/minSeconds ${raw.heartbeat.minSeconds} must be <= /heartbeat/maxSeconds ${raw.heartbeat.maxSeconds}`);
  }
  const keys = new Map<string, number>();
  raw.channels.forEach((c, i) => {
    const before = keys.get(c.key);
    if (before !== undefined) fail(`/channels/${i}/key ${quote(c.key)} duplicates /channels/${before}/key`);
    keys.set(c.key, i);
  });
  const inputs = checkInputs(raw, fail);
  const profile: FirmwareProfile = {
    id: raw.id,
    name: raw.name,
    minFirmware: raw.minFirmware,
    assetType: raw.assetType,
    heartbeat: { minSeconds: raw.heartbeat.minSeconds, maxSeconds: raw.heartbeat.maxSeconds },
    channels: raw.channels.map((c, i) => ({
      key: c.key,
      name: c.name,
      assetType: c.assetType,
      deviceModelId: c.deviceModelId,
      detect: { anyPath: [...c.detect.anyPath] },
      ...(inputs[i] !== undefined && { inputs: inputs[i] }),
    })),
    requiredMetadata: [...raw.requiredMetadata],
    file,
  };
  if (raw.maxFirmware !== undefined) profile.maxFirmware = raw.maxFirmware;
  if (raw.realtimeUploads !== undefined) profile.realtimeUploads = raw.realtimeUploads;
  if (raw.inputDevice !== undefined) profile.inputDevice = raw.inputDevice;
  if (raw.timecode !== undefined) {
    let rate: { num: number; den: number } = { num: 0, den: 1 };
    try {
      rate = parseRate(raw.timecode.rate, '/timecode/rate');
    } catch (err) {
      if (!(err instanceof TimecodeError)) throw err;
      fail(err.message);
    }
    const dropFrame = raw.timecode.dropFrame ?? false;
    if (dropFrame && !dropFrameAllowed(rate)) fail(`/timecode/dropFrame is true but /timecode/rate ${quote(formatRate(rate))} has no drop-frame (only 30000/1001 and 60000/1001 do)`);
    profile.timecode = { rate, dropFrame };
  }
  return profile;
}

/**
 * Each channel's inputs (real-time logging, docs/real-time-logging.md): an
 * index once per channel, a key named or numbered as the kernel has it and
 * once in the profile (a key-down presses one input), and a key only with an
 * inputDevice to read it from (and an inputDevice only for keys).
 */
function checkInputs(raw: RawProfile, fail: (msg: string) => never): Array<InputSpec[] | undefined> {
  const keys = new Map<number, string>();
  const out = raw.channels.map((c, ci) => {
    if (c.inputs === undefined || c.inputs.length === 0) return undefined;
    const indexes = new Map<number, number>();
    return c.inputs.map((input, ii): InputSpec => {
      const at = `/channels/${ci}/inputs/${ii}`;
      const before = indexes.get(input.index);
      if (before !== undefined) fail(`${at}/index ${input.index} duplicates /channels/${ci}/inputs/${before}/index (an index is one input of the channel)`);
      indexes.set(input.index, ii);
      const spec: InputSpec = { index: input.index, name: input.name };
      if (input.key === undefined) return spec;
      const code = typeof input.key === 'number' ? input.key : keyCodeOf(input.key);
      if (code === undefined) fail(`${at}/key ${quote(String(input.key))} is not a Linux key name (linux/input-event-codes.h): give its number, or a name such as KEY_ENTER or BTN_0`);
      const shown = typeof input.key === 'number' ? String(input.key) : `${input.key} (${code})`;
      const other = keys.get(code!);
      if (other !== undefined) fail(`${at}/key ${shown} is also ${other}/key: a key presses one input`);
      keys.set(code!, at);
      if (raw.inputDevice === undefined) fail(`${at}/key ${shown} needs /inputDevice, the input device its presses are read from (dev/input/by-path/platform-gpio-keys-event on a Raspberry Pi)`);
      return { ...spec, key: code!, keyName: String(input.key) };
    });
  });
  if (raw.inputDevice !== undefined && keys.size === 0) fail(`/inputDevice ${quote(raw.inputDevice)} is set but no input has a key to read from it`);
  return out;
}

/** Checks that hold across files: unique ids, and no two profiles sharing a minFirmware. */
function checkSet(profiles: FirmwareProfile[]): void {
  profiles.forEach((p, i) => {
    for (const other of profiles.slice(0, i)) {
      if (other.id === p.id) throw configError(`${p.file}: /id ${quote(p.id)} is already used by ${other.file}`, p.file);
      if (compare(other.minFirmware, p.minFirmware) === 0) {
        throw configError(
          `${p.file}: /minFirmware ${quote(p.minFirmware)} equals that of ${other.file} (${other.id}): selection would be ambiguous; give one a higher minimum`,
          p.file,
        );
      }
    }
  });
}

/**
 * Loads every profile of `dir`, or the shipped ones when `dir` is '' or
 * undefined (Settings.profilesDir's default). A schema.json in a custom
 * directory is ignored: profiles are always checked against the agent's own.
 */
export function loadProfiles(dir?: string, source?: string): FirmwareProfile[] {
  let files: [string, string][];
  if (dir === undefined || dir === '') {
    files = Object.entries(builtinProfileFiles()).map(([name, text]) => [`${BUILTIN_LABEL}/${name}`, text]);
  } else {
    let names: string[];
    try {
      names = readdirSync(dir).filter((f) => f.endsWith('.json') && f !== SCHEMA_FILE).sort();
    } catch (err) {
      throw fsError(err, 'list the profiles directory', dir, source);
    }
    files = names.map((name) => {
      const file = path.join(dir, name);
      return [file, readBoundedTextSync(file, { what: 'firmware profile', maxBytes: READ_LIMITS.profile, ...(source !== undefined && { source }) })];
    });
  }
  if (files.length === 0) throw configError(`no firmware profiles (*.json) in ${dir === undefined || dir === '' ? BUILTIN_LABEL : dir}`, dir);
  const profiles = files.map(([file, text]) => parseProfile(text, file));
  checkSet(profiles);
  return profiles;
}

export function coversFirmware(p: FirmwareProfile, firmware: string): boolean {
  return gte(firmware, p.minFirmware) && (p.maxFirmware === undefined || lt(firmware, p.maxFirmware));
}

export function describeRange(p: FirmwareProfile): string {
  return p.maxFirmware === undefined ? `>=${p.minFirmware}` : `>=${p.minFirmware} <${p.maxFirmware}`;
}

/** The profile for `firmware`: highest minFirmware among those whose range holds it. */
export function selectProfile(profiles: FirmwareProfile[], firmware: string, firmwareSource = 'the firmware version'): FirmwareProfile {
  const candidates = profiles.filter((p) => coversFirmware(p, firmware));
  const best = candidates.reduce<FirmwareProfile | undefined>((a, p) => (a === undefined || compare(p.minFirmware, a.minFirmware) > 0 ? p : a), undefined);
  if (best === undefined) {
    const ranges = profiles.map((p) => `${p.id} ${describeRange(p)}`).join('; ');
    throw configError(`no firmware profile covers firmware ${quote(firmware)} (from ${firmwareSource}); profiles: ${ranges}`, firmwareSource);
  }
  return best;
}
