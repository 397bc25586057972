// The daemon's pairing as the bus and GET /v1/events carry it (merged into
// core's AgentEvents and EventLines).

import { anyObject, bool, count, listOf, nullable, num, obj, optional, str, variant, type ShapeOf } from '../core/shape.js';

const failure = obj({ kind: str, message: str });

/**
 * One step of the daemon's pairing, as the local API's `/v1/events` carries
 * it (fields named as the contract names them), declared once: its type and
 * the check a client reads a `pairing` line with (cli/pair-via-daemon.ts).
 * Never the device code.
 */
export const pairingProgress = variant('phase', {
  code: obj({ user_code: str, verification_uri: str, verification_uri_complete: nullable(str), expires_in: num, interval: num, name: optional(str) }),
  waiting: obj({ expires_in: num }),
  slow_down: obj({ interval: num }),
  retrying: obj({ error: failure }),
  verifying: obj({}),
  /** `unverified`: why the service could not confirm the grant yet (it was stored all the same). */
  paired: obj({ verified: bool, device: nullable(anyObject), warnings: listOf(str), unverified: optional(failure) }),
  failed: obj({ exitCode: count, error: obj({ kind: str, message: str, status: optional(num), code: optional(str) }) }),
  cancelled: obj({}),
});
export type PairingProgress = ShapeOf<typeof pairingProgress>;

declare module '../core/event-bus.js' {
  interface AgentEvents {
    /** The daemon's own pairing moved on (daemon-pairing.ts, started by POST /v1/pair); GET /v1/events carries it as a `pairing` line. */
    pairing: PairingProgress;
  }
}

declare module '../core/event-lines.js' {
  interface EventLines {
    pairing: PairingProgress;
  }
}
