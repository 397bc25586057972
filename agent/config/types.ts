// The resolved settings (docs/configuration.md) and firmware profiles.
// Every value remembers where it came from so errors can name the source.

import type { ExtraCas } from '../lib/ca-file.js';

export type SettingSource = 'option' | 'environment' | 'config' | 'default' | 'file';

export interface Settings {
  configFile: string;
  /** '' only when loaded with requireApiUrl: false (profiles, status) and none was set. */
  apiUrl: string;
  tokenFile: string;
  /** The caFile setting's certificates, read and checked at load: trusted besides the system's CAs. */
  extraCas?: ExtraCas;
  /** From C2C_TOKEN: an access token given directly, no refresh possible. */
  token?: string;
  firmwareVersion: string;
  clientId?: string;
  clientSecretFile?: string;
  /** systemd's $CREDENTIALS_DIRECTORY (LoadCredentialEncrypted=): client-secret and token-key (auth/credentials-systemd.ts). */
  credentialsDir?: string;
  stateDir: string;
  runtimeDir: string;
  /** '' means the profiles shipped with the agent: pass it to loadProfiles() as is. */
  profilesDir: string;
  hostRoot: string;
  timeScale: number;
  logLevel: string;
  /** The outbox's cap on flash, bytes. */
  queueMaxBytes: number;
  /** Where the camera writes finished clips; undefined: no automatic uploads. */
  mediaDir?: string;
  /** Folders besides the media dir that files queued through the local API may come from (resolved, absolute). */
  uploadRoots?: string[];
  /** A clip is taken once unchanged this long (agent seconds). */
  mediaSettleSeconds: number;
  /** Remove each clip once its upload completed. */
  deleteAfterUpload: boolean;
  /** Upload clips while they are recorded; undefined when no option, variable or config key set it (the profile decides then). */
  realtimeUploads?: boolean;
  /** Uploads run only inside this window (cron start, length in minutes), once the wall clock is known good. */
  uploadWindow?: { cron: string; minutes: number; source: string };
  /** The camera's web page (agent/web/, docs/web-page.md): where it listens; undefined: off, nothing of it loaded. */
  web?: WebSettings;
  /** What advice says to do when the daemon is not running (lib/advice.ts START_ADVICE unless set). */
  startAdvice: string;
  /** Where each setting came from, e.g. sources.apiUrl = 'environment C2C_API_URL'. */
  sources: Record<string, string>;
}

/** The webListen setting, checked (config/setting-values.ts resolveWeb), with webCertFile and webKeyFile. */
export interface WebSettings {
  /** As given, `0.0.0.0:8080`. */
  listen: string;
  /** The address or name to listen on, without brackets: `0.0.0.0`, `::`, `192.168.1.20`. */
  host: string;
  port: number;
  /** HTTPS: the certificate chain and its key (PEM), read when the page starts; absent: plain HTTP. */
  tls?: { certFile: string; keyFile: string };
  source: string;
}

export type AssetType = 'video' | 'audio' | 'data';

export interface ChannelSpec {
  key: string;
  name: string;
  assetType: AssetType;
  deviceModelId: string;
  /** Detection rule: the channel is present when any of these paths exists under the host root. */
  detect: { anyPath: string[] };
  /** The buttons that mark takes on this channel (real-time logging, docs/real-time-logging.md); absent when none. */
  inputs?: InputSpec[];
}

/** One input of a channel: the service's input index, what the button says, and the key on the profile's inputDevice that presses it. */
export interface InputSpec {
  /** 0 to 99, unique within its channel. */
  index: number;
  name: string;
  /** A Linux key code (resolved from a KEY_/BTN_ name at load), unique in the profile; absent: pressed only through the local API and the CLI. */
  key?: number;
  /** The key as the profile wrote it, for `profiles` (28 or 'KEY_ENTER'). */
  keyName?: string;
}

/** The time-of-day timecode a press without one gets: its rate (lib/timecode.ts) and drop-frame. */
export interface TimecodeSpec {
  rate: { num: number; den: number };
  dropFrame: boolean;
}

export interface FirmwareProfile {
  id: string;
  name: string;
  minFirmware: string;
  /** Exclusive upper bound, optional. */
  maxFirmware?: string;
  assetType: AssetType;
  heartbeat: { minSeconds: number; maxSeconds: number };
  channels: ChannelSpec[];
  requiredMetadata: string[];
  /** The Linux input device the inputs' keys are read from, relative to the host root; absent when no input has a key. */
  inputDevice?: string;
  /** The time-of-day timecode given to a press that carries none; absent: such a press carries no timecode. */
  timecode?: TimecodeSpec;
  /** This model's recorder writes clips the way real-time uploads expect (docs/uploads.md, "Real-time uploads"): on unless the realtimeUploads setting says otherwise. */
  realtimeUploads?: boolean;
  /** The file it was loaded from (not part of the JSON). */
  file: string;
}

/** Real-time uploads: the realtimeUploads setting when set, else the profile's field, else off. */
export const realtimeUploadsOn = (settings: Pick<Settings, 'realtimeUploads'>, profile: Pick<FirmwareProfile, 'realtimeUploads'>): boolean =>
  settings.realtimeUploads ?? profile.realtimeUploads ?? false;

/** Whether any channel of the profile has inputs (real-time logging's buttons). */
export const profileHasInputs = (profile: Pick<FirmwareProfile, 'channels'>): boolean => profile.channels.some((c) => (c.inputs?.length ?? 0) > 0);
