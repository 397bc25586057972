// What the rest of the agent sees of the service. The got-based client in
// service.ts (over transport.ts) implements DeviceApi; the daemon's tests fake it.
import type { RateLimitInfo } from '../lib/errors.js';

export interface DeviceChannel {
  id: string;
  name?: string;
  asset_type?: string;
  status?: string;
  [key: string]: unknown;
}

export interface DeviceAuthorization {
  id?: string;
  expires_at?: string | null;
  scopes?: Record<string, unknown>;
  [key: string]: unknown;
}

/** The Device record (`project_device`) after validation: unknown fields kept. */
export interface Device {
  _type?: string;
  id: string;
  name?: string;
  status?: string;
  project_id?: string;
  project?: { id?: string; name?: string; [key: string]: unknown };
  last_seen_at?: string;
  last_known_firmware_version?: string;
  asset_type?: string;
  channels?: DeviceChannel[];
  authorization?: DeviceAuthorization;
  [key: string]: unknown;
}

/** Facts every response carries, whatever its status. */
export interface ResponseMeta {
  status: number;
  rateLimit: RateLimitInfo;
  /** server Date minus local wall clock, ms; undefined when the server sent no Date. */
  clockOffsetMs?: number;
  /** Real ms from sending the request to its answer's head (the status document's network.serviceRttMs). */
  rttMs?: number;
  /** Wall epoch ms the answer came (network.lastContactAt). */
  receivedAt?: number;
}

export interface ApiResult<T> {
  value: T;
  meta: ResponseMeta;
}

/**
 * Device operations. Every method rejects with an AgentError (kind
 * unauthorized, forbidden, rate-limited, server, network, protocol, ...);
 * none retries on its own: callers own their retry loops.
 */
export interface DeviceApi {
  getDevice(signal?: AbortSignal): Promise<ApiResult<Device>>;
  heartbeat(signal?: AbortSignal): Promise<ApiResult<void>>;
  health(signal?: AbortSignal): Promise<ApiResult<{ status: string }>>;
}
