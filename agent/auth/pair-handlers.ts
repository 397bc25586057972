// POST /v1/pair, DELETE /v1/pair, POST /v1/unpair: pairing steered by the
// camera's UI or the CLI, done by the daemon (auth/daemon-pairing.ts) with
// its own client secret. The answers carry the code a person is meant to see
// and never the device code; progress goes out on GET /v1/events as
// `pairing` lines.
//
// Additions to the contract (docs/local-api.md): POST /v1/pair takes an
// optional `{"timeoutSeconds": N}`; DELETE /v1/pair answers `cancelled`
// (false when no pairing was under way; 409 once the approved tokens are
// being stored); POST /v1/unpair takes an optional `{"local": true}` (forget
// here without revoking) and answers `removed` and `warnings` beside
// `revoked`. A refusal's error carries the agent's error kind (config,
// network, unauthorized...) so the CLI exits with the code it always did.
import type { DaemonPairing } from './daemon-pairing.js';
import { PAIRING_TIMEOUT_MAX_MS } from '../lib/timing.js';
import { objectBody } from '../localapi/body.js';
import { ApiError, apiErrorOf, badRequest, type HandlerMap } from '../core/routes.js';

export { apiErrorOf };

export interface PairHandlerDeps {
  pairing: Pick<DaemonPairing, 'begin' | 'cancel' | 'unpair'>;
}

/** POST /v1/pair's optional `timeoutSeconds`: a positive number of seconds, at most a day. */
function timeoutOf(body: Record<string, unknown>): number | undefined {
  const t = body.timeoutSeconds;
  if (t === undefined) return undefined;
  if (typeof t !== 'number' || !Number.isFinite(t) || t <= 0 || t * 1000 > PAIRING_TIMEOUT_MAX_MS) throw badRequest(`timeoutSeconds ${JSON.stringify(t)} must be a number of seconds above 0 and at most ${PAIRING_TIMEOUT_MAX_MS / 1000}`);
  return t * 1000;
}

export function registerPairHandlers(routes: HandlerMap, d: PairHandlerDeps): void {
  routes.add('POST', '/v1/pair', 'write', async (req) => {
    const body = objectBody(req.body, { optional: true });
    const timeoutMs = timeoutOf(body);
    try {
      const { phase: _phase, ...code } = await d.pairing.begin(timeoutMs);
      return { status: 202, body: code };
    } catch (err) {
      throw apiErrorOf(err);
    }
  });

  routes.add('DELETE', '/v1/pair', 'write', () => {
    const r = d.pairing.cancel();
    if (r === 'too-late') throw new ApiError(409, 'conflict', 'the pairing was approved and its credentials are being stored; it can no longer be cancelled (unpair instead)');
    return { status: 200, body: r === 'cancelled' ? { cancelled: true } : { cancelled: false, reason: 'no pairing is under way' } };
  });

  routes.add('POST', '/v1/unpair', 'write', async (req) => {
    const body = objectBody(req.body, { optional: true });
    if (body.local !== undefined && typeof body.local !== 'boolean') throw badRequest(`local ${JSON.stringify(body.local)} must be true or false`);
    try {
      return { status: 200, body: await d.pairing.unpair(body.local === true) };
    } catch (err) {
      throw apiErrorOf(err);
    }
  });
}
