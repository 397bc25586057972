// The status document: status.json in the runtime dir, what `c2c-agent
// status` and `queue` read. It is the controller's snapshot (state.ts) plus
// one optional section per unit that reports: each unit's report() returns
// its own section (unit.ts), daemon/runtime/status-publisher.ts writes the
// whole, and statusDocumentOf() below is the one reader. The sections'
// shapes are written here, below every feature folder, like event-bus.ts's
// MediaFileFacts: the feature's own types (outbox/types.ts's OutboxStats,
// outbox/dispatcher.ts's DispatcherView, uploads/media-watcher.ts's
// SkippedView) must fit them, which tsc checks where each unit reports.
//
// The file may have been written by an older agent (no sections) or be
// garbage: the reader checks every field it keeps. A snapshot field that is
// required and missing or wrong makes the file "not a status file"; an
// optional field or a section that is wrong is dropped whole; anything it
// does not know is dropped. Nothing secret belongs here.
import type { RateLimitInfo } from '../lib/errors.js';
import type { SectionDecl } from './feature.js';
import { DAEMON_STATES, type DaemonSnapshot, type DaemonState, type Moment } from './state.js';

/** Channels (channels/channels-unit.ts): profile channel keys plugged in, and those the service holds. */
export interface ChannelsSection {
  detected: string[];
  /** Keys the service holds a channel for, as of the last sync; null before one. */
  known: string[] | null;
  pendingSyncs: number;
}

export interface ItemCount {
  items: number;
  bytes: number;
}

/**
 * The queue: the outbox (outbox/outbox-unit.ts), its stats and the
 * dispatcher's view side by side. Named `queue` in the document, as the
 * contract's GET /v1/status names it; an agent before that wrote it as
 * `outbox`, which the reader still takes.
 */
export interface QueueSection {
  /** Items and bytes by kind, then by state ('pending', 'done', 'dead', 'cancelled', 'dropped'; a cancelled item is not among the dead). */
  byKind: Record<string, Record<string, ItemCount>>;
  /** Wall ISO time of the oldest pending item's put, or null. */
  oldestPending: string | null;
  /** Items evicted by the cap, by kind. */
  dropped: Record<string, number>;
  quarantined: number;
  diskBytes: number;
  unwritten: number;
  liveBytes: number;
  /** Ids of the items running now. */
  inFlight: string[];
  attempts: Record<string, { count: number; lastError: string }>;
  /** Agent-monotonic time the queue waits until; absent when it does not wait. */
  waitingUntil?: number;
  /** Kinds whose attempts keep failing, by kind (outbox/dispatcher.ts's KindFailing); absent when none. */
  failing?: Record<string, KindFailing>;
}

/** A kind's attempts failing in a row: since the first (agent and wall time), how many, the last error. */
export interface KindFailing {
  since: Moment;
  attempts: number;
  lastError: string;
}

/** Media-dir entries the watcher will not take: the first ones by name and reason, the rest counted. */
export interface SkippedSection {
  entries: Array<{ name: string; reason: string }>;
  more: number;
}

/** Uploads (uploads/uploads-unit.ts): what is left and how fast it goes. */
export interface UploadsSection {
  files: number;
  bytesLeft: number;
  bytesPerSecond: number;
  /** Only with a media dir. */
  skipped?: SkippedSection;
  /** The media dir's path while it does not exist (nothing is uploaded from it then); absent when it exists or none is set. */
  mediaDirMissing?: string;
  /** Recordings uploading in real time now (docs/uploads.md, "Real-time uploads"); absent when none. */
  recording?: RecordingEntry[];
  /** What keeps clips from being taken or uploads from going (uploads/upload-blocks.ts); absent when nothing does. */
  blocked?: UploadBlock[];
}

/**
 * One thing that keeps a camera from uploading (docs/troubleshooting.md,
 * "Nothing is uploaded"): `no-media-dir` (no mediaDir: clips are not taken by
 * themselves), `auto-upload-off` (the preference; `waiting`: clips found
 * and held back), `window-closed` (the upload window; `until`: its next
 * opening, when known), `refused` (storage or the service refuses every
 * attempt: `since` the first, `attempts`, `reason` the last error).
 */
export interface UploadBlock {
  kind: UploadBlockKind;
  since?: Moment;
  until?: Moment;
  waiting?: number;
  attempts?: number;
  reason?: string;
}

export const UPLOAD_BLOCK_KINDS = ['no-media-dir', 'auto-upload-off', 'window-closed', 'refused'] as const;
export type UploadBlockKind = (typeof UPLOAD_BLOCK_KINDS)[number];

/** One recording uploading in real time: bytes on disk and sent, how long since it was written to, when it is finished with what is on disk if it stays so. */
export interface RecordingEntry {
  name: string;
  bytesOnDisk: number;
  bytesSent: number;
  idleSeconds: number;
  finishedInSeconds: number;
}

export type NetworkType = 'ethernet' | 'wifi' | 'cellular' | 'other';
export const NETWORK_TYPES: readonly NetworkType[] = ['ethernet', 'wifi', 'cellular', 'other'];

/** The network (network/network-unit.ts): the link the default route takes and how the service answers over it. */
export interface NetworkSection {
  /** The interface carrying the default route, or null without one. */
  interface: string | null;
  type: NetworkType | null;
  /** Real ms of the last round trip to the service; null before any. */
  serviceRttMs: number | null;
  /** Bytes a second sent to storage, over the last half minute. */
  uploadBytesPerSecond: number;
  /** Wall ISO time the service last answered (any status); null before it did. */
  lastContactAt: string | null;
}

/** The preferences (localapi/prefs-store.ts): what the camera's UI set through PATCH /v1/prefs. */
export interface PrefsSection {
  autoUpload: boolean;
}

/** The sections whose readers are still written here (until their features declare them). */
interface BuiltInSections {
  channels: ChannelsSection;
  queue: QueueSection;
  uploads: UploadsSection;
  network: NetworkSection;
  prefs: PrefsSection;
}

/**
 * One section per reporting unit, named as it appears in status.json. A
 * feature adds its own from its folder (`declare module
 * '../core/status-document.js' { interface StatusSections { gizmo: … } }`)
 * and declares its reader as its `section` (core/feature.ts).
 */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface StatusSections extends BuiltInSections {}

/** The device as the document carries it: always present, null while none is known (needs-pairing, before the first device check). */
export type StatusDevice = NonNullable<DaemonSnapshot['device']> | null;

export type StatusDocument = Omit<DaemonSnapshot, 'device'> & { device: StatusDevice } & Partial<StatusSections>;

/** The snapshot and the sections as one document: `device` null when the snapshot has none. */
export function statusDocument(snap: DaemonSnapshot, sections: Partial<StatusSections>): StatusDocument {
  return { ...snap, device: snap.device ?? null, ...sections };
}

// Each check returns the value typed, or undefined when it does not fit.
type Check<T> = (v: unknown) => T | undefined;

function isObject(v: unknown): v is Readonly<Record<string, unknown>> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const str: Check<string> = (v) => (typeof v === 'string' ? v : undefined);
const num: Check<number> = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
/** A count or a size: a whole number, not negative. */
const count: Check<number> = (v) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined);
const pidOf: Check<number> = (v) => {
  const n = count(v);
  return n !== undefined && n > 0 ? n : undefined;
};
const state: Check<DaemonState> = (v) => DAEMON_STATES.find((s) => s === v);

/** Every element fits, or the list is dropped. */
function listOf<T>(check: Check<T>): Check<T[]> {
  return (v) => {
    if (!Array.isArray(v)) return undefined;
    const out: T[] = [];
    for (const x of v) {
      const y = check(x);
      if (y === undefined) return undefined;
      out.push(y);
    }
    return out;
  };
}

/** Every value fits, or the map is dropped. Built with fromEntries: a key such as "__proto__" stays a plain key. */
function mapOf<T>(check: Check<T>): Check<Record<string, T>> {
  return (v) => {
    if (!isObject(v)) return undefined;
    const out: Array<[string, T]> = [];
    for (const [k, x] of Object.entries(v)) {
      const y = check(x);
      if (y === undefined) return undefined;
      out.push([k, y]);
    }
    return Object.fromEntries(out);
  };
}

/** An optional field: `{ [key]: value }` when present and fitting, else nothing (spread it). */
function opt<K extends string, T>(key: K, value: T | undefined): { [P in K]?: T } {
  const out: { [P in K]?: T } = {};
  if (value !== undefined) out[key] = value;
  return out;
}

const moment: Check<Moment> = (v) => {
  if (!isObject(v)) return undefined;
  const at = str(v.at);
  const monotonic = num(v.monotonic);
  return at === undefined || monotonic === undefined ? undefined : { at, monotonic };
};

const device: Check<NonNullable<DaemonSnapshot['device']>> = (v) => {
  if (!isObject(v)) return undefined;
  const id = str(v.id);
  return id === undefined ? undefined : { id, ...opt('name', str(v.name)), ...opt('status', str(v.status)) };
};

const project: Check<NonNullable<DaemonSnapshot['project']>> = (v) => (isObject(v) ? { ...opt('id', str(v.id)), ...opt('name', str(v.name)) } : undefined);

const lastHeartbeat: Check<NonNullable<DaemonSnapshot['lastHeartbeat']>> = (v) => {
  const at = moment(v);
  if (at === undefined || !isObject(v)) return undefined;
  const result = str(v.result);
  return result === undefined ? undefined : { ...at, result, ...opt('status', num(v.status)), ...opt('error', str(v.error)) };
};

const rateLimit: Check<RateLimitInfo> = (v) =>
  isObject(v) ? { ...opt('limit', num(v.limit)), ...opt('remaining', num(v.remaining)), ...opt('windowMs', num(v.windowMs)) } : undefined;

const channels: Check<ChannelsSection> = (v) => {
  if (!isObject(v)) return undefined;
  const detected = listOf(str)(v.detected);
  const known = v.known === null ? null : listOf(str)(v.known);
  const pendingSyncs = count(v.pendingSyncs);
  return detected === undefined || known === undefined || pendingSyncs === undefined ? undefined : { detected, known, pendingSyncs };
};

const itemCount: Check<ItemCount> = (v) => {
  if (!isObject(v)) return undefined;
  const items = count(v.items);
  const bytes = count(v.bytes);
  return items === undefined || bytes === undefined ? undefined : { items, bytes };
};

const attempt: Check<{ count: number; lastError: string }> = (v) => {
  if (!isObject(v)) return undefined;
  const n = count(v.count);
  const lastError = str(v.lastError);
  return n === undefined || lastError === undefined ? undefined : { count: n, lastError };
};

const kindFailing: Check<KindFailing> = (v) => {
  if (!isObject(v)) return undefined;
  const since = moment(v.since);
  const attempts = count(v.attempts);
  const lastError = str(v.lastError);
  return since === undefined || attempts === undefined || lastError === undefined ? undefined : { since, attempts, lastError };
};

const queue: Check<QueueSection> = (v) => {
  if (!isObject(v)) return undefined;
  const s = {
    byKind: mapOf(mapOf(itemCount))(v.byKind),
    oldestPending: v.oldestPending === null ? null : str(v.oldestPending),
    dropped: mapOf(count)(v.dropped),
    quarantined: count(v.quarantined),
    diskBytes: count(v.diskBytes),
    unwritten: count(v.unwritten),
    liveBytes: count(v.liveBytes),
    inFlight: listOf(str)(v.inFlight),
    attempts: mapOf(attempt)(v.attempts),
  };
  const { byKind, oldestPending, dropped, quarantined, diskBytes, unwritten, liveBytes, inFlight, attempts } = s;
  if (byKind === undefined || oldestPending === undefined || dropped === undefined || quarantined === undefined || diskBytes === undefined) return undefined;
  if (unwritten === undefined || liveBytes === undefined || inFlight === undefined || attempts === undefined) return undefined;
  return { byKind, oldestPending, dropped, quarantined, diskBytes, unwritten, liveBytes, inFlight, attempts, ...opt('waitingUntil', num(v.waitingUntil)), ...opt('failing', mapOf(kindFailing)(v.failing)) };
};

const skippedEntry: Check<{ name: string; reason: string }> = (v) => {
  if (!isObject(v)) return undefined;
  const name = str(v.name);
  const reason = str(v.reason);
  return name === undefined || reason === undefined ? undefined : { name, reason };
};

const skipped: Check<SkippedSection> = (v) => {
  if (!isObject(v)) return undefined;
  const entries = listOf(skippedEntry)(v.entries);
  const more = count(v.more);
  return entries === undefined || more === undefined ? undefined : { entries, more };
};

const recordingEntry: Check<RecordingEntry> = (v) => {
  if (!isObject(v)) return undefined;
  const name = str(v.name);
  const bytesOnDisk = count(v.bytesOnDisk);
  const bytesSent = count(v.bytesSent);
  const idleSeconds = count(v.idleSeconds);
  const finishedInSeconds = count(v.finishedInSeconds);
  if (name === undefined || bytesOnDisk === undefined || bytesSent === undefined || idleSeconds === undefined || finishedInSeconds === undefined) return undefined;
  return { name, bytesOnDisk, bytesSent, idleSeconds, finishedInSeconds };
};

const uploadBlock: Check<UploadBlock> = (v) => {
  if (!isObject(v)) return undefined;
  const kind = UPLOAD_BLOCK_KINDS.find((k) => k === v.kind);
  if (kind === undefined) return undefined;
  return { kind, ...opt('since', moment(v.since)), ...opt('until', moment(v.until)), ...opt('waiting', count(v.waiting)), ...opt('attempts', count(v.attempts)), ...opt('reason', str(v.reason)) };
};

const uploads: Check<UploadsSection> = (v) => {
  if (!isObject(v)) return undefined;
  const files = count(v.files);
  const bytesLeft = count(v.bytesLeft);
  const bytesPerSecond = count(v.bytesPerSecond);
  if (files === undefined || bytesLeft === undefined || bytesPerSecond === undefined) return undefined;
  return {
    files,
    bytesLeft,
    bytesPerSecond,
    ...opt('skipped', skipped(v.skipped)),
    ...opt('mediaDirMissing', str(v.mediaDirMissing)),
    ...opt('recording', listOf(recordingEntry)(v.recording)),
    // A kind this agent does not know (a newer agent's) is left out, the others kept.
    ...opt('blocked', Array.isArray(v.blocked) ? v.blocked.flatMap((b) => uploadBlock(b) ?? []) : undefined),
  };
};

const network: Check<NetworkSection> = (v) => {
  if (!isObject(v)) return undefined;
  const iface = v.interface === null ? null : str(v.interface);
  const type = v.type === null ? null : NETWORK_TYPES.find((t) => t === v.type);
  const serviceRttMs = v.serviceRttMs === null ? null : count(v.serviceRttMs);
  const uploadBytesPerSecond = count(v.uploadBytesPerSecond);
  const lastContactAt = v.lastContactAt === null ? null : str(v.lastContactAt);
  if (iface === undefined || type === undefined || serviceRttMs === undefined || uploadBytesPerSecond === undefined || lastContactAt === undefined) return undefined;
  return { interface: iface, type, serviceRttMs, uploadBytesPerSecond, lastContactAt };
};

const prefs: Check<PrefsSection> = (v) => (isObject(v) && typeof v.autoUpload === 'boolean' ? { autoUpload: v.autoUpload } : undefined);

/** One reader per section: tsc refuses a section added to StatusSections without one. */
const SECTIONS: { [K in keyof BuiltInSections]: Check<BuiltInSections[K]> } = { channels, queue, uploads, network, prefs };

/** A declared section read from `raw`: its name, else an older one (aliases), when it fits. */
function declared(raw: Readonly<Record<string, unknown>>, decls: readonly SectionDecl[]): Partial<StatusSections> {
  const out: Record<string, unknown> = {};
  for (const d of decls) {
    for (const name of [d.name, ...(d.aliases ?? [])]) {
      const v = d.check(raw[name]);
      if (v !== undefined) {
        out[d.name] = v;
        break;
      }
    }
  }
  return out as Partial<StatusSections>;
}

/**
 * The status document in `raw` (parsed JSON), as far as it fits; undefined
 * when it is not one (no snapshot). `sections`: the features' declared
 * sections (daemon/status-reader.ts passes those of daemon/features.ts).
 */
export function statusDocumentOf(raw: unknown, sections: readonly SectionDecl[] = []): StatusDocument | undefined {
  if (!isObject(raw)) return undefined;
  const snap = {
    state: state(raw.state),
    reason: str(raw.reason),
    since: moment(raw.since),
    pid: pidOf(raw.pid),
    started: moment(raw.started),
    consecutiveFailures: count(raw.consecutiveFailures),
    firmwareVersion: str(raw.firmwareVersion),
    agentVersion: str(raw.agentVersion),
    timeScale: num(raw.timeScale),
    updated: moment(raw.updated),
  };
  const { state: st, reason, since, pid, started, consecutiveFailures, firmwareVersion, agentVersion, timeScale, updated } = snap;
  if (st === undefined || reason === undefined || since === undefined || pid === undefined || started === undefined) return undefined;
  if (consecutiveFailures === undefined || firmwareVersion === undefined || agentVersion === undefined || timeScale === undefined || updated === undefined) return undefined;
  return {
    state: st,
    reason,
    since,
    pid,
    ...opt('procStart', str(raw.procStart)),
    started,
    device: device(raw.device) ?? null,
    ...opt('project', project(raw.project)),
    ...opt('lastHeartbeat', lastHeartbeat(raw.lastHeartbeat)),
    ...opt('nextHeartbeat', moment(raw.nextHeartbeat)),
    ...opt('nextCheck', moment(raw.nextCheck)),
    consecutiveFailures,
    ...opt('rateLimit', rateLimit(raw.rateLimit)),
    ...opt('clockOffsetMs', num(raw.clockOffsetMs)),
    ...opt('clockProblem', str(raw.clockProblem)),
    firmwareVersion,
    ...opt('profile', str(raw.profile)),
    agentVersion,
    timeScale,
    updated,
    ...opt('channels', SECTIONS.channels(raw.channels)),
    // An older agent's status.json names the queue `outbox`.
    ...opt('queue', SECTIONS.queue(raw.queue) ?? SECTIONS.queue(raw.outbox)),
    ...opt('uploads', SECTIONS.uploads(raw.uploads)),
    ...opt('network', SECTIONS.network(raw.network)),
    ...opt('prefs', SECTIONS.prefs(raw.prefs)),
    ...declared(raw, sections),
  };
}
