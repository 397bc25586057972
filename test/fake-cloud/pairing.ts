// Device-code pairing (RFC 8628 style), token grants and revocation.
import { randomInt } from 'node:crypto';
import { baseUrlOf, json, oauthError, header } from './http.js';
import type { Reply } from './http.js';
import { parseForm } from './forms.js';
import type { Form } from './forms.js';
import type { Ctx, Router } from './router.js';
import { secret } from './state.js';
import type { Clock, CloudState } from './state.js';

export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
export const CODE_LIFETIME_S = 120;
export const POLL_INTERVAL_S = 5;
const DEFAULT_SCOPES = ['asset_create', 'offline'];

interface PendingCode {
  deviceCode: string;
  userCode: string;
  clientId: string;
  scopes: string[];
  createdAt: number;
  expiresAt: number;
  intervalMs: number;
  lastPollAt?: number;
  approved: boolean;
  consumed: boolean;
}

export class Pairing {
  private readonly byDeviceCode = new Map<string, PendingCode>();
  private readonly byUserCode = new Map<string, PendingCode>();
  /** Called when a device's authorization is revoked through the API. */
  onRevoke: (deviceId: string) => void = () => undefined;

  constructor(
    private readonly state: CloudState,
    private readonly clock: Clock,
    private readonly autoApproveSeconds: number | undefined,
  ) {}

  private get toleranceMs(): number {
    return this.clock.toleranceMs;
  }

  /** The person approving a code, typed as shown or not: spaces and dashes (`015 869`, `015-869`) are no part of it. */
  approve(userCode: string): boolean {
    const p = this.byUserCode.get(userCode.replace(/[\s-]/g, ''));
    if (!p || p.consumed || this.clock.now() >= p.expiresAt) return false;
    p.approved = true;
    return true;
  }

  private prune(now: number): void {
    for (const p of this.byDeviceCode.values()) {
      if (p.consumed || now >= p.expiresAt + 60_000) {
        this.byDeviceCode.delete(p.deviceCode);
        if (this.byUserCode.get(p.userCode) === p) this.byUserCode.delete(p.userCode);
      }
    }
  }

  private checkClient(form: Form | undefined): Reply | undefined {
    if (!form) return oauthError('invalid_request');
    if (!form.client_id || form.client_secret === undefined) return oauthError('invalid_request');
    if (form.client_secret !== this.state.config.clientSecret) return oauthError('invalid_client');
    return undefined;
  }

  async deviceCode(ctx: Ctx): Promise<Reply> {
    const form = await parseForm(header(ctx.req, 'content-type'), ctx.body);
    const bad = this.checkClient(form);
    if (bad || !form) return bad ?? oauthError('invalid_request');
    const now = this.clock.now();
    this.prune(now);
    let userCode: string;
    do userCode = String(randomInt(0, 1_000_000)).padStart(6, '0');
    while (this.byUserCode.has(userCode));
    const scopes = (form.scope ?? '').split(/\s+/).filter(Boolean);
    const p: PendingCode = {
      deviceCode: secret('fcd'),
      userCode,
      clientId: form.client_id!,
      scopes: scopes.length > 0 ? scopes : DEFAULT_SCOPES,
      createdAt: now,
      expiresAt: now + CODE_LIFETIME_S * 1000,
      intervalMs: POLL_INTERVAL_S * 1000,
      approved: false,
      consumed: false,
    };
    this.byDeviceCode.set(p.deviceCode, p);
    this.byUserCode.set(userCode, p);
    const known = this.state.byClientId.get(p.clientId);
    if (known !== undefined) ctx.deviceId = known;
    const base = baseUrlOf(ctx.req);
    const qr = header(ctx.req, 'x-client-platypus-enabled') === 'true';
    return json(200, {
      device_code: p.deviceCode,
      user_code: userCode,
      expires_in: CODE_LIFETIME_S,
      interval: POLL_INTERVAL_S,
      name: known !== undefined ? this.state.devices.get(known)!.name : `Camera ${p.clientId.slice(0, 8)}`,
      verification_uri: `${base}/pair`,
      verification_uri_complete: qr ? `${base}/pair?user_code=${userCode}` : null,
    });
  }

  async token(ctx: Ctx): Promise<Reply> {
    const form = await parseForm(header(ctx.req, 'content-type'), ctx.body);
    const bad = this.checkClient(form);
    if (bad || !form) return bad ?? oauthError('invalid_request');
    if (form.grant_type === DEVICE_CODE_GRANT) return this.deviceCodeGrant(ctx, form);
    if (form.grant_type === 'refresh_token') return this.refreshGrant(ctx, form);
    return oauthError(form.grant_type ? 'unsupported_grant_type' : 'invalid_request');
  }

  private deviceCodeGrant(ctx: Ctx, form: Form): Reply {
    if (!form.device_code) return oauthError('invalid_request');
    const p = this.byDeviceCode.get(form.device_code);
    if (!p || p.consumed || p.clientId !== form.client_id) return oauthError('invalid_grant');
    const now = this.clock.now();
    if (now >= p.expiresAt) return oauthError('expired_token');
    if (this.autoApproveSeconds !== undefined && now - p.createdAt >= this.autoApproveSeconds * 1000) p.approved = true;
    if (p.approved) {
      p.consumed = true;
      const existing = this.state.byClientId.get(p.clientId);
      let device = existing === undefined ? undefined : this.state.devices.get(existing);
      if (device) {
        // A new authorization replaces the unit's previous one.
        this.state.revokeDevice(device.id);
        device.scopes = new Set(p.scopes);
        device.authorizedAt = now;
      } else {
        device = this.state.createDevice(p.clientId, p.scopes);
      }
      ctx.deviceId = device.id;
      this.state.seen(device.id, ctx.clientVersion);
      return json(200, this.state.issueTokens(device.id, p.scopes.includes('offline')));
    }
    const early = p.lastPollAt !== undefined && now - p.lastPollAt < p.intervalMs - this.toleranceMs;
    p.lastPollAt = now;
    if (early) {
      p.intervalMs += 5000;
      return oauthError('slow_down');
    }
    return oauthError('authorization_pending');
  }

  private refreshGrant(ctx: Ctx, form: Form): Reply {
    if (!form.refresh_token) return oauthError('invalid_request');
    const rec = this.state.tokens.get(form.refresh_token);
    if (!rec || rec.kind !== 'refresh') return oauthError('invalid_grant');
    const device = this.state.devices.get(rec.deviceId);
    if (!device || device.clientId !== form.client_id) return oauthError('invalid_grant');
    ctx.deviceId = device.id;
    // Single use: a second presentation is invalid_request, as the service answers.
    if (rec.used) return oauthError('invalid_request');
    if (rec.revoked || this.clock.now() >= rec.expiresAt) return oauthError('invalid_grant');
    rec.used = true;
    this.state.seen(device.id, ctx.clientVersion);
    return json(200, this.state.issueTokens(device.id, true));
  }

  async revoke(ctx: Ctx): Promise<Reply> {
    const form = await parseForm(header(ctx.req, 'content-type'), ctx.body);
    const bad = this.checkClient(form);
    if (bad || !form) return bad ?? oauthError('invalid_request');
    if (!form.token) return oauthError('invalid_request');
    const rec = this.state.tokens.get(form.token);
    const device = rec ? this.state.devices.get(rec.deviceId) : undefined;
    // RFC 7009: an unknown token is not an error. Revoking any token of the
    // unit deauthorizes it: every access and refresh token stops working.
    if (device && device.clientId === form.client_id) {
      ctx.deviceId = device.id;
      this.state.revokeDevice(device.id);
      this.onRevoke(device.id);
    }
    return json(200, {});
  }
}

export function pairingRoutes(router: Router, pairing: Pairing): void {
  router
    .add({ method: 'POST', pattern: '/v2/auth/device/code', auth: 'form', handler: (ctx) => pairing.deviceCode(ctx) })
    .add({ method: 'POST', pattern: '/v2/auth/token', auth: 'form', handler: (ctx) => pairing.token(ctx) })
    .add({ method: 'POST', pattern: '/v2/auth/revoke', auth: 'form', handler: (ctx) => pairing.revoke(ctx) });
}
