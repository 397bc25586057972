// Which certificate authorities the agent trusts for the service and for
// storage: the system's (Node's bundled roots, plus NODE_EXTRA_CA_CERTS,
// which Node itself reads at start), and with the `caFile` setting the
// certificates of a private deployment added to them, never replacing them.
//
// One secure context for every connection of both clients, made on first
// use. Given a `ca` list, Node's TLS would build a context per connection
// and parse every certificate of the list into it each time; and a list
// holding tls.rootCertificates parses ~140 roots again (1.5 MiB measured).
// So the context starts as Node's default (its root store, whose parsed
// roots Node keeps once per process) and the extra certificates are added
// to it: Node then copies the store by reference, roots included. Without
// `caFile` nothing is built: Node's default context is the cheapest there is.
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { READ_LIMITS, readBoundedTextSync } from '../lib/bounded-read.js';
import { PEM_CERTIFICATE, type ExtraCas } from '../lib/ca-file.js';

export type { ExtraCas } from '../lib/ca-file.js';

let shared: { key: string; context: tls.SecureContext } | undefined;

/** The one method of Node's native context used here: adding a trusted certificate to its store. */
interface NativeContext {
  addCACert?: (pem: string) => void;
}

/**
 * The secure context trusting the system's roots, NODE_EXTRA_CA_CERTS and
 * `extra`, made on first use and kept for the process (one per distinct
 * set); undefined without extra CAs, where Node's own default is used.
 */
export function secureContextFor(extra: ExtraCas | undefined): tls.SecureContext | undefined {
  if (extra === undefined) return undefined;
  const added = [...extraFromEnvironment(), extra.pem];
  const key = added.join('\n');
  if (shared?.key !== key) shared = { key, context: contextTrusting(added) };
  return shared.context;
}

function contextTrusting(added: string[]): tls.SecureContext {
  const context = tls.createSecureContext();
  const native = (context as unknown as { context?: NativeContext }).context;
  if (typeof native?.addCACert === 'function') {
    for (const pem of added) native.addCACert(pem);
    return context;
  }
  // A Node without the native method: the documented way, roots parsed again.
  return tls.createSecureContext({ ca: [...tls.rootCertificates, ...added] });
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

/** One client's keep-alive agents (the service's or storage's): idle pooled sockets closed after `idleSocketMs`; TLS trusting what this file says. */
export function clientAgents(extra: ExtraCas | undefined, idleSocketMs: number): { http: http.Agent; https: https.Agent } {
  return { http: new http.Agent({ keepAlive: true, timeout: idleSocketMs }), https: httpsAgent(extra, idleSocketMs) };
}

/**
 * What both clients ask of got, whatever the request: no retry of its own
 * (the loops that retry own that, lib/backoff.ts), an error status is an
 * answer for http-errors.ts to type, no redirect followed, and no body
 * decompressed (a compressed body could expand past the size cap after it
 * was checked).
 */
export const GOT_RULES = { retry: { limit: 0 }, throwHttpErrors: false, followRedirect: false, decompress: false } as const;
