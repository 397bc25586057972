// The heart of the agent, as `run` ships it and as the fleet simulator runs it
// (test/fleet/device.ts): the service API, the token source and the
// controller (with its heartbeat scheduler and checks), built in one order
// with no forward reference. The token reaches the API through an
// AccessToken cell the token source writes; the token source and the
// controller talk through the event bus (tokensRefreshed, tokensRejected),
// and the controller publishes its state there (stateChanged, deviceSeen).
// Randomness, the clock and, for the fleet, the HTTP wire are injected.
import type { ClientCredentials } from '../api/oauth.js';
import { createServiceApi, type ServiceApi } from '../api/service.js';
import type { Wire } from '../api/transport.js';
import { AccessToken, CredentialsTokenSource } from '../auth/token-source.js';
import type { Settings } from '../config/types.js';
import type { EventBus } from '../core/event-bus.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { Controller, type ControllerDeps } from './controller.js';
import type { Bounds } from './heartbeat/policy.js';

export interface CoreInput {
  settings: Settings;
  agentVersion: string;
  clock: Clock;
  random: () => number;
  logger: Logger;
  bus: EventBus;
  bounds: Bounds;
  /** The client id and secret a refresh sends; undefined when none is configured. */
  client: () => Promise<ClientCredentials | undefined>;
  /** The controller's facts that come from the process (last attempt, its persistence, info). */
  controller: Pick<ControllerDeps, 'lastAttempt' | 'persistAttempt' | 'info'>;
  /** Replaces the HTTP exchange (the fleet simulator); production never sets it. */
  wire?: Wire;
}

export interface Core {
  api: ServiceApi;
  tokens: CredentialsTokenSource;
  controller: Controller;
}

export function buildCore(i: CoreInput): Core {
  const { settings, clock, random, logger, bus } = i;
  const access = new AccessToken();
  const api = createServiceApi({
    baseUrl: settings.apiUrl,
    token: access.read,
    firmwareVersion: settings.firmwareVersion,
    agentVersion: i.agentVersion,
    clock,
    logger,
    extraCas: settings.extraCas,
    ...(i.wire !== undefined && { wire: i.wire }),
  });
  const tokens = new CredentialsTokenSource(settings, { clock, random, logger, oauth: api.oauth, client: i.client, bus, access });
  const controller = new Controller({ clock, random, logger, api, tokens, bus, bounds: i.bounds, tokenFromEnvironment: settings.token !== undefined, ...i.controller });
  return { api, tokens, controller };
}
