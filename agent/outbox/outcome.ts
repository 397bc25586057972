// What became of one attempt at an outbox item, and how a failure is
// classified: worth another try (the network, the service having a bad
// moment, a rate limit, an expired token), already so (the service holds
// what we wanted), or never going to work (other 4xx), which is recorded
// with its reason instead of being retried forever.
import { AgentError } from '../lib/errors.js';

export type Outcome =
  | { result: 'done'; note?: string }
  /**
   * `progressed`: the attempt moved the work forward before it failed (a
   * long job such as a real-time upload recorded parts), so the failures
   * before it do not count towards the dispatcher's MAX_ATTEMPTS.
   */
  | { result: 'retry'; error: AgentError; progressed?: boolean }
  | { result: 'dead'; reason: string };

// 'tls' and 'clock': what answered could not be checked to be the service,
// so the item was never delivered; a fixed clock, caFile or network lets it go.
const RETRY_KINDS = new Set(['network', 'server', 'rate-limited', 'timeout', 'unauthorized', 'paused', 'tls', 'clock']);

/**
 * A 2xx whose body cannot be read (cut short, mangled by a proxy, too large)
 * says nothing about the request itself: try again, within the dispatcher's
 * attempt limit. Nor does a 101, a proxy or captive portal switching protocols
 * (api/transport.ts), nor a status HTTP does not have (600 and up, from a
 * broken proxy): the service never answered. A 4xx the agent cannot read is
 * the agent's own mistake, and stays dead.
 */
function unreadAnswer(e: AgentError): boolean {
  const status = e.details.status;
  return e.kind === 'protocol' && status !== undefined && (status < 300 || status > 599);
}

/**
 * `alreadySo` names the answers that mean the work is done (a 409 on a
 * connect, a 404 on a disconnect); everything else that is not worth a retry
 * is dead with its message as the reason.
 */
export function classify(err: unknown, alreadySo: (e: AgentError) => boolean = () => false): Outcome {
  const e = err instanceof AgentError ? err : new AgentError('internal', err instanceof Error ? err.message : String(err));
  if (alreadySo(e)) return { result: 'done', note: `already so: ${e.message}` };
  if (RETRY_KINDS.has(e.kind) || unreadAnswer(e)) return { result: 'retry', error: e };
  return { result: 'dead', reason: e.message };
}
