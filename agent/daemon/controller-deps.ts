// What the controller is given: everything it touches outside itself comes
// in here, so its tests run it on a FakeClock against a fake API.
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { DeviceApi } from '../api/types.js';
import type { TokenSource } from '../auth/token-source.js';
import type { AttemptRecord, Bounds } from './heartbeat/policy.js';
import type { EventBus } from '../core/event-bus.js';

export interface ControllerDeps {
  clock: Clock;
  random: () => number;
  logger: Logger;
  api: DeviceApi;
  /** Where the api's token comes from: reloaded at start-up and on SIGHUP, refreshed after a 401, asked whether a refused request carried an older token, its file watched in needs-pairing. */
  tokens: Pick<TokenSource, 'reload' | 'fingerprint' | 'refresh' | 'reject' | 'sentWithOlderToken'>;
  bounds: Bounds;
  lastAttempt?: AttemptRecord | undefined;
  persistAttempt: (rec: AttemptRecord) => Promise<void>;
  /**
   * Publishes `stateChanged` on every change worth writing and `deviceSeen`
   * for every device record (start-up, re-verify, SIGHUP, reconnection);
   * listens to `tokensRefreshed` and `tokensRejected` while it runs.
   */
  bus: EventBus;
  /** C2C_TOKEN is set: a needs-pairing reason advises what can help then (lib/advice.ts), not pairing. */
  tokenFromEnvironment?: boolean;
  info: { firmwareVersion: string; profile?: string; agentVersion: string; timeScale: number; pid: number; procStart?: string };
}

/** Why a device check (GET /v2/devices/me) runs. */
export type CheckWhy = 'start-up' | 'confirm' | 'periodic' | 'reload' | 'pairing' | 'refreshed' | 'reconnected';
