// Pairing and unpairing by the running daemon as a feature (core/feature.ts):
// POST /v1/pair, DELETE /v1/pair and POST /v1/unpair. A paired, idle camera
// loads none of it: its one unit at start (pairing-host.ts) holds nothing
// until the flow (daemon-pairing.ts, pairing.ts, the grant's checks) loads
// with the first call of one of its routes. Each step goes out on the bus as
// `pairing` (events.ts), which GET /v1/events carries.
//
// The token source (token-source.ts) is the core's (daemon/core.ts), given
// to the features as the `tokens` service.
import type { CredentialsTokenSource } from './token-source.js';
import type { Feature } from '../core/feature.js';
import type { PairingHost } from './pairing-host.js';
import './events.js';

declare module '../core/feature.js' {
  interface FeatureServices {
    /** The token source: the one 401 policy (callRefused) and the one writer of the credentials file (install, forget). */
    tokens: Pick<CredentialsTokenSource, 'callRefused' | 'install' | 'forget'>;
    /** Holds the daemon's pairing flow once a route loaded it. */
    pairing: PairingHost;
  }
}

export const pairing: Feature = {
  name: 'pairing',
  routes: {
    routes: [
      { method: 'POST', path: '/v1/pair', access: 'write' },
      { method: 'DELETE', path: '/v1/pair', access: 'write' },
      { method: 'POST', path: '/v1/unpair', access: 'write' },
    ],
    load: async (ctx) => (await import('./pairing-load.js')).pairingHandlers(ctx),
  },
  build: async (ctx) => (await import('./pairing-host.js')).buildPairingHost(ctx),
};
