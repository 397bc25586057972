// Hand-written checks for the records the agent reads on its hot path (every
// check, every re-authorization). Unknown fields are kept: the service adds
// fields over time. A known field with the wrong type is a protocol error
// that names the field, so a bad deploy on the other side is diagnosable.
// The real service sends null for optional fields never set (a fresh unit
// has no last_seen_at): null is read as absent and dropped from the result,
// so no code downstream meets a null where the type promises a string.
import { AgentError } from '../lib/errors.js';
import type { Device, DeviceChannel } from './types.js';

type Rec = Record<string, unknown>;

const isRecord = (v: unknown): v is Rec => v !== null && typeof v === 'object' && !Array.isArray(v);

function typeName(v: unknown): string {
  if (v === undefined) return 'missing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  const t = typeof v;
  return t === 'object' ? 'an object' : `a ${t}`;
}

class Checker {
  constructor(private readonly what: string) {}

  fail(field: string, value: unknown, expected: string): never {
    throw new AgentError('protocol', `${this.what}: field '${field}' is ${typeName(value)}, expected ${expected}`, { source: this.what });
  }

  record(v: unknown, field: string): Rec {
    return isRecord(v) ? v : this.fail(field, v, 'an object');
  }

  /** Drops a null optional field, so it reads as absent from here on. */
  nullAsAbsent(r: Rec, key: string): void {
    if (r[key] === null) delete r[key];
  }

  requiredString(r: Rec, key: string, prefix = ''): void {
    if (typeof r[key] !== 'string') this.fail(prefix + key, r[key], 'a string');
  }

  optionalString(r: Rec, key: string, prefix = ''): void {
    this.nullAsAbsent(r, key);
    if (r[key] !== undefined && typeof r[key] !== 'string') this.fail(prefix + key, r[key], 'a string');
  }

  optionalNullableString(r: Rec, key: string, prefix = ''): void {
    const v = r[key];
    if (v !== undefined && v !== null && typeof v !== 'string') this.fail(prefix + key, v, 'a string or null');
  }

  /** A nested record, copied into r so dropping its null fields leaves the caller's value untouched. */
  optionalRecord(r: Rec, key: string, prefix = ''): Rec | undefined {
    this.nullAsAbsent(r, key);
    const v = r[key];
    if (v === undefined) return undefined;
    const copy = isRecord(v) ? { ...v } : this.fail(prefix + key, v, 'an object');
    r[key] = copy;
    return copy;
  }
}

const DEVICE_STRINGS = ['_type', 'name', 'status', 'project_id', 'asset_type', 'last_seen_at', 'last_known_firmware_version'];

export function validateDevice(value: unknown, what: string): Device {
  const c: Checker = new Checker(what);
  const d = { ...c.record(value, '(body)') };
  c.requiredString(d, 'id');
  for (const key of DEVICE_STRINGS) c.optionalString(d, key);

  const project = c.optionalRecord(d, 'project');
  if (project) {
    c.optionalString(project, 'id', 'project.');
    c.optionalString(project, 'name', 'project.');
  }

  c.nullAsAbsent(d, 'channels');
  const channels = d.channels;
  if (channels !== undefined) {
    if (!Array.isArray(channels)) c.fail('channels', channels, 'an array');
    // One validator for a channel wherever it comes from (a listing here, a connect's answer).
    d.channels = channels.map((ch: unknown, i) => validateChannel(ch, what, `channels[${i}].`));
  }

  const auth = c.optionalRecord(d, 'authorization');
  if (auth) {
    c.optionalString(auth, 'id', 'authorization.');
    c.optionalNullableString(auth, 'expires_at', 'authorization.');
    const scopes = c.optionalRecord(auth, 'scopes', 'authorization.');
    if (scopes) {
      for (const [k, v] of Object.entries(scopes)) {
        if (v === null) delete scopes[k];
        else if (k !== 'id' && k !== '_type' && typeof v !== 'boolean') c.fail(`authorization.scopes.${k}`, v, 'a boolean');
      }
    }
  }
  return d as Device;
}

export function validateHealth(value: unknown, what: string): { status: string } {
  const c = new Checker(what);
  const r = { ...c.record(value, '(body)') };
  c.requiredString(r, 'status');
  return r as { status: string };
}

/**
 * A DeviceChannel as the service sends it: unknown fields kept, null
 * optional fields dropped (read as absent), a known field of the wrong type
 * a protocol error naming it. `external_index` is checked because the agent
 * matches channels by it. `prefix` names the place in a larger record
 * ('channels[2].'), for checking the entries of GET /v2/devices/me.
 */
export function validateChannel(value: unknown, what: string, prefix = ''): DeviceChannel {
  const fail = (field: string, v: unknown, expected: string): never => {
    throw new AgentError('protocol', `${what}: field '${field}' is ${typeName(v)}, expected ${expected}`, { source: what });
  };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) fail(prefix === '' ? '(body)' : prefix.replace(/\.$/, ''), value, 'an object');
  const ch: Rec = { ...(value as Rec) };
  if (typeof ch.id !== 'string') fail(`${prefix}id`, ch.id, 'a string');
  if (ch.id === '') fail(`${prefix}id`, ch.id, 'a non-empty string');
  for (const key of ['name', 'asset_type', 'status']) {
    if (ch[key] === null) delete ch[key];
    else if (ch[key] !== undefined && typeof ch[key] !== 'string') fail(prefix + key, ch[key], 'a string');
  }
  if (ch.external_index === null) delete ch.external_index;
  else if (ch.external_index !== undefined && (typeof ch.external_index !== 'number' || !Number.isFinite(ch.external_index))) {
    fail(`${prefix}external_index`, ch.external_index, 'a number');
  }
  return ch as DeviceChannel;
}
