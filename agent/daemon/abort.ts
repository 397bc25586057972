// Small helpers shared by the daemon's request loops.
import type { Clock } from '../lib/clock.js';
import { AgentError } from '../lib/errors.js';
import { ATTEMPT_GUARD_MS } from '../lib/timing.js';

/** One line for logs and status: kind, code or status, message. */
export function describe(e: AgentError | undefined): string {
  if (!e) return 'unknown error';
  const code = e.details.code ?? (e.details.status !== undefined ? String(e.details.status) : undefined);
  return code ? `${e.kind} ${code}: ${e.message}` : `${e.kind}: ${e.message}`;
}

/** Settles when the signal aborts even if the call ignores it, so a stuck client cannot wedge the loop. */
export function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    p.then(resolve, reject);
  });
}

/** One request under our own guard timer, in case the client's timeout does not fire. */
export function guarded<T>(clock: Clock, ac: AbortController, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const guard = clock.setTimer(() => ac.abort(new AgentError('network', 'request timed out', { code: 'ETIMEDOUT' })), ATTEMPT_GUARD_MS);
  return raceAbort(call(ac.signal), ac.signal).finally(() => guard.cancel());
}
