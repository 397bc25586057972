// Settings: command-line option > environment > config file > default
// (docs/configuration.md). Everything is validated here, on load, so a bad
// value stops the agent with exit 78 and one line naming the setting, the
// value (unless secret) and where it came from.
import path from 'node:path';
import { isMissing, READ_LIMITS, readBoundedTextSync } from '../lib/bounded-read.js';
import { configError } from '../lib/errors.js';
import { registerSecret } from '../lib/secrets.js';
import { START_ADVICE } from '../lib/advice.js';
import { assertStrictSemver, DEFAULT_FIRMWARE_VERSION, readFirmwareVersionFile } from './firmware.js';
import { jsonErrorWhere, oneLine, quote, quotePath } from '../lib/text.js';
import { nearMiss } from '../lib/near-miss.js';
import type { Settings } from './types.js';
import { readCaFile } from '../lib/ca-file.js';
import { resolveBoolean, resolveQueueMax, resolveSettle, resolveWeb, resolveWindow } from './setting-values.js';
import { OTHER_SETTINGS, SETTING_ROWS, type Found, type SettingKey, type SettingRow } from './setting-table.js';

export { DEFAULT_MEDIA_SETTLE_SECONDS, DEFAULT_QUEUE_MAX_BYTES } from './setting-values.js';

/** Values from the command line, already split by the CLI's shared parser. */
export type SettingsOptions = Partial<Record<SettingKey, string>>;

export interface LoadSettingsOptions {
  /** Commands that talk to the service need apiUrl; `profiles` and `status` do not (apiUrl is then ''). */
  requireApiUrl?: boolean;
  /** Override how an option is named in messages, e.g. { firmwareVersion: '--firmware' }. */
  optionLabels?: Partial<Record<keyof SettingsOptions, string>>;
}

export const DEFAULT_CONFIG_FILE = '/etc/c2c-agent/config.json';
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

type Key = Exclude<SettingKey, 'config'>;
const TABLE: Record<Key, SettingRow> = SETTING_ROWS;

/** Command-line flag for each settings option, for the CLI's shared parser. */
export const SETTINGS_FLAGS = Object.fromEntries(Object.entries(SETTING_ROWS).map(([k, v]) => [k, v.flag])) as Record<SettingKey, string>;

const CONFIG_KEYS = new Set<string>([...Object.values(TABLE), ...OTHER_SETTINGS].flatMap((t) => (t.configKey ? [t.configKey] : [])));
/** Config keys whose JSON value may be a number or a boolean rather than a string (read as their text). */
const NON_STRING_KEYS: Record<string, 'number' | 'boolean'> = Object.fromEntries(
  Object.values(TABLE).flatMap((t) => (t.configKey !== undefined && t.configType !== undefined ? [[t.configKey, t.configType]] : [])),
);

const FIRMWARE_FILE_ROW = OTHER_SETTINGS.find((r) => r.configKey === 'firmwareVersionFile') as SettingRow;

/**
 * What every path setting (the table's `isPath`) must be, wherever it came
 * from. A NUL byte ends a path for the kernel, so node refuses one outright,
 * and the first file call to meet it would fail as a bug (exit 1) far from
 * the setting; it is the setting that is wrong (78). Environment variables
 * cannot carry one: the config file and the options can.
 */
function checkPath(row: SettingRow, name: string, value: string, source: string): void {
  if (row.isPath !== true || !value.includes('\0')) return;
  throw configError(`${name} ${quotePath(value)} from ${source} holds a NUL byte (shown as \\u0000), which no path can: fix the value`, source);
}

/** True for 127.0.0.0/8, ::1 and localhost: the only hosts allowed over http:// and with --time-scale. */
export function isLoopbackUrl(url: URL): boolean {
  const host = url.hostname.toLowerCase();
  if (host === 'localhost' || host === '[::1]') return true;
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  return m !== null && m[1] === '127' && m.slice(2).every((o) => Number(o) <= 255);
}

function readConfig(file: string, explicit: boolean, source: string): Record<string, unknown> {
  let text: string;
  try {
    text = readBoundedTextSync(file, { what: 'config file', maxBytes: READ_LIMITS.config, source });
  } catch (err) {
    // The default file is optional: an unconfigured unit runs on env and options.
    if (!explicit && isMissing(err)) return {};
    throw err;
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw configError(`config file ${file} is not valid JSON: ${jsonErrorWhere(text, err)}`, file);
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw configError(`config file ${file} must hold a JSON object`, file);
  }
  const obj = data as Record<string, unknown>;
  for (const [key, value] of Object.entries(obj)) {
    if (!CONFIG_KEYS.has(key)) {
      const near = nearMiss(key, CONFIG_KEYS);
      throw configError(`config ${file}: unknown key ${quote(key)} (${near === undefined ? `known keys: ${[...CONFIG_KEYS].join(', ')}` : `did you mean ${near}?`})`, file);
    }
    const other = NON_STRING_KEYS[key];
    if (other !== undefined && typeof value === other) {
      obj[key] = String(value);
      continue;
    }
    if (typeof value !== 'string') {
      const got = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
      throw configError(`config ${file} key ${quote(key)} must be a string, got ${got}`, file);
    }
  }
  return obj;
}

export function loadSettings(opts: SettingsOptions, env: NodeJS.ProcessEnv = process.env, load: LoadSettingsOptions = {}): Settings {
  const cwd = process.cwd();
  const label = (k: keyof SettingsOptions): string => load.optionLabels?.[k] ?? SETTINGS_FLAGS[k];
  // An empty environment variable counts as unset (systemd `Environment=X=` clears it).
  const envValue = (name: string | undefined): string | undefined => (name === undefined || env[name] === undefined || env[name] === '' ? undefined : env[name]);

  const configFromOption = opts.config !== undefined;
  const configFromEnv = !configFromOption && envValue('C2C_CONFIG') !== undefined;
  const configGiven = opts.config ?? envValue('C2C_CONFIG');
  const configSource = configFromOption ? label('config') : configFromEnv ? 'environment C2C_CONFIG' : 'default';
  if (opts.config === '') throw configError(`${label('config')} must not be empty`, label('config'));
  if (configGiven !== undefined) checkPath(SETTING_ROWS.config, 'config', configGiven, configSource);
  const configFile = path.resolve(cwd, configGiven ?? DEFAULT_CONFIG_FILE);
  const config = readConfig(configFile, configFromOption || configFromEnv, configSource);
  const configDir = path.dirname(configFile);

  const find = (k: Key): Found | undefined => {
    const t = TABLE[k];
    const fromOption = opts[k];
    let found: Found | undefined;
    if (fromOption !== undefined) found = { value: fromOption, source: label(k), baseDir: cwd };
    else if (envValue(t.env) !== undefined) found = { value: envValue(t.env) as string, source: `environment ${t.env}`, baseDir: cwd };
    else if (t.configKey !== undefined && config[t.configKey] !== undefined) {
      // Relative paths in the config file are relative to the file, not to wherever the agent was started.
      found = { value: config[t.configKey] as string, source: `config ${configFile} key ${t.configKey}`, baseDir: configDir };
    }
    if (found !== undefined && found.value === '') throw configError(`${k} from ${found.source} must not be empty`, found.source);
    if (found !== undefined) checkPath(t, k, found.value, found.source);
    return found;
  };

  const sources: Record<string, string> = { configFile: configSource };
  const pathSetting = (k: Key, fallback: () => { value: string; source: string }): string => {
    const f = find(k);
    if (f === undefined) {
      const d = fallback();
      sources[k] = d.source;
      return d.value;
    }
    sources[k] = f.source;
    return path.resolve(f.baseDir, f.value);
  };

  const fromSystemd = (name: string, dflt: string) => (): { value: string; source: string } => {
    // systemd's StateDirectory=/RuntimeDirectory= may list several paths separated by ':'; the first is ours.
    const v = envValue(name)?.split(':')[0];
    return v ? { value: path.resolve(cwd, v), source: `environment ${name}` } : { value: dflt, source: 'default' };
  };

  const stateDir = pathSetting('stateDir', fromSystemd('STATE_DIRECTORY', '/var/lib/c2c-agent'));
  const runtimeDir = pathSetting('runtimeDir', fromSystemd('RUNTIME_DIRECTORY', '/run/c2c-agent'));
  const tokenFile = pathSetting('tokenFile', () => ({ value: path.join(stateDir, 'credentials.json'), source: `<state-dir>/credentials.json, the state dir from ${sources.stateDir ?? 'default'}` }));
  // '' means "the profiles shipped with the agent" (see profiles.ts).
  const profilesDir = pathSetting('profilesDir', () => ({ value: '', source: 'default (shipped profiles)' }));
  const hostRoot = pathSetting('hostRoot', () => ({ value: '/', source: 'default' }));

  let caFile: string | undefined;
  if (find('caFile') !== undefined) caFile = pathSetting('caFile', () => ({ value: '', source: 'default' }));

  let clientSecretFile: string | undefined;
  if (find('clientSecretFile') !== undefined) clientSecretFile = pathSetting('clientSecretFile', () => ({ value: '', source: 'default' }));

  const clientIdFound = find('clientId');
  if (clientIdFound !== undefined) sources.clientId = clientIdFound.source;

  const logFound = find('logLevel');
  const logLevel = logFound?.value ?? 'info';
  sources.logLevel = logFound?.source ?? 'default';
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw configError(`log level ${quote(logLevel)} from ${sources.logLevel} is not one of ${LOG_LEVELS.join(', ')}`, sources.logLevel);
  }

  const queueMaxBytes = resolveQueueMax(find('queueMaxBytes'), sources);
  const mediaFound = find('mediaDir');
  const mediaDir = mediaFound === undefined ? undefined : pathSetting('mediaDir', () => ({ value: '', source: 'default' }));
  const rootsFound = find('uploadRoots');
  if (rootsFound !== undefined) sources.uploadRoots = rootsFound.source;
  const uploadRoots = rootsFound === undefined ? [] : rootsFound.value.split(':').filter((d) => d !== '').map((d) => path.resolve(rootsFound.baseDir, d));
  const mediaSettleSeconds = resolveSettle(find('mediaSettleSeconds'), sources);
  const deleteAfterUpload = resolveBoolean(find('deleteAfterUpload'), 'deleteAfterUpload', sources);
  // Unset stays unset: the firmware profile may then turn it on (realtimeUploadsOn).
  const realtimeFound = find('realtimeUploads');
  const realtimeUploads = realtimeFound === undefined ? undefined : resolveBoolean(realtimeFound, 'realtimeUploads', sources);
  if (realtimeFound === undefined) sources.realtimeUploads = "the firmware profile's realtimeUploads, else default";
  const uploadWindow = resolveWindow(find('uploadWindowCron'), find('uploadWindowMinutes'), sources);
  const pathFound = (k: 'webCertFile' | 'webKeyFile'): { found: Found; path: string } | undefined => {
    const f = find(k);
    return f === undefined ? undefined : { found: f, path: path.resolve(f.baseDir, f.value) };
  };
  const web = resolveWeb(find('webListen'), { cert: pathFound('webCertFile'), key: pathFound('webKeyFile') }, sources);
  const apiUrl = resolveApiUrl(find('apiUrl'), configFile, load.requireApiUrl ?? true, sources);
  const timeScale = resolveTimeScale(find('timeScale'), apiUrl, sources);

  // Firmware version: the usual order, then the config's firmwareVersionFile, then 0.0.0.
  const fwFound = find('firmwareVersion');
  const fwGiven = config.firmwareVersionFile as string | undefined;
  if (fwGiven !== undefined) checkPath(FIRMWARE_FILE_ROW, 'firmwareVersionFile', fwGiven, `config ${configFile} key firmwareVersionFile`);
  const fwFile = fwGiven === undefined ? undefined : path.resolve(configDir, fwGiven);
  const fw =
    fwFound !== undefined
      ? { value: assertStrictSemver(fwFound.value, fwFound.source), source: fwFound.source }
      : fwFile !== undefined
        ? { value: readFirmwareVersionFile(fwFile, `config ${configFile} key firmwareVersionFile`), source: `${fwFile} (firmwareVersionFile)` }
        : { value: DEFAULT_FIRMWARE_VERSION, source: 'default' };
  sources.firmwareVersion = fw.source;

  const startFound = find('startAdvice');
  sources.startAdvice = startFound?.source ?? 'default';
  // Words put into messages: one line, bounded.
  const startAdvice = startFound === undefined ? START_ADVICE : oneLine(startFound.value, 200);

  const settings: Settings = {
    configFile,
    startAdvice,
    apiUrl,
    tokenFile,
    firmwareVersion: fw.value,
    stateDir,
    runtimeDir,
    profilesDir,
    hostRoot,
    timeScale,
    logLevel,
    queueMaxBytes,
    mediaSettleSeconds,
    deleteAfterUpload,
    sources,
  };
  if (mediaDir !== undefined) settings.mediaDir = mediaDir;
  if (realtimeUploads !== undefined) settings.realtimeUploads = realtimeUploads;
  if (uploadRoots.length > 0) settings.uploadRoots = uploadRoots;
  if (uploadWindow !== undefined) settings.uploadWindow = uploadWindow;
  if (web !== undefined) settings.web = web;
  if (clientIdFound !== undefined) settings.clientId = clientIdFound.value;
  if (clientSecretFile !== undefined) settings.clientSecretFile = clientSecretFile;
  // Not a setting: where systemd put the unit's credentials (auth/credentials-systemd.ts reads them).
  const credentialsDir = envValue('CREDENTIALS_DIRECTORY');
  if (credentialsDir !== undefined) {
    settings.credentialsDir = path.resolve(cwd, credentialsDir);
    sources.credentialsDir = 'environment CREDENTIALS_DIRECTORY';
  }
  if (caFile !== undefined) settings.extraCas = readCaFile(caFile, sources.caFile ?? 'caFile');
  const token = envValue('C2C_TOKEN');
  if (token !== undefined) {
    registerSecret(token);
    settings.token = token;
    sources.token = 'environment C2C_TOKEN';
  }
  return settings;
}

function resolveApiUrl(found: Found | undefined, configFile: string, required: boolean, sources: Record<string, string>): string {
  if (found === undefined) {
    if (required) throw configError(`no API URL: set --api-url, environment C2C_API_URL, or key apiUrl in config ${configFile}`, 'apiUrl');
    sources.apiUrl = 'unset';
    return '';
  }
  sources.apiUrl = found.source;
  let url: URL;
  try {
    url = new URL(found.value);
  } catch {
    throw configError(`API URL ${quote(found.value)} from ${found.source} is not a valid URL`, found.source);
  }
  if (url.username !== '' || url.password !== '') {
    // Never echo it: it carries credentials.
    registerSecret(url.password);
    throw configError(`API URL from ${found.source} must not carry user:password credentials`, found.source);
  }
  // got's prefixUrl is joined as text: 'https://h/?a=b' would request
  // '/?a=b/v2/devices/me'. Only a path prefix (https://host/api) means anything.
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(found.value)) {
    throw configError(`API URL ${quote(found.value)} from ${found.source} is refused: it must not carry a query (?) or fragment (#); a path prefix like https://host/api is fine`, found.source);
  }
  // One form for every spelling ('https://h/api/', 'https://h/api//'), so the joined paths never hold '//'.
  const normalised = `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  if (url.protocol === 'https:') return normalised;
  if (url.protocol === 'http:' && isLoopbackUrl(url)) return normalised;
  const why = url.protocol === 'http:' ? 'http:// is allowed only for loopback hosts (127.0.0.0/8, ::1, localhost)' : 'it must start with https://';
  throw configError(`API URL ${quote(found.value)} from ${found.source} is refused: ${why}`, found.source);
}

function resolveTimeScale(found: Found | undefined, apiUrl: string, sources: Record<string, string>): number {
  if (found === undefined) {
    sources.timeScale = 'default';
    return 1;
  }
  sources.timeScale = found.source;
  const n = /^\s*[0-9.eE+-]+\s*$/.test(found.value) ? Number(found.value) : NaN;
  if (!Number.isFinite(n) || n <= 0) {
    throw configError(`time scale ${quote(found.value)} from ${found.source} must be a positive number`, found.source);
  }
  // Speeding time up against the real service would hammer it; only the simulator and tests may.
  // Without an API URL (commands that never talk to the network) there is nothing to protect.
  if (apiUrl !== '' && !isLoopbackUrl(new URL(apiUrl))) {
    throw configError(
      `time scale from ${found.source} is for the simulator and tests only: refused because the API URL ${quote(apiUrl)} (${sources.apiUrl}) is not loopback`,
      found.source,
    );
  }
  return n;
}
