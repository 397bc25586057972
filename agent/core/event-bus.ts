// The daemon's parts talk through this bus, in the spirit of zigbee2mqtt's
// event bus: named, typed events; a listener is registered by its
// owner (a unit) and all of an owner's listeners are removed at once when it
// stops. A producer does not know who listens, so a new unit that reacts to
// an existing signal (a device seen, bytes sent, tokens refreshed) is one
// `on()` in its own start(), not an edit of the producer and the wiring.
//
// Delivery is synchronous and in registration order; a listener that throws
// is logged and skipped, never thrown into the producer (a heartbeat must not
// fail because the status file could not be written).
import type { Device } from '../api/types.js';
import type { Logger } from '../lib/logger.js';
import type { DaemonSnapshot } from './state.js';

/** A media file that held still and may be uploaded (uploads/upload-item.ts's UploadPayload has this shape). */
export interface MediaFileFacts {
  path: string;
  name: string;
  size: number;
  mtimeMs: number;
  ino: number;
  dev: number;
  filetype: string;
  extension?: string;
  /** The profile channel key (the sub-folder it came from). */
  channelKey?: string;
}

/** What the camera's own UI may set on the daemon (GET/PATCH /v1/prefs), kept on flash by localapi/prefs-store.ts. */
export interface Prefs {
  /** Off: the media watcher's finds are held back (not queued) until it is on again; files queued by hand still go. */
  autoUpload: boolean;
}

/**
 * One step of the daemon's pairing, as the local API's `/v1/events` carries
 * it (fields named as the contract names them). Never the device code.
 */
export type PairingProgress =
  | { phase: 'code'; user_code: string; verification_uri: string; verification_uri_complete: string | null; expires_in: number; interval: number; name?: string }
  | { phase: 'waiting'; expires_in: number }
  | { phase: 'slow_down'; interval: number }
  | { phase: 'retrying'; error: { kind: string; message: string } }
  | { phase: 'verifying' }
  | { phase: 'paired'; verified: boolean; device: Record<string, unknown> | null; warnings: string[]; /** Why the service could not confirm the grant yet (it was stored all the same). */ unverified?: { kind: string; message: string } }
  | { phase: 'failed'; exitCode: number; error: { kind: string; message: string; status?: number; code?: string } }
  | { phase: 'cancelled' };

export interface AgentEvents {
  /** The controller published its state; `transition` is true when the state itself changed. */
  stateChanged: { snapshot: DaemonSnapshot; transition: boolean };
  /** GET /v2/devices/me answered with this device record. */
  deviceSeen: { device: Device };
  /** A refresh (ahead of expiry, or for a refused call) put a new token in use: verify it with GET /v2/devices/me. */
  tokensRefreshed: { why: string };
  /** The service refused the refresh token, or the credentials went away: the unit needs pairing. */
  tokensRejected: { reason: string };
  /** The set of profile channels plugged in now (by key). */
  channelsDetected: { keys: ReadonlySet<string> };
  /** Channel sync asked for (a device record that disagrees, a record rewritten). */
  channelSyncRequested: { why: string };
  /** A channel sync went through; `map` is the channel-id record now on flash. */
  channelsSynced: { map: Record<string, string> };
  /** One attempt at an outbox item ended (done, dead or retry later). */
  outboxSettled: Record<string, never>;
  /** The media watcher found a finished file. */
  mediaFileReady: { file: MediaFileFacts };
  /** Real-time uploads: the media watcher found a clip still being written at `path`, to be `finalPath` once finished. */
  mediaFileGrowing: { file: MediaFileFacts & { finalPath: string } };
  /** Bytes of a media file left for storage. */
  bytesSent: { bytes: number };
  /** The upload window opened: uploads may go now. */
  uploadWindowOpened: Record<string, never>;
  /** The preferences changed (PATCH /v1/prefs): in effect at once. */
  prefsChanged: { prefs: Prefs };
  /** Something a unit reports in the status document changed (queue, uploads, channels). */
  statusChanged: Record<string, never>;
  /** The daemon's own pairing moved on (auth/daemon-pairing.ts, started by POST /v1/pair); GET /v1/events carries it as a `pairing` line. */
  pairing: PairingProgress;
  /** The daemon stored or forgot the credentials itself (pairing, unpairing): use the file as it is now. */
  credentialsReplaced: { why: 'paired' | 'unpaired' };
}

export type AgentEvent = keyof AgentEvents;
type Listener<K extends AgentEvent> = (payload: AgentEvents[K]) => void;

interface Entry {
  owner: object;
  fn: (payload: never) => void;
}

export class EventBus {
  private readonly listeners = new Map<AgentEvent, Entry[]>();

  constructor(private readonly logger?: Logger) {}

  /** Registers `fn` for `event` on behalf of `owner` (usually the unit itself). */
  on<K extends AgentEvent>(event: K, owner: object, fn: Listener<K>): void {
    const list = this.listeners.get(event) ?? [];
    list.push({ owner, fn: fn as (payload: never) => void });
    this.listeners.set(event, list);
  }

  /** Removes every listener `owner` registered: call it from the owner's stop(). */
  removeListeners(owner: object): void {
    for (const [event, list] of this.listeners) {
      const kept = list.filter((e) => e.owner !== owner);
      if (kept.length > 0) this.listeners.set(event, kept);
      else this.listeners.delete(event);
    }
  }

  emit<K extends AgentEvent>(event: K, payload: AgentEvents[K]): void {
    const list = this.listeners.get(event);
    if (list === undefined) return;
    // A listener may remove itself (or others) while we deliver: walk a copy.
    for (const e of [...list]) {
      try {
        (e.fn as Listener<K>)(payload);
      } catch (err) {
        this.logger?.error({ event, err: err instanceof Error ? err.message : String(err) }, 'an event listener failed (a bug); carrying on');
      }
    }
  }

  /** How many listeners are registered (for tests: none left after every unit stopped). */
  listenerCount(event?: AgentEvent): number {
    if (event !== undefined) return this.listeners.get(event)?.length ?? 0;
    let n = 0;
    for (const list of this.listeners.values()) n += list.length;
    return n;
  }
}
