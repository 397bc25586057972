// What every answer of the local API is made of, one home for the server
// (server.ts) and its events streams (event-stream.ts).
import { scrub } from '../lib/secrets.js';

/**
 * JSON as it leaves the socket: every string scrubbed of the secrets the
 * agent registered (lib/secrets.ts), the last line of defence the logs and the
 * CLI's output have too, so an error message that echoed a URL or a server's
 * body never hands a token to a UI.
 */
export function wireJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' ? scrub(v) : v));
}
