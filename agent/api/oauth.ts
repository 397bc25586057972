// The OAuth endpoints a device uses (RFC 8628 device code, refresh, revoke):
// form posts with no bearer token, answered in OAuth style ({"error": ...}
// on 400). Every secret in an answer (device code, tokens) is registered for
// scrubbing the moment it is parsed, before anything can log it.
import { AgentError } from '../lib/errors.js';
import { registerSecret } from '../lib/secrets.js';
import { oneLine } from '../lib/text.js';
import type { RawResponse, Transport } from './transport.js';
import type { ResponseMeta } from './types.js';
import { parseJsonBody } from './json-body.js';

export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** What a camera asks for: upload, and `offline` for a refresh token. */
export const DEVICE_SCOPE = 'asset_create offline';

export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

export interface DeviceCode {
  /** Secret: never shown, never logged. */
  deviceCode: string;
  userCode: string;
  verificationUri: string;
  verificationUriComplete: string | null;
  expiresInSeconds: number;
  intervalSeconds: number;
  name?: string;
}

export interface TokenGrant {
  accessToken: string;
  refreshToken?: string;
  expiresInSeconds: number;
  tokenType: string;
  scope?: string;
  /** The service's Date minus local wall time at the answer, when it sent a Date. */
  meta: ResponseMeta;
}

/** A device-code poll that did not yield tokens (yet). */
export type PollOutcome = { kind: 'tokens'; grant: TokenGrant } | { kind: 'pending' } | { kind: 'slow-down' } | { kind: 'expired' };

export interface OAuthEndpoints {
  requestDeviceCode(client: ClientCredentials, signal?: AbortSignal): Promise<DeviceCode>;
  pollDeviceCode(client: ClientCredentials, deviceCode: string, signal?: AbortSignal): Promise<PollOutcome>;
  refresh(client: ClientCredentials, refreshToken: string, signal?: AbortSignal): Promise<TokenGrant>;
  /** Revokes the unit's authorization; resolves on any 2xx (an unknown token included). */
  revoke(client: ClientCredentials, token: string, signal?: AbortSignal): Promise<void>;
}

type Rec = Record<string, unknown>;

const FATAL_HINT: Record<string, string> = {
  invalid_client: 'the service refused the client credentials; check --client-secret-file and the client id',
  invalid_grant: 'the service refused the grant (revoked, expired or unknown); run `c2c-agent pair`',
  invalid_request: 'the service refused the request (a refresh token used twice is refused like this); run `c2c-agent pair`',
  access_denied: 'the person declined the pairing; run `c2c-agent pair` to try again',
};

/** The OAuth error code of a 4xx answer, if it is one. */
function oauthErrorOf(res: RawResponse): string | undefined {
  if (res.status < 400 || res.status > 499) return undefined;
  try {
    const body = parseJsonBody(res.body) as unknown;
    const code = body !== null && typeof body === 'object' ? (body as Rec).error : undefined;
    return typeof code === 'string' && /^[a-z_]{1,64}$/.test(code) ? code : undefined;
  } catch {
    return undefined;
  }
}

/** A refused OAuth call as a typed error: invalid_client is configuration (78), the rest authorization (77). */
function refusal(res: RawResponse, code: string): AgentError {
  const hint = FATAL_HINT[code] ?? 'run `c2c-agent pair`';
  const kind = code === 'invalid_client' ? 'config' : 'unauthorized';
  return new AgentError(kind, `${res.what}: ${code} (${hint})`, { status: res.status, code, source: res.what, rateLimit: res.meta.rateLimit });
}

function field(res: RawResponse, rec: Rec, key: string, type: 'string' | 'number', optional = false): unknown {
  const v = rec[key];
  if ((v === undefined || v === null) && optional) return undefined;
  if (typeof v !== type || (type === 'number' && !Number.isFinite(v)) || (type === 'string' && v === '')) {
    throw new AgentError('protocol', `${res.what}: field '${key}' is not a ${type === 'string' ? 'non-empty string' : 'number'}`, {
      status: res.status,
      source: res.what,
    });
  }
  return v;
}

function json2xx(t: Transport, res: RawResponse): Rec {
  const value = t.readJson(res);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new AgentError('protocol', `${res.what}: answer is not a JSON object`, { status: res.status, source: res.what });
  }
  return value as Rec;
}

/**
 * No lifetime the service gives comes near ten years; a larger one (or
 * 1e308) is no answer of the service's, and would not even make a date.
 */
const MAX_LIFETIME_S = 10 * 365 * 24 * 3600;

function grantOf(t: Transport, res: RawResponse): TokenGrant {
  const rec = json2xx(t, res);
  // Registered before validation: a half-valid answer must not leak either.
  for (const k of ['access_token', 'refresh_token']) if (typeof rec[k] === 'string') registerSecret(rec[k] as string, { rotating: 'tokens' });
  const grant: TokenGrant = {
    accessToken: field(res, rec, 'access_token', 'string') as string,
    expiresInSeconds: field(res, rec, 'expires_in', 'number') as number,
    tokenType: (field(res, rec, 'token_type', 'string', true) as string | undefined) ?? 'bearer',
    meta: res.meta,
  };
  const refresh = field(res, rec, 'refresh_token', 'string', true) as string | undefined;
  if (refresh !== undefined) grant.refreshToken = refresh;
  const scope = field(res, rec, 'scope', 'string', true) as string | undefined;
  if (scope !== undefined) grant.scope = scope;
  if (!(grant.expiresInSeconds > 0 && grant.expiresInSeconds <= MAX_LIFETIME_S)) {
    throw new AgentError('protocol', `${res.what}: expires_in ${grant.expiresInSeconds} is not a lifetime in seconds (1 to ${MAX_LIFETIME_S})`, { status: res.status, source: res.what });
  }
  return grant;
}

const form = (client: ClientCredentials, rest: Record<string, string>): Record<string, string> => ({
  client_id: client.clientId,
  client_secret: client.clientSecret,
  ...rest,
});

export function oauthEndpoints(t: Transport): OAuthEndpoints {
  const post = (path: string, body: Record<string, string>, signal?: AbortSignal, headers?: Record<string, string>): Promise<RawResponse> =>
    t.request({ method: 'POST', path, auth: false, form: body, ...(headers ? { headers } : {}), ...(signal ? { signal } : {}) });

  const failure = (res: RawResponse): AgentError => {
    const code = oauthErrorOf(res);
    return code !== undefined ? refusal(res, code) : t.errorFor(res);
  };

  return {
    async requestDeviceCode(client, signal) {
      // The header asks for verification_uri_complete, the URL a QR code can carry.
      const res = await post('/v2/auth/device/code', form(client, { scope: DEVICE_SCOPE }), signal, { 'x-client-platypus-enabled': 'true' });
      if (res.status < 200 || res.status > 299) throw failure(res);
      const rec = json2xx(t, res);
      if (typeof rec.device_code === 'string') registerSecret(rec.device_code);
      const userCode = field(res, rec, 'user_code', 'string') as string;
      const out: DeviceCode = {
        deviceCode: field(res, rec, 'device_code', 'string') as string,
        userCode: oneLine(userCode, 32),
        verificationUri: field(res, rec, 'verification_uri', 'string') as string,
        verificationUriComplete: (field(res, rec, 'verification_uri_complete', 'string', true) as string | undefined) ?? null,
        expiresInSeconds: field(res, rec, 'expires_in', 'number') as number,
        intervalSeconds: (field(res, rec, 'interval', 'number', true) as number | undefined) ?? 5,
      };
      const name = field(res, rec, 'name', 'string', true) as string | undefined;
      if (name !== undefined) out.name = oneLine(name, 120);
      if (!(out.expiresInSeconds > 0 && out.expiresInSeconds <= MAX_LIFETIME_S) || !(out.intervalSeconds >= 0 && out.intervalSeconds <= MAX_LIFETIME_S)) {
        throw new AgentError('protocol', `${res.what}: expires_in ${out.expiresInSeconds} or interval ${out.intervalSeconds} is not a time in seconds the service would give`, { status: res.status, source: res.what });
      }
      return out;
    },

    async pollDeviceCode(client, deviceCode, signal) {
      const res = await post('/v2/auth/token', form(client, { grant_type: DEVICE_CODE_GRANT, device_code: deviceCode }), signal);
      if (res.status >= 200 && res.status <= 299) return { kind: 'tokens', grant: grantOf(t, res) };
      const code = oauthErrorOf(res);
      if (code === 'authorization_pending') return { kind: 'pending' };
      if (code === 'slow_down') return { kind: 'slow-down' };
      if (code === 'expired_token') return { kind: 'expired' };
      throw failure(res);
    },

    async refresh(client, refreshToken, signal) {
      const res = await post('/v2/auth/token', form(client, { grant_type: 'refresh_token', refresh_token: refreshToken }), signal);
      if (res.status >= 200 && res.status <= 299) return grantOf(t, res);
      throw failure(res);
    },

    async revoke(client, token, signal) {
      const res = await post('/v2/auth/revoke', form(client, { token }), signal);
      if (res.status < 200 || res.status > 299) throw failure(res);
    },
  };
}
