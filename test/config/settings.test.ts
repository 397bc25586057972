import { describe, it, expect, afterAll } from '@jest/globals';
import path from 'node:path';
import { loadSettings, isLoopbackUrl, type SettingsOptions } from '../../agent/config/settings.js';
import { realtimeUploadsOn } from '../../agent/config/types.js';
import { OTHER_SETTINGS, SETTING_ROWS, type SettingRow } from '../../agent/config/setting-table.js';
import { scrub } from '../../agent/lib/secrets.js';
import { configFailure, tempDir } from './helpers.js';

const tmp = tempDir('c2c-settings-');
afterAll(() => tmp.cleanup());

const noConfig = path.join(tmp.dir, 'absent-default.json');
const configWith = (name: string, obj: Record<string, unknown>): string => tmp.write(name, JSON.stringify(obj));
// Every test names its config explicitly so the host's /etc/c2c-agent never leaks in.
const load = (opts: SettingsOptions, env: NodeJS.ProcessEnv = {}, requireApiUrl = true) =>
  loadSettings(opts, { C2C_CONFIG: env.C2C_CONFIG ?? configWith('empty.json', {}), ...env }, { requireApiUrl });
const fails = (opts: SettingsOptions, env: NodeJS.ProcessEnv = {}, requireApiUrl = true) => {
  const err = configFailure(() => load(opts, env, requireApiUrl));
  expect(err.exitCode).toBe(78);
  expect(err.message).not.toContain('\n');
  return err.message;
};

describe('precedence: option > environment > config > default', () => {
  const cfg = configWith('full.json', {
    apiUrl: 'https://config.example',
    logLevel: 'warn',
    stateDir: 'state-from-config',
    firmwareVersion: '3.0.0',
  });

  it('option wins over all', () => {
    const s = load({ apiUrl: 'https://option.example', logLevel: 'debug', firmwareVersion: '1.0.0', stateDir: '/opt/s' }, { C2C_CONFIG: cfg, C2C_API_URL: 'https://env.example', C2C_LOG_LEVEL: 'error', C2C_FIRMWARE_VERSION: '2.0.0', C2C_STATE_DIR: '/env/s' });
    expect([s.apiUrl, s.logLevel, s.firmwareVersion, s.stateDir]).toEqual(['https://option.example', 'debug', '1.0.0', '/opt/s']);
    expect(s.sources.apiUrl).toBe('--api-url');
    expect(s.sources.firmwareVersion).toBe('--firmware-version');
  });

  it('environment wins over config', () => {
    const s = load({}, { C2C_CONFIG: cfg, C2C_API_URL: 'https://env.example', C2C_LOG_LEVEL: 'error', C2C_FIRMWARE_VERSION: '2.0.0', C2C_STATE_DIR: '/env/s' });
    expect([s.apiUrl, s.logLevel, s.firmwareVersion, s.stateDir]).toEqual(['https://env.example', 'error', '2.0.0', '/env/s']);
    expect(s.sources.apiUrl).toBe('environment C2C_API_URL');
    expect(s.sources.configFile).toBe('environment C2C_CONFIG');
  });

  it('config wins over default, relative paths resolved against the config file', () => {
    const s = load({}, { C2C_CONFIG: cfg });
    expect([s.apiUrl, s.logLevel, s.firmwareVersion]).toEqual(['https://config.example', 'warn', '3.0.0']);
    expect(s.stateDir).toBe(path.join(tmp.dir, 'state-from-config'));
    expect(s.tokenFile).toBe(path.join(tmp.dir, 'state-from-config', 'credentials.json'));
    expect(s.sources.logLevel).toBe(`config ${cfg} key logLevel`);
  });

  it('defaults, with systemd directories taking the place of the fixed paths', () => {
    const s = load({ apiUrl: 'https://a.example' });
    expect(s).toMatchObject({ logLevel: 'info', firmwareVersion: '0.0.0', stateDir: '/var/lib/c2c-agent', runtimeDir: '/run/c2c-agent', hostRoot: '/', profilesDir: '', timeScale: 1 });
    expect(s.tokenFile).toBe('/var/lib/c2c-agent/credentials.json');
    expect(s.clientId).toBeUndefined();
    const sd = load({ apiUrl: 'https://a.example' }, { STATE_DIRECTORY: '/var/lib/x:/var/lib/y', RUNTIME_DIRECTORY: '/run/x' });
    expect([sd.stateDir, sd.runtimeDir, sd.sources.stateDir]).toEqual(['/var/lib/x', '/run/x', 'environment STATE_DIRECTORY']);
  });

  it('a missing default config file is fine, empty env vars count as unset', () => {
    const s = loadSettings({ apiUrl: 'https://a.example' }, { C2C_CONFIG: '', C2C_LOG_LEVEL: '' }, {});
    expect(s.configFile).toBe('/etc/c2c-agent/config.json');
    expect(s.logLevel).toBe('info');
  });

  it('C2C_TOKEN is kept and registered as a secret', () => {
    const s = load({ apiUrl: 'https://a.example' }, { C2C_TOKEN: 'tok-abcdef-123456' });
    expect(s.token).toBe('tok-abcdef-123456');
    expect(s.sources.token).toBe('environment C2C_TOKEN');
    expect(scrub('Bearer tok-abcdef-123456')).toBe('Bearer [redacted]');
  });

  it('firmwareVersionFile is read when no other source gives a version', () => {
    tmp.write('fw', '1.4.2\n');
    const s = load({}, { C2C_CONFIG: configWith('fwfile.json', { apiUrl: 'https://a.example', firmwareVersionFile: 'fw' }) });
    expect(s.firmwareVersion).toBe('1.4.2');
    expect(s.sources.firmwareVersion).toBe(`${path.join(tmp.dir, 'fw')} (firmwareVersionFile)`);
    // Any other source wins over the file, and the file is then not read at all.
    const both = configWith('fwboth.json', { apiUrl: 'https://a.example', firmwareVersion: '3.0.0', firmwareVersionFile: 'missing-fw' });
    expect(load({}, { C2C_CONFIG: both }).firmwareVersion).toBe('3.0.0');
    expect(load({}, { C2C_CONFIG: both, C2C_FIRMWARE_VERSION: '2.0.0' }).firmwareVersion).toBe('2.0.0');
  });

  it('queue size: default, from each source, and refused below the minimum or when not a whole number', () => {
    expect(load({ apiUrl: 'https://a.example' }).queueMaxBytes).toBe(4 * 1024 * 1024);
    expect(load({ apiUrl: 'https://a.example', queueMaxBytes: '1048576' }).queueMaxBytes).toBe(1048576);
    expect(load({ apiUrl: 'https://a.example' }, { C2C_QUEUE_MAX_BYTES: '200000' }).queueMaxBytes).toBe(200000);
    expect(fails({ apiUrl: 'https://a.example', queueMaxBytes: '1000' })).toContain("queue size '1000' from --queue-max-bytes must be a whole number of bytes, at least 65536");
    expect(fails({ apiUrl: 'https://a.example' }, { C2C_QUEUE_MAX_BYTES: '4MB' })).toContain('from environment C2C_QUEUE_MAX_BYTES');
  });

  it('realtimeUploads: unset unless given (the profile decides then), from each source, a bad value named', () => {
    const dflt = load({ apiUrl: 'https://a.example' });
    expect(dflt.realtimeUploads).toBeUndefined();
    expect([realtimeUploadsOn(dflt, {}), realtimeUploadsOn(dflt, { realtimeUploads: true })]).toEqual([false, true]);
    const off = load({ apiUrl: 'https://a.example', realtimeUploads: 'false' });
    expect([off.realtimeUploads, realtimeUploadsOn(off, { realtimeUploads: true })]).toEqual([false, false]);
    expect(load({ apiUrl: 'https://a.example' }, { C2C_REALTIME_UPLOADS: 'true' }).realtimeUploads).toBe(true);
    expect(load({}, { C2C_CONFIG: configWith('rt.json', { apiUrl: 'https://a.example', realtimeUploads: true }) }).realtimeUploads).toBe(true);
    expect(fails({ apiUrl: 'https://a.example' }, { C2C_REALTIME_UPLOADS: 'on' })).toContain("realtimeUploads 'on' from environment C2C_REALTIME_UPLOADS must be true or false");
  });

  it('media and upload settings: defaults, JSON numbers and booleans in the config file, bad values named', () => {
    const dflt = load({ apiUrl: 'https://a.example' });
    expect([dflt.mediaDir, dflt.mediaSettleSeconds, dflt.deleteAfterUpload, dflt.uploadWindow]).toEqual([undefined, 10, false, undefined]);
    const f = configWith('media.json', { apiUrl: 'https://a.example', mediaDir: 'clips', mediaSettleSeconds: 3, deleteAfterUpload: true, uploadWindowCron: '0 22 * * *', uploadWindowMinutes: 240 });
    const s = load({}, { C2C_CONFIG: f });
    expect([s.mediaDir, s.mediaSettleSeconds, s.deleteAfterUpload]).toEqual([path.join(tmp.dir, 'clips'), 3, true]);
    expect(s.uploadWindow).toEqual({ cron: '0 22 * * *', minutes: 240, source: `config ${f} key uploadWindowCron` });
    expect(fails({ apiUrl: 'https://a.example', deleteAfterUpload: 'yes' })).toContain("deleteAfterUpload 'yes' from --delete-after-upload must be true or false");
    expect(fails({ apiUrl: 'https://a.example', mediaSettleSeconds: '-1' })).toContain('from --media-settle-seconds must be a number of seconds from 0 to 3600');
    expect(fails({ apiUrl: 'https://a.example', uploadWindowCron: '0 22 * * *' })).toContain('needs both uploadWindowCron and uploadWindowMinutes');
    expect(fails({ apiUrl: 'https://a.example', uploadWindowCron: '0 22 * * *', uploadWindowMinutes: '0' })).toContain('must be whole minutes from 1 to 1440');
    // node-cron's parser, at load, for every command alike.
    expect(fails({ apiUrl: 'https://a.example', uploadWindowCron: '61 * * * *', uploadWindowMinutes: '30' })).toContain("upload window '61 * * * *' from --upload-window-cron is not a cron expression");
  });

  it('time scale from option or env, on loopback', () => {
    expect(load({ apiUrl: 'http://127.0.0.1:8080', timeScale: '60' }).timeScale).toBe(60);
    expect(load({ apiUrl: 'http://localhost:1' }, { C2C_TIME_SCALE: '0.5' }).timeScale).toBe(0.5);
  });

  it('apiUrl is optional for commands that do not talk to the service', () => {
    const s = load({ timeScale: '10' }, {}, false);
    expect(s.apiUrl).toBe('');
    expect(s.timeScale).toBe(10);
  });
});

describe('config errors: exit 78, one line naming the setting and its source', () => {
  it('unknown key', () => {
    const f = configWith('unknown.json', { apiURL: 'https://a.example' });
    expect(fails({}, { C2C_CONFIG: f })).toContain(`config ${f}: unknown key 'apiURL'`);
  });

  it('an unknown key near a known one names it instead of listing every key; one near none lists them', () => {
    const near = configWith('near.json', { apiurl: 'https://a.example' });
    expect(fails({}, { C2C_CONFIG: near })).toBe(`config ${near}: unknown key 'apiurl' (did you mean apiUrl?)`);
    const media = configWith('media.json', { apiUrl: 'https://a.example', mediaDri: '/srv/media' });
    expect(fails({}, { C2C_CONFIG: media })).toBe(`config ${media}: unknown key 'mediaDri' (did you mean mediaDir?)`);
    const far = configWith('far.json', { colour: 'blue' });
    expect(fails({}, { C2C_CONFIG: far })).toMatch(/unknown key 'colour' \(known keys: apiUrl, /);
  });

  it('a syntax error is placed by line and column, as an editor shows it', () => {
    const f = tmp.write('syntax.json', '{\n  "apiUrl": "https://a.example",\n  "mediaDir" "/srv/media"\n}\n');
    expect(fails({}, { C2C_CONFIG: f })).toMatch(new RegExp(`^config file ${f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not valid JSON: line 3, column 14: `));
    expect(fails({}, { C2C_CONFIG: f })).not.toContain('position');
  });

  it('wrong type', () => {
    const f = configWith('type.json', { apiUrl: 'https://a.example', logLevel: 3 });
    expect(fails({}, { C2C_CONFIG: f })).toBe(`config ${f} key 'logLevel' must be a string, got number`);
  });

  it('invalid JSON and non-object JSON', () => {
    const f = tmp.write('bad.json', '{"apiUrl": ');
    expect(fails({}, { C2C_CONFIG: f })).toContain(`config file ${f} is not valid JSON`);
    const arr = tmp.write('arr.json', '[]');
    expect(fails({}, { C2C_CONFIG: arr })).toContain(`config file ${arr} must hold a JSON object`);
  });

  it('missing explicitly named config file, by option or environment', () => {
    expect(fails({ config: noConfig })).toBe(`cannot read the config file '${noConfig}' (from --config): does not exist (ENOENT); check the path (or create it)`);
    expect(fails({}, { C2C_CONFIG: noConfig })).toBe(`cannot read the config file '${noConfig}' (from environment C2C_CONFIG): does not exist (ENOENT); check the path (or create it)`);
  });

  it('missing apiUrl', () => {
    expect(fails({})).toMatch(/^no API URL: set --api-url, environment C2C_API_URL, or key apiUrl in config /);
  });

  it('http:// on a non-loopback host, from each source', () => {
    expect(fails({ apiUrl: 'http://api.example' })).toBe("API URL 'http://api.example' from --api-url is refused: http:// is allowed only for loopback hosts (127.0.0.0/8, ::1, localhost)");
    expect(fails({}, { C2C_API_URL: 'http://10.0.0.1' })).toContain('from environment C2C_API_URL is refused');
    const f = configWith('http.json', { apiUrl: 'http://128.0.0.1' });
    expect(fails({}, { C2C_CONFIG: f })).toContain(`from config ${f} key apiUrl is refused`);
    expect(fails({ apiUrl: 'ftp://127.0.0.1' })).toContain('must start with https://');
    expect(fails({ apiUrl: 'not a url' })).toBe("API URL 'not a url' from --api-url is not a valid URL");
  });

  it('a query or fragment in the API URL is refused, naming the source (got would append the path after it)', () => {
    expect(fails({ apiUrl: 'https://api.example/?a=b' })).toBe(
      "API URL 'https://api.example/?a=b' from --api-url is refused: it must not carry a query (?) or fragment (#); a path prefix like https://host/api is fine",
    );
    expect(fails({}, { C2C_API_URL: 'https://api.example/api#x' })).toContain('from environment C2C_API_URL is refused: it must not carry a query');
    const f = configWith('query.json', { apiUrl: 'http://127.0.0.1:8080?' });
    expect(fails({}, { C2C_CONFIG: f })).toContain(`from config ${f} key apiUrl is refused: it must not carry a query`);
  });

  it('a path prefix is kept and trailing slashes are normalised away', () => {
    expect(load({ apiUrl: 'https://api.example/api/' }).apiUrl).toBe('https://api.example/api');
    expect(load({ apiUrl: 'https://api.example/api//' }).apiUrl).toBe('https://api.example/api');
    expect(load({ apiUrl: 'https://api.example/api' }).apiUrl).toBe('https://api.example/api');
    expect(load({ apiUrl: 'https://api.example/' }).apiUrl).toBe('https://api.example');
    expect(load({ apiUrl: 'http://127.0.0.1:8080/' }).apiUrl).toBe('http://127.0.0.1:8080');
  });

  it('never echoes credentials embedded in the URL', () => {
    const msg = fails({ apiUrl: 'https://user:hunter2secret@api.example' });
    expect(msg).toBe('API URL from --api-url must not carry user:password credentials');
  });

  it('loopback hosts are exactly 127.0.0.0/8, ::1 and localhost', () => {
    for (const u of ['http://127.0.0.1', 'http://127.255.3.4:9', 'http://[::1]:80', 'http://LOCALHOST']) expect(isLoopbackUrl(new URL(u))).toBe(true);
    for (const u of ['http://128.0.0.1', 'http://127.0.0.1.example', 'http://[::2]', 'http://localhost.example']) expect(isLoopbackUrl(new URL(u))).toBe(false);
  });

  it('time scale with a non-loopback API URL', () => {
    expect(fails({ apiUrl: 'https://api.example', timeScale: '60' })).toBe(
      "time scale from --time-scale is for the simulator and tests only: refused because the API URL 'https://api.example' (--api-url) is not loopback",
    );
  });

  it.each(['0', '-2', 'abc', 'Infinity', '1x', 'NaN'])('time scale %p is not a positive number', (v) => {
    expect(fails({ apiUrl: 'http://127.0.0.1' }, { C2C_TIME_SCALE: v })).toContain('from environment C2C_TIME_SCALE must be a positive number');
  });

  it('bad log level', () => {
    expect(fails({ apiUrl: 'https://a.example', logLevel: 'verbose' })).toBe("log level 'verbose' from --log-level is not one of trace, debug, info, warn, error, fatal, silent");
  });

  it('bad firmware version names its source', () => {
    const f = configWith('fw.json', { apiUrl: 'https://a.example', firmwareVersion: 'v1.2' });
    expect(fails({}, { C2C_CONFIG: f })).toBe(`firmware version 'v1.2' from config ${f} key firmwareVersion is not strict semver (expected MAJOR.MINOR.PATCH, e.g. 1.4.2)`);
    expect(fails({ apiUrl: 'https://a.example', firmwareVersion: '1.2' })).toContain("'1.2' from --firmware-version");
  });

  it('an empty option or config value', () => {
    expect(fails({ apiUrl: '' })).toBe('apiUrl from --api-url must not be empty');
  });
});

// Issue 27: a runtime dir holding a NUL byte (from the config file) ended `run`
// with exit 1, node refusing the path deep inside. Every path setting, from
// every source that can carry one (environment variables cannot), is 78 at load.
describe('a NUL byte in any path setting: exit 78, naming the setting and its source', () => {
  const pathRows = [...Object.entries(SETTING_ROWS), ...OTHER_SETTINGS.map((r) => [r.configKey ?? r.env ?? '', r] as const)].filter(([, r]) => (r as SettingRow).isPath === true) as Array<[string, SettingRow]>;

  it('the path kind covers every setting whose value is a file or a folder', () => {
    expect(pathRows.map(([k]) => k).sort()).toEqual(['caFile', 'clientSecretFile', 'config', 'firmwareVersionFile', 'hostRoot', 'mediaDir', 'profilesDir', 'runtimeDir', 'stateDir', 'tokenFile', 'uploadRoots', 'webCertFile', 'webKeyFile']);
    const fileOrDir = [...(Object.values(SETTING_ROWS) as SettingRow[]), ...OTHER_SETTINGS].filter((r: SettingRow) => /^(FILE|DIR)(:DIR)?$/.test(r.value ?? '') || /(File|Dir)$/.test(r.configKey ?? ''));
    for (const r of fileOrDir) expect({ row: r.flag ?? r.configKey, isPath: r.isPath }).toEqual({ row: r.flag ?? r.configKey, isPath: true });
  });

  for (const [key, row] of pathRows) {
    const bad = `/var/lib/c2c\u0000-${key}/x`;
    if (row.flag !== undefined) {
      it(`${key} from ${row.flag}`, () => {
        const m = fails({ apiUrl: 'https://a.example', [key]: bad } as SettingsOptions);
        expect(m).toBe(`${key} '/var/lib/c2c\\u0000-${key}/x' from ${row.flag} holds a NUL byte (shown as \\u0000), which no path can: fix the value`);
      });
    }
    // No process can be given one in its environment; loadSettings is still told which variable it was.
    if (row.env !== undefined) {
      it(`${key} from ${row.env}`, () => {
        expect(fails({ apiUrl: 'https://a.example' }, { [row.env as string]: bad })).toContain(`from environment ${row.env as string} holds a NUL byte`);
      });
    }
    if (row.configKey !== undefined) {
      it(`${key} from the config file`, () => {
        const f = configWith(`nul-${key}.json`, { apiUrl: 'https://a.example', [row.configKey as string]: bad });
        const m = fails({}, { C2C_CONFIG: f });
        expect(m).toContain(`${key} '/var/lib/c2c\\u0000-${key}/x' from config ${f} key ${row.configKey as string} holds a NUL byte`);
      });
    }
  }

  it('in one of several upload roots, and deep in a long path (shown with its end)', () => {
    expect(fails({ apiUrl: 'https://a.example', uploadRoots: '/srv/a:/srv/b\u0000' })).toContain("uploadRoots '/srv/a:/srv/b\\u0000' from --upload-roots holds a NUL byte");
    const long = `/${'d/'.repeat(200)}tail\u0000.d`;
    expect(fails({ apiUrl: 'https://a.example', runtimeDir: long })).toMatch(/^runtimeDir '\/d\/d\/.*tail\\u0000\.d' \(\d+ chars\) from --runtime-dir holds a NUL byte/);
  });
});
