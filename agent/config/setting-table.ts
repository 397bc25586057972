// Every setting, once: its option, environment variable, config key, the
// word its value is shown as, its default and a line of help. Parsing
// (cli/args.ts), precedence and validation (settings.ts, setting-values.ts),
// `c2c-agent --help` and each command's (cli/command-help.ts), and the
// settings table in docs/configuration.md (checked against this by
// test/config/setting-table.test.ts) all come from here, so a new setting is
// one row here and its resolution in settings.ts.
//
// Plain data with no imports: `--help` loads it without the rest of config/.

export interface SettingRow {
  /** The command-line option; absent for a setting the command line does not take. */
  flag?: string;
  /** What the value is called in help: URL, FILE, DIR, N, SEMVER, ... */
  value?: string;
  /** The environment variable; absent when none. */
  env?: string;
  /** The key in the config file; absent when the file cannot set it. */
  configKey?: string;
  /** The JSON type a config value may have besides a string (read as its text). */
  configType?: 'number' | 'boolean';
  /**
   * A path (uploadRoots: several, separated by ':'): resolved against the
   * working directory, or the config file's directory for a config value;
   * one holding a NUL byte is refused (settings.ts), since no file has one.
   */
  isPath?: boolean;
  /** The default, as docs/configuration.md shows it (Markdown). */
  default: string;
  /** One line for --help. */
  help: string;
}

/** The settings the command line passes to loadSettings (settings.ts), keyed as Settings names them. */
export const SETTING_ROWS = {
  config: { flag: '--config', value: 'FILE', env: 'C2C_CONFIG', isPath: true, default: '`/etc/c2c-agent/config.json` (a missing default file is fine)', help: 'the config file (JSON)' },
  apiUrl: {
    flag: '--api-url',
    value: 'URL',
    env: 'C2C_API_URL',
    configKey: 'apiUrl',
    default: 'none: required by every command that talks to the service; `https://`, or `http://` on loopback only; a path prefix is fine, a query, fragment or user:password is refused',
    help: "the service's base URL",
  },
  caFile: {
    flag: '--ca-file',
    value: 'FILE',
    env: 'C2C_CA_FILE',
    configKey: 'caFile',
    isPath: true,
    default: "none: PEM certificates of CAs trusted besides the system's (a private deployment); `NODE_EXTRA_CA_CERTS` works too",
    help: "CA certificates (PEM) trusted besides the system's, for a private deployment",
  },
  tokenFile: { flag: '--token-file', value: 'FILE', env: 'C2C_TOKEN_FILE', configKey: 'tokenFile', isPath: true, default: '`<state-dir>/credentials.json`', help: 'where pairing keeps the tokens' },
  firmwareVersion: {
    flag: '--firmware-version',
    value: 'SEMVER',
    env: 'C2C_FIRMWARE_VERSION',
    configKey: 'firmwareVersion',
    default: 'from `firmwareVersionFile`, else `0.0.0`',
    help: 'the firmware version sent as x-client-version (strict semver)',
  },
  clientId: { flag: '--client-id', value: 'ID', env: 'C2C_CLIENT_ID', configKey: 'clientId', default: 'a UUID generated once, kept in the state dir', help: "this unit's OAuth client id" },
  clientSecretFile: {
    flag: '--client-secret-file',
    value: 'FILE',
    env: 'C2C_CLIENT_SECRET_FILE',
    configKey: 'clientSecretFile',
    isPath: true,
    default: 'none',
    help: 'the file holding the client secret (needed to pair, refresh and unpair)',
  },
  stateDir: { flag: '--state-dir', value: 'DIR', env: 'C2C_STATE_DIR', configKey: 'stateDir', isPath: true, default: '`$STATE_DIRECTORY`, else `/var/lib/c2c-agent`', help: 'durable state (credentials, queue)' },
  runtimeDir: { flag: '--runtime-dir', value: 'DIR', env: 'C2C_RUNTIME_DIR', configKey: 'runtimeDir', isPath: true, default: '`$RUNTIME_DIRECTORY`, else `/run/c2c-agent`', help: 'tmpfs state (status, lock)' },
  profilesDir: { flag: '--profiles-dir', value: 'DIR', env: 'C2C_PROFILES_DIR', configKey: 'profilesDir', isPath: true, default: 'the profiles built into the bundle', help: 'firmware profiles to use instead of the built-in ones' },
  hostRoot: { flag: '--host-root', value: 'DIR', env: 'C2C_HOST_ROOT', configKey: 'hostRoot', isPath: true, default: '`/`', help: 'where /dev, /proc and /sys are looked for (fake hardware trees)' },
  timeScale: { flag: '--time-scale', value: 'N', env: 'C2C_TIME_SCALE', default: '`1`; loopback API URLs only (simulator and tests)', help: 'agent seconds per real second (simulator and tests, loopback only)' },
  logLevel: { flag: '--log-level', value: 'LEVEL', env: 'C2C_LOG_LEVEL', configKey: 'logLevel', default: '`info`', help: 'trace, debug, info, warn, error, fatal or silent' },
  queueMaxBytes: {
    flag: '--queue-max-bytes',
    value: 'N',
    env: 'C2C_QUEUE_MAX_BYTES',
    configKey: 'queueMaxBytes',
    configType: 'number',
    default: "`4194304` (4 MiB): the outbox's cap on flash; at least 65536",
    help: "the outbox's cap on flash, bytes",
  },
  mediaDir: { flag: '--media-dir', value: 'DIR', env: 'C2C_MEDIA_DIR', configKey: 'mediaDir', isPath: true, default: 'none (no automatic uploads): where the camera writes finished clips', help: 'where the camera writes its clips' },
  uploadRoots: {
    flag: '--upload-roots',
    value: 'DIR:DIR',
    env: 'C2C_UPLOAD_ROOTS',
    configKey: 'uploadRoots',
    isPath: true,
    default: 'none: the local API queues files from the media dir only',
    help: 'folders besides the media dir the local API may queue files from (separated by :)',
  },
  mediaSettleSeconds: {
    flag: '--media-settle-seconds',
    value: 'N',
    env: 'C2C_MEDIA_SETTLE_SECONDS',
    configKey: 'mediaSettleSeconds',
    configType: 'number',
    default: '`10`: how long a clip must hold still before it is taken',
    help: 'how long a clip must hold still before it is taken',
  },
  deleteAfterUpload: {
    flag: '--delete-after-upload',
    value: 'true|false',
    env: 'C2C_DELETE_AFTER_UPLOAD',
    configKey: 'deleteAfterUpload',
    configType: 'boolean',
    default: '`false`: remove each clip once uploaded',
    help: 'remove each clip once uploaded',
  },
  realtimeUploads: {
    flag: '--realtime-uploads',
    value: 'true|false',
    env: 'C2C_REALTIME_UPLOADS',
    configKey: 'realtimeUploads',
    configType: 'boolean',
    default: "the firmware profile's `realtimeUploads`, else `false`: upload clips while the camera records them (docs/uploads.md, real-time uploads)",
    help: 'upload clips while the camera records them',
  },
  uploadWindowCron: {
    flag: '--upload-window-cron',
    value: 'EXPR',
    env: 'C2C_UPLOAD_WINDOW_CRON',
    configKey: 'uploadWindowCron',
    default: 'none: uploads only in a window starting at these times (with the next row)',
    help: 'uploads only in a window starting at these times (cron: minute hour day month weekday)',
  },
  uploadWindowMinutes: {
    flag: '--upload-window-minutes',
    value: 'N',
    env: 'C2C_UPLOAD_WINDOW_MINUTES',
    configKey: 'uploadWindowMinutes',
    configType: 'number',
    default: "none: the window's length, 1 to 1440",
    help: "the upload window's length in minutes",
  },
  webListen: {
    flag: '--web-listen',
    value: 'HOST:PORT',
    env: 'C2C_WEB_LISTEN',
    configKey: 'webListen',
    default: "none (off: no socket, no page code loaded): the camera's web page (docs/web-page.md) listens here, such as `0.0.0.0:8080`; `off` turns it off",
    help: "where the camera's web page listens (HOST:PORT, such as 0.0.0.0:8080); off unless set",
  },
  webCertFile: {
    flag: '--web-cert-file',
    value: 'FILE',
    env: 'C2C_WEB_CERT_FILE',
    configKey: 'webCertFile',
    isPath: true,
    default: 'none: plain HTTP; with `webKeyFile`, the web page is served over HTTPS with this certificate chain (PEM)',
    help: "the web page's certificate chain (PEM): HTTPS, with --web-key-file",
  },
  webKeyFile: {
    flag: '--web-key-file',
    value: 'FILE',
    env: 'C2C_WEB_KEY_FILE',
    configKey: 'webKeyFile',
    isPath: true,
    default: "none: the private key (PEM) of `webCertFile`'s certificate",
    help: "the web page's private key (PEM): HTTPS, with --web-cert-file",
  },
  startAdvice: {
    flag: '--start-advice',
    value: 'TEXT',
    env: 'C2C_START_ADVICE',
    configKey: 'startAdvice',
    default: 'start it with `sudo systemctl start c2c-agent`; the simulator sets its own',
    help: 'what advice says to do when the daemon is not running (the simulator sets its own)',
  },
} as const satisfies Record<string, SettingRow>;

/** Settings with no command-line option: docs/configuration.md lists them too. */
export const OTHER_SETTINGS: readonly SettingRow[] = [
  { env: 'C2C_TOKEN', default: 'an access token given directly (no refresh possible)', help: 'an access token given directly' },
  { configKey: 'firmwareVersionFile', isPath: true, default: 'a file whose first line is the firmware version', help: 'a file whose first line is the firmware version' },
];

export type SettingKey = keyof typeof SETTING_ROWS;

/** A value as found, with where it came from and what a relative path is relative to. */
export interface Found {
  value: string;
  source: string;
  baseDir: string;
}

const rowsInOrder = (): Array<[SettingKey, SettingRow]> => Object.entries(SETTING_ROWS) as Array<[SettingKey, SettingRow]>;

/** `--api-url URL`, for help and docs/configuration.md. */
export const optionText = (row: SettingRow): string => (row.flag === undefined ? '' : `${row.flag} ${row.value ?? 'VALUE'}`);

/** docs/configuration.md's settings table, as Markdown. */
export function settingsMarkdownTable(): string {
  const cell = (s: string | undefined, code = true): string => (s === undefined || s === '' ? '' : code ? `\`${s.replace(/\|/g, '\\|')}\`` : s);
  const lines = ['| option | environment | config key | default |', '|---|---|---|---|'];
  for (const [, r] of rowsInOrder()) lines.push(`| ${cell(optionText(r))} | ${cell(r.env)} | ${cell(r.configKey)} | ${r.default} |`);
  for (const r of OTHER_SETTINGS) lines.push(`| ${cell(optionText(r))} | ${cell(r.env)} | ${cell(r.configKey)} | ${r.default} |`);
  return lines.join('\n');
}
