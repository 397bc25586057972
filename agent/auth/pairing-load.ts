// The pairing routes' handlers and the flow behind them, loaded with the
// first call of POST /v1/pair, DELETE /v1/pair or POST /v1/unpair
// (feature.ts): the daemon's pairing (daemon-pairing.ts), with its own
// client secret and client id, verifying a grant over a client of its own.
import { createServiceApi } from '../api/service.js';
import type { FeatureContext } from '../core/feature.js';
import { handlersOf, type Handler } from '../core/routes.js';
import { getClientId } from './client-id.js';
import { DaemonPairing } from './daemon-pairing.js';
import { registerPairHandlers } from './pair-handlers.js';

export function pairingHandlers(ctx: FeatureContext): Record<string, Handler> {
  const { settings, clock, logger } = ctx;
  const host = ctx.services.get('pairing');
  const tokens = ctx.services.get('tokens');
  if (host === undefined || tokens === undefined) throw new Error('pairing: the daemon has no pairing host or token source');
  const flow = host.adopt(
    new DaemonPairing({
      settings,
      clock,
      random: ctx.random,
      logger,
      bus: ctx.bus,
      oauth: ctx.api.oauth,
      // The grant is verified with its own token before anything uses it: a client of its own, closed after.
      verifier: (accessToken) => createServiceApi({ baseUrl: settings.apiUrl, token: () => accessToken, firmwareVersion: settings.firmwareVersion, agentVersion: ctx.agentVersion, clock, logger, extraCas: settings.extraCas, ...(ctx.wire !== undefined && { wire: ctx.wire }) }),
      clientId: async () => (await getClientId(settings)).clientId,
      credentials: tokens,
    }),
  );
  return handlersOf((routes) => registerPairHandlers(routes, { pairing: flow }));
}
