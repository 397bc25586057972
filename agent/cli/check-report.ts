// What `check` reports about a paired unit: the facts from the Device
// record plus the warnings an installer must see before leaving the site
// (a missing scope, an authorization about to expire). Pure functions, so
// the tests can feed them any record.
import { DEVICE_SCOPE } from '../api/oauth.js';
import type { Device, ResponseMeta } from '../api/types.js';
import type { RateLimitInfo } from '../lib/errors.js';
import { describeDuration, oneLine, quote } from '../lib/text.js';
import { CLOCK_WRONG_MS } from '../lib/timing.js';

/** The scopes pairing asks for (upload, and a refresh token): a unit without one of them is warned about. */
const REQUIRED_SCOPES = DEVICE_SCOPE.split(' ');
/** Shown too: whether the service lets the unit connect channels. */
export const DEVICE_SCOPES = [...REQUIRED_SCOPES, 'device_connect'];
const DAY_MS = 24 * 3600 * 1000;

export interface DeviceFacts {
  id: string;
  name: string | null;
  status: string | null;
  project_id: string | null;
  project: string | null;
  channels: { id: string; name: string | null; asset_type: string | null; status: string | null }[];
}

export interface CheckFacts {
  device: DeviceFacts;
  scopes: Record<string, boolean | null>;
  missingScopes: string[];
  expiresAt: string | null;
  /** ms until expiry by the server's clock; negative when expired. */
  expiresInMs: number | null;
  warnings: string[];
}

export function deviceFacts(d: Device): DeviceFacts {
  return {
    id: d.id,
    name: d.name ?? null,
    status: d.status ?? null,
    project_id: d.project_id ?? d.project?.id ?? null,
    project: d.project?.name ?? null,
    channels: (d.channels ?? []).map((c) => ({ id: c.id, name: c.name ?? null, asset_type: c.asset_type ?? null, status: c.status ?? null })),
  };
}

/** `serverNowMs` is the service's idea of now (local wall + offset), which decides expiry. */
export function checkFacts(d: Device, serverNowMs: number): CheckFacts {
  const warnings: string[] = [];
  const scopesRec = d.authorization?.scopes;
  const scopes: Record<string, boolean | null> = {};
  for (const s of DEVICE_SCOPES) scopes[s] = typeof scopesRec?.[s] === 'boolean' ? (scopesRec[s] as boolean) : null;
  const missingScopes = REQUIRED_SCOPES.filter((s) => scopes[s] !== true);
  if (scopesRec === undefined) warnings.push('the service sent no authorization scopes; cannot tell whether uploads are allowed');
  else if (missingScopes.length > 0) {
    warnings.push(`authorization lacks scope ${missingScopes.join(', ')}: re-pair the unit and grant it (uploads or refresh may fail)`);
  }

  const expiresAt = typeof d.authorization?.expires_at === 'string' ? d.authorization.expires_at : null;
  let expiresInMs: number | null = null;
  if (expiresAt !== null) {
    const at = Date.parse(expiresAt);
    if (Number.isFinite(at)) {
      expiresInMs = at - serverNowMs;
      if (expiresInMs <= 0) warnings.push(`authorization expired at ${oneLine(expiresAt, 80)}; ask the project owner to extend it, then re-pair`);
      else if (expiresInMs < DAY_MS) warnings.push(`authorization expires in ${describeDuration(expiresInMs)} (${oneLine(expiresAt, 80)}); ask the project owner to extend it`);
    } else {
      warnings.push(`authorization expires_at ${quote(expiresAt, 40)} is not a time the agent understands`);
    }
  }
  return { device: deviceFacts(d), scopes, missingScopes, expiresAt, expiresInMs, warnings };
}

export function describeRateLimit(rl: RateLimitInfo): string | undefined {
  if (rl.limit === undefined) return undefined;
  const win = rl.windowMs !== undefined ? ` per ${describeDuration(rl.windowMs)}` : '';
  return `${rl.remaining ?? '?'} of ${rl.limit} requests left${win}`;
}

export function describeOffset(ms: number | undefined): string {
  if (ms === undefined) return 'unknown (the service sent no Date header)';
  const sign = ms >= 0 ? 'ahead of' : 'behind';
  // The same bound the TLS errors use to blame this unit's clock rather than a certificate.
  const note = Math.abs(ms) > CLOCK_WRONG_MS ? ` (more than ${describeDuration(CLOCK_WRONG_MS)}: check NTP)` : '';
  return `service clock ${(Math.abs(ms) / 1000).toFixed(1)} s ${sign} this unit${note}`;
}

export interface HumanInput {
  facts: CheckFacts;
  meta: ResponseMeta;
  firmwareVersion: string;
  firmwareSource: string;
  profileId: string;
  profileName: string;
  credentialsSource: string;
}

/** A value the service sent, as one bounded line of printable text: a name may hold newlines or terminal escapes. */
const shown = (v: string, max = 120): string => oneLine(v, max);

export function humanReport(i: HumanInput): string[] {
  const { device: dev } = i.facts;
  const channel = (c: DeviceFacts['channels'][number]): string => `${shown(c.name ?? c.id)} (${[c.id, c.asset_type, c.status].filter((x): x is string => x !== null).map((x) => shown(x, 80)).join(', ')})`;
  const lines = [
    `paired: ${dev.name === null ? '(unnamed)' : shown(dev.name)} (device ${shown(dev.id, 80)})`,
    `project: ${dev.project === null ? '(name not sent)' : shown(dev.project)} (id ${dev.project_id === null ? 'unknown' : shown(dev.project_id, 80)})`,
    `status: ${dev.status === null ? 'unknown' : shown(dev.status, 80)}`,
    `channels: ${dev.channels.length === 0 ? 'none' : dev.channels.map(channel).join('; ')}`,
    `scopes: ${DEVICE_SCOPES.map((s) => `${s} ${i.facts.scopes[s] === true ? 'yes' : i.facts.scopes[s] === false ? 'NO' : 'unknown'}`).join(', ')}`,
    `authorization expires: ${i.facts.expiresAt === null ? 'never' : `${shown(i.facts.expiresAt, 80)}${i.facts.expiresInMs !== null && i.facts.expiresInMs > 0 ? ` (in ${describeDuration(i.facts.expiresInMs)})` : ''}`}`,
    `firmware version sent: ${i.firmwareVersion} (from ${i.firmwareSource})`,
    `profile: ${i.profileId} (${i.profileName})`,
    `token: from ${i.credentialsSource}`,
    `clock: ${describeOffset(i.meta.clockOffsetMs)}`,
  ];
  const rl = describeRateLimit(i.meta.rateLimit);
  if (rl !== undefined) lines.push(`rate limit: ${rl}`);
  return lines.concat(i.facts.warnings.map((w) => `warning: ${w}`));
}
