// Hand-written checks for the records the agent reads on its hot path (every
// check, every re-authorization). Unknown fields are kept: the service adds
// fields over time. A known field with the wrong type is a protocol error
// that names the field, so a bad deploy on the other side is diagnosable.
import { AgentError } from '../lib/errors.js';
import type { Device } from './types.js';

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

  requiredString(r: Rec, key: string, prefix = ''): void {
    if (typeof r[key] !== 'string') this.fail(prefix + key, r[key], 'a string');
  }

  optionalString(r: Rec, key: string, prefix = ''): void {
    if (r[key] !== undefined && typeof r[key] !== 'string') this.fail(prefix + key, r[key], 'a string');
  }

  optionalNullableString(r: Rec, key: string, prefix = ''): void {
    const v = r[key];
    if (v !== undefined && v !== null && typeof v !== 'string') this.fail(prefix + key, v, 'a string or null');
  }

  optionalRecord(r: Rec, key: string, prefix = ''): Rec | undefined {
    const v = r[key];
    if (v === undefined) return undefined;
    return isRecord(v) ? v : this.fail(prefix + key, v, 'an object');
  }
}

const DEVICE_STRINGS = ['_type', 'name', 'status', 'project_id', 'asset_type', 'last_seen_at', 'last_known_firmware_version'];

export function validateDevice(value: unknown, what: string): Device {
  const c: Checker = new Checker(what);
  const d = c.record(value, '(body)');
  c.requiredString(d, 'id');
  for (const key of DEVICE_STRINGS) c.optionalString(d, key);

  const project = c.optionalRecord(d, 'project');
  if (project) {
    c.optionalString(project, 'id', 'project.');
    c.optionalString(project, 'name', 'project.');
  }

  const channels = d.channels;
  if (channels !== undefined) {
    if (!Array.isArray(channels)) c.fail('channels', channels, 'an array');
    channels.forEach((ch, i) => {
      const rec = c.record(ch, `channels[${i}]`);
      c.requiredString(rec, 'id', `channels[${i}].`);
      c.optionalString(rec, 'name', `channels[${i}].`);
      c.optionalString(rec, 'asset_type', `channels[${i}].`);
      c.optionalString(rec, 'status', `channels[${i}].`);
    });
  }

  const auth = c.optionalRecord(d, 'authorization');
  if (auth) {
    c.optionalString(auth, 'id', 'authorization.');
    c.optionalNullableString(auth, 'expires_at', 'authorization.');
    const scopes = c.optionalRecord(auth, 'scopes', 'authorization.');
    if (scopes) {
      for (const [k, v] of Object.entries(scopes)) {
        if (k !== 'id' && k !== '_type' && typeof v !== 'boolean') c.fail(`authorization.scopes.${k}`, v, 'a boolean');
      }
    }
  }
  return d as Device;
}

export function validateHealth(value: unknown, what: string): { status: string } {
  const c = new Checker(what);
  const r = c.record(value, '(body)');
  c.requiredString(r, 'status');
  return r as { status: string };
}
