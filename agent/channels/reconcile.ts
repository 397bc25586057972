// What to ask of the service so it holds exactly one channel for each
// detected key of the profile and none for the others. Pure: the caller
// fetches the listing, applies the operations (disconnects first, then
// connects) and keeps the returned map.
//
// The listing carries no device model, so a channel is tied to a key by the
// agent's own record (key -> channel id) or, for a channel the agent has no
// record of (connected just before a crash, or the record was lost), by its
// external_index: the agent connects every channel with its key's place in
// the profile's list.
import { externalIndexOf } from '../api/channels.js';
import type { DeviceChannel } from '../api/types.js';
import type { ChannelSpec } from '../config/types.js';

export interface ReconcileInput {
  /** The profile's channels; a spec's place in this list is its external_index. */
  specs: ChannelSpec[];
  /** Keys present on the unit now. */
  detected: Set<string>;
  /** The channels the service lists for this device. */
  listed: DeviceChannel[];
  /** The agent's record: profile key -> service channel id. */
  map: Record<string, string>;
}

export interface ConnectOp {
  key: string;
  deviceModelId: string;
  externalIndex: number;
}

export interface DisconnectOp {
  channelId: string;
  /** The key the channel belonged to or matched, when one did. */
  key?: string;
  why: 'not-detected' | 'duplicate' | 'unknown' | 'key-not-in-profile' | 'index-mismatch';
}

export interface ReconcilePlan {
  /** In the profile's order. */
  connect: ConnectOp[];
  /** Ordered by channel id. */
  disconnect: DisconnectOp[];
  /** The record once the plan is applied, without the connects' new ids (the caller adds those as they succeed). */
  map: Record<string, string>;
}

export function reconcile(input: ReconcileInput): ReconcilePlan {
  const { specs, detected } = input;
  const indexOf = new Map(specs.map((s, i) => [s.key, i] as const));
  const listed = new Map<string, DeviceChannel>();
  for (const ch of input.listed) if (!listed.has(ch.id)) listed.set(ch.id, ch);

  const owner = new Map<string, string>(); // channel id -> key
  const channelOf = new Map<string, string>(); // key -> channel id
  const disconnect: DisconnectOp[] = [];
  const drop = (op: DisconnectOp): number => disconnect.push(op);

  // The record first, in a stable order. An entry naming a channel the
  // service no longer lists is forgotten. One whose key left the profile, or
  // whose channel sits at another index than its key's (the profile was
  // reordered, or the record is wrong), is disconnected rather than
  // trusted: kept, it would hold the index its key needs, and every connect
  // for that key would meet a 409.
  for (const key of Object.keys(input.map).sort(byProfile(indexOf))) {
    const id = input.map[key];
    if (typeof id !== 'string' || !listed.has(id) || owner.has(id)) continue;
    owner.set(id, key);
    const index = indexOf.get(key);
    const listedIndex = externalIndexOf(listed.get(id)!);
    if (index === undefined) drop({ channelId: id, key, why: 'key-not-in-profile' });
    else if (listedIndex !== undefined && listedIndex !== index) drop({ channelId: id, key, why: 'index-mismatch' });
    else if (!detected.has(key)) drop({ channelId: id, key, why: 'not-detected' });
    else channelOf.set(key, id);
  }

  // Channels the record does not know, matched to a key by external_index.
  const unowned = [...listed.keys()].filter((id) => !owner.has(id)).sort();
  for (const id of unowned) {
    const index = externalIndexOf(listed.get(id)!);
    const spec = index === undefined ? undefined : specs[index];
    if (spec === undefined) drop({ channelId: id, why: 'unknown' });
    else if (!detected.has(spec.key)) drop({ channelId: id, key: spec.key, why: 'not-detected' });
    else if (channelOf.has(spec.key)) drop({ channelId: id, key: spec.key, why: 'duplicate' });
    else channelOf.set(spec.key, id); // adopted
  }

  const connect: ConnectOp[] = [];
  const map: Record<string, string> = {};
  specs.forEach((spec, externalIndex) => {
    const id = channelOf.get(spec.key);
    if (id !== undefined) map[spec.key] = id;
    else if (detected.has(spec.key)) connect.push({ key: spec.key, deviceModelId: spec.deviceModelId, externalIndex });
  });
  const ops = disconnect.sort((a, b) => (a.channelId < b.channelId ? -1 : a.channelId > b.channelId ? 1 : 0));
  return { connect, disconnect: ops, map };
}

/** Keys in the profile's order, unknown keys after them by name. */
function byProfile(indexOf: Map<string, number>): (a: string, b: string) => number {
  return (a, b) => {
    const ia = indexOf.get(a) ?? Number.MAX_SAFE_INTEGER;
    const ib = indexOf.get(b) ?? Number.MAX_SAFE_INTEGER;
    return ia - ib || (a < b ? -1 : a > b ? 1 : 0);
  };
}

/** True when the plan asks nothing of the service and leaves the record as it was. */
export function isSettled(plan: ReconcilePlan, map: Record<string, string>): boolean {
  if (plan.connect.length > 0 || plan.disconnect.length > 0) return false;
  const a = Object.keys(plan.map);
  return a.length === Object.keys(map).length && a.every((k) => map[k] === plan.map[k]);
}
