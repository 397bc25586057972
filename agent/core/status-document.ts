// The status document: status.json in the runtime dir, what `c2c-agent
// status` and `queue` read. It is the controller's snapshot (state.ts) plus
// one optional section per feature that reports: each unit's report()
// returns its feature's section (unit.ts), daemon/runtime/status-publisher.ts
// writes the whole, and statusDocumentOf() below is the one reader, given the
// features' section declarations (core/feature.ts SectionDecl, each one
// core/shape.ts value from which its type comes too; daemon/status-reader.ts
// passes those of daemon/features.ts). Core declares no section.
//
// The file may have been written by an older agent (no sections) or be
// garbage: the reader checks every field it keeps. A snapshot field that is
// required and missing or wrong makes the file "not a status file"; an
// optional field or a section that is wrong is dropped whole; anything it
// does not know is dropped. Nothing secret belongs here.
import type { RateLimitInfo } from '../lib/errors.js';
import type { SectionDecl } from './feature.js';
import { count, isObject, num, str, type Check } from './shape.js';
import { DAEMON_STATES, type DaemonSnapshot, type DaemonState, type Moment } from './state.js';

/**
 * One section per reporting feature, named as it appears in status.json. A
 * feature adds its own from its folder (`declare module
 * '../core/status-document.js' { interface StatusSections { gizmo: … } }`)
 * and declares its reader as its `section` (core/feature.ts).
 */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface StatusSections {}

/** The device as the document carries it: always present, null while none is known (needs-pairing, before the first device check). */
export type StatusDevice = NonNullable<DaemonSnapshot['device']> | null;

export type StatusDocument = Omit<DaemonSnapshot, 'device'> & { device: StatusDevice } & Partial<StatusSections>;

/** The snapshot and the sections as one document: `device` null when the snapshot has none. */
export function statusDocument(snap: DaemonSnapshot, sections: Partial<StatusSections>): StatusDocument {
  return { ...snap, device: snap.device ?? null, ...sections };
}

const pidOf: Check<number> = (v) => {
  const n = count(v);
  return n !== undefined && n > 0 ? n : undefined;
};
const state: Check<DaemonState> = (v) => DAEMON_STATES.find((s) => s === v);

/** An optional field: `{ [key]: value }` when present and fitting, else nothing (spread it). */
function opt<K extends string, T>(key: K, value: T | undefined): { [P in K]?: T } {
  const out: { [P in K]?: T } = {};
  if (value !== undefined) out[key] = value;
  return out;
}

/** A moment (wall ISO time and agent-monotonic ms): features' sections use it too. */
export const moment: Check<Moment> = (v) => {
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
    ...declared(raw, sections),
  };
}
