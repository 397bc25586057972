// Which certificate authorities the agent trusts for the service and for
// storage: the system's (Node's bundled roots, plus NODE_EXTRA_CA_CERTS,
// which Node itself reads at start), and with the `caFile` setting the
// certificates of a private deployment added to them, never replacing them.
//
// One secure context for every connection of both clients: given a `ca`
// list, Node's TLS would build a fresh context per connection and parse the
// whole root store (~140 certificates) into it each time; built once here,
// transport.ts and storage.ts share it. Without `caFile` nothing is built:
// Node's default context shares one root store process-wide, the cheapest
// there is.
import https from 'node:https';
import tls from 'node:tls';
import { READ_LIMITS, readBoundedTextSync } from '../lib/bounded-read.js';
import { PEM_CERTIFICATE, type ExtraCas } from '../lib/ca-file.js';

export type { ExtraCas } from '../lib/ca-file.js';

let shared: { pem: string; context: tls.SecureContext } | undefined;

/**
 * The secure context trusting the system's roots plus `extra`, made on first
 * use and kept for the process (one per distinct `extra`); undefined without
 * extra CAs, where Node's own default is used.
 */
export function secureContextFor(extra: ExtraCas | undefined): tls.SecureContext | undefined {
  if (extra === undefined) return undefined;
  if (shared?.pem !== extra.pem) {
    const system = [...tls.rootCertificates, ...extraFromEnvironment()];
    shared = { pem: extra.pem, context: tls.createSecureContext({ ca: [...system, extra.pem] }) };
  }
  return shared.context;
}

/**
 * NODE_EXTRA_CA_CERTS' certificates: Node adds them to its default store
 * only, and a context given a `ca` list starts from that list, so they are
 * added here too rather than silently dropped when `caFile` is also set.
 * Node already warned at start if the file could not be read.
 */
function extraFromEnvironment(): string[] {
  const file = process.env.NODE_EXTRA_CA_CERTS;
  if (file === undefined || file === '') return [];
  try {
    return readBoundedTextSync(file, { what: 'NODE_EXTRA_CA_CERTS file', maxBytes: READ_LIMITS.caFile }).match(PEM_CERTIFICATE) ?? [];
  } catch {
    return [];
  }
}

/**
 * Resumable TLS sessions each client keeps: a socket idle longer than
 * IDLE_SOCKET_MS is closed, so every heartbeat opens a connection, and a
 * resumed session spares the full handshake; the service and storage are one
 * or two hosts each, so a handful is all that is ever used (Node keeps 100).
 */
export const TLS_SESSIONS_KEPT = 4;

/** The kept-alive HTTPS agent of one client (transport or storage), trusting the system's roots plus `extra`. */
export function httpsAgent(extra: ExtraCas | undefined, idleSocketMs: number): https.Agent {
  const secureContext = secureContextFor(extra);
  return new https.Agent({ keepAlive: true, timeout: idleSocketMs, maxCachedSessions: TLS_SESSIONS_KEPT, ...(secureContext !== undefined && { secureContext }) });
}
