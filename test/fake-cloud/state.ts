// Devices, their tokens and the records GET /v2/devices/me returns.
// All times are fake agent-time ms since the fake started (Clock.now()).
import { randomBytes, randomUUID, createHash } from 'node:crypto';

export interface Clock {
  /** Agent-time ms since the fake started. */
  now(): number;
  /** ISO 8601 wall time of an agent-time instant (start wall time + agent ms). */
  iso(t: number): string;
  timeScale: number;
  /**
   * Slack for timer jitter in agent ms, where the fake judges timing (the
   * referee's 60 s, a pairing poll's interval): on real time max(50 ms, 2 real
   * ms), at --time-scale N one real ms being N agent ms; none on virtual time.
   */
  toleranceMs: number;
  /** Runs fn after `agentMs` of agent time: on virtual time its timers, else a real timer of agentMs / timeScale. */
  setTimer?(fn: () => void, agentMs: number): { cancel(): void };
}

/**
 * Time the fake does not own (the clock seam): agent ms now and timers on the
 * same time line, the one virtual clock a test shares with the daemon it runs
 * in-process (test/support/virtual-clock.ts). Nothing moves it but the test.
 */
export interface VirtualTime {
  now(): number;
  setTimer(fn: () => void, agentMs: number): { cancel(): void };
}

/**
 * The fake's clock: real time (performance.now() * timeScale) by default; a
 * function gives agent ms moved by hand (unit tests of the fake; its delays
 * stay on real timers and its tolerances as on real time); a VirtualTime gives
 * both the time and the timers, exactly.
 */
export function makeClock(timeScale: number, source?: (() => number) | VirtualTime, wallStart?: number): Clock {
  const startWall = wallStart ?? Date.now();
  const iso = (t: number): string => new Date(startWall + t).toISOString();
  if (source !== undefined && typeof source !== 'function') {
    return { now: () => source.now(), iso, timeScale, toleranceMs: 0, setTimer: (fn, ms) => source.setTimer(fn, ms) };
  }
  const startPerf = performance.now();
  const now = source ?? (() => (performance.now() - startPerf) * timeScale);
  return { now, iso, timeScale, toleranceMs: Math.max(50, 2 * timeScale) };
}

export const ONLINE_WINDOW_MS = 5 * 60_000;

export const SCOPE_NAMES = [
  'account_read', 'action_create', 'action_delete', 'action_read', 'action_update', 'asset_create',
  'asset_delete', 'asset_read', 'asset_update', 'auditlog_read', 'comment_create', 'comment_delete',
  'comment_read', 'comment_update', 'device_connect', 'offline', 'presentation_create',
  'presentation_delete', 'presentation_read', 'presentation_update', 'project_create', 'project_delete',
  'project_read', 'project_update', 'reviewlink_create', 'reviewlink_delete', 'reviewlink_read',
  'reviewlink_update', 'team_create', 'team_read', 'team_update', 'webhook_create', 'webhook_delete',
  'webhook_read', 'webhook_update',
] as const;

export interface ChannelState {
  id: string;
  deviceModelId: string;
  externalIndex: number;
  assetType: 'video' | 'audio' | 'data';
  name: string;
  insertedAt: number;
}

export interface DeviceState {
  id: string;
  name: string;
  clientId: string;
  projectId: string;
  projectName: string;
  insertedAt: number;
  updatedAt: number;
  lastSeenAt?: number;
  firmware?: string;
  paused: boolean;
  scopes: Set<string>;
  authorizationId: string;
  authorizedAt: number;
  /** Set by the person (admin): the authorization ends then, tokens and all. */
  authorizationExpiresAt?: number;
  channels: ChannelState[];
}

export interface TokenRecord {
  kind: 'access' | 'refresh';
  deviceId: string;
  expiresAt: number;
  revoked: boolean;
  used: boolean;
}

export interface IssuedTokens {
  access_token: string;
  expires_in: number;
  refresh_token?: string;
  token_type: 'bearer';
  scope: string;
}

export type TokenState = 'valid' | 'used' | 'revoked' | 'expired' | 'unknown';

export type BearerCheck = { deviceId?: string; valid: boolean };

export function secret(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('base64url')}`;
}

/** A short, non-reversible tag for secrets that must stay recognisable in logs. */
export function shortHash(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 12);
}

export interface StateConfig {
  tokenLifetimeSeconds: number;
  refreshLifetimeSeconds: number;
  clientSecret: string;
}

export class CloudState {
  readonly devices = new Map<string, DeviceState>();
  readonly byClientId = new Map<string, string>();
  /** Keyed by the token itself: lookups are per request; nothing here is ever logged. */
  readonly tokens = new Map<string, TokenRecord>();
  readonly owner = { id: randomUUID(), name: 'Fake Owner', email: 'owner@fake-cloud.invalid', accountId: randomUUID() };
  readonly project = { id: randomUUID(), name: 'Fake Project' };

  constructor(private readonly clock: Clock, readonly config: StateConfig) {}

  createDevice(clientId: string, scopes: Iterable<string>, name?: string): DeviceState {
    const t = this.clock.now();
    const id = randomUUID();
    const device: DeviceState = {
      id,
      name: name ?? `Camera ${clientId.slice(0, 8)}`,
      clientId,
      projectId: this.project.id,
      projectName: this.project.name,
      insertedAt: t,
      updatedAt: t,
      paused: false,
      scopes: new Set(scopes),
      authorizationId: randomUUID(),
      authorizedAt: t,
      channels: [],
    };
    this.devices.set(id, device);
    this.byClientId.set(clientId, id);
    return device;
  }

  issueTokens(deviceId: string, withRefresh: boolean): IssuedTokens {
    const t = this.clock.now();
    const accessToken = secret('fca');
    const lifetime = this.config.tokenLifetimeSeconds;
    this.tokens.set(accessToken, { kind: 'access', deviceId, expiresAt: t + lifetime * 1000, revoked: false, used: false });
    const out: IssuedTokens = {
      access_token: accessToken,
      expires_in: lifetime,
      token_type: 'bearer',
      scope: [...(this.devices.get(deviceId)?.scopes ?? [])].join(' '),
    };
    if (withRefresh) {
      const refreshToken = secret('fcr');
      const expiresAt = t + this.config.refreshLifetimeSeconds * 1000;
      this.tokens.set(refreshToken, { kind: 'refresh', deviceId, expiresAt, revoked: false, used: false });
      out.refresh_token = refreshToken;
    }
    return out;
  }

  /** Which device a bearer header names (even an expired or revoked token), and whether it is valid now. */
  checkBearer(authorization: string | undefined): BearerCheck {
    if (!authorization || !/^bearer /i.test(authorization)) return { valid: false };
    const rec = this.tokens.get(authorization.slice(7).trim());
    if (!rec) return { valid: false };
    const d = this.devices.get(rec.deviceId);
    const now = this.clock.now();
    const authorized = d !== undefined && (d.authorizationExpiresAt === undefined || now < d.authorizationExpiresAt);
    const valid = rec.kind === 'access' && !rec.revoked && now < rec.expiresAt && authorized;
    return { deviceId: rec.deviceId, valid };
  }

  /**
   * Test-only introspection: what the fake would make of this token now.
   * 'unknown' (never issued), 'revoked', 'used' (a refresh token already
   * presented), 'expired', else 'valid'; checked in that order.
   */
  tokenState(token: string): TokenState {
    const rec = this.tokens.get(token);
    if (!rec) return 'unknown';
    if (rec.revoked) return 'revoked';
    if (rec.used) return 'used';
    return this.clock.now() >= rec.expiresAt ? 'expired' : 'valid';
  }

  revokeDevice(deviceId: string): void {
    for (const rec of this.tokens.values()) if (rec.deviceId === deviceId) rec.revoked = true;
  }

  seen(deviceId: string, clientVersion: string | undefined): void {
    const d = this.devices.get(deviceId);
    if (!d) return;
    d.lastSeenAt = this.clock.now();
    // The service treats a missing x-client-version as 0.0.0.
    d.firmware = clientVersion ?? '0.0.0';
  }

  status(d: DeviceState): 'online' | 'offline' | 'paused' {
    if (d.paused) return 'paused';
    return d.lastSeenAt !== undefined && this.clock.now() - d.lastSeenAt < ONLINE_WINDOW_MS ? 'online' : 'offline';
  }

  deviceJson(deviceId: string): Record<string, unknown> | undefined {
    const d = this.devices.get(deviceId);
    if (!d) return undefined;
    const iso = this.clock.iso;
    const status = this.status(d);
    const scopes: Record<string, unknown> = { id: d.authorizationId };
    for (const s of SCOPE_NAMES) scopes[s] = d.scopes.has(s);
    const channels = d.channels.map((c) => this.channelJson(d, c));
    return {
      _type: 'project_device',
      id: d.id,
      name: d.name,
      status,
      project_id: d.projectId,
      project: { _type: 'project', id: d.projectId, name: d.projectName },
      asset_type: 'video',
      creator_id: this.owner.id,
      deleted_at: null,
      device_id: d.clientId,
      inserted_at: iso(d.insertedAt),
      updated_at: iso(Math.max(d.updatedAt, d.lastSeenAt ?? 0)),
      last_seen_at: d.lastSeenAt === undefined ? null : iso(d.lastSeenAt),
      last_known_firmware_version: d.firmware ?? null,
      timezone: 'UTC',
      path_asset_type: 'video',
      path_name: 'Camera',
      required_metadata_attributes: [],
      channels,
      channel_count: channels.length,
      authorization: {
        _type: 'project_device_authorization',
        creator: { _type: 'user', id: this.owner.id, name: this.owner.name },
        creator_id: this.owner.id,
        id: d.authorizationId,
        inserted_at: iso(d.authorizedAt),
        project_device_id: d.id,
        scopes,
        expires_at: d.authorizationExpiresAt === undefined ? null : iso(d.authorizationExpiresAt),
      },
    };
  }

  channelJson(d: DeviceState, c: ChannelState): Record<string, unknown> {
    const status = this.status(d) === 'online' ? 'online' : 'offline';
    return {
      _type: 'project_device_channel',
      id: c.id,
      actor_id: this.owner.id,
      asset_type: c.assetType,
      device_id: d.id,
      external_index: c.externalIndex,
      inserted_at: this.clock.iso(c.insertedAt),
      name: c.name,
      project_id: d.projectId,
      project_device_id: d.id,
      real_time_logging_capable: false,
      status,
      updated_at: this.clock.iso(c.insertedAt),
      device_model_id: c.deviceModelId,
    };
  }

  userJson(): Record<string, unknown> {
    const t = this.clock.iso(0);
    return {
      _type: 'user',
      id: this.owner.id,
      name: this.owner.name,
      email: this.owner.email,
      account_id: this.owner.accountId,
      timezone_value: 'UTC',
      inserted_at: t,
      updated_at: t,
      from_idp_a: false,
      from_idp_b: false,
      integrations: [],
      roles: { id: this.owner.id, admin: false, sales: false, support: false, service_desk: false },
    };
  }
}
