// After a device-code grant, before it is stored: GET /v2/devices/me with the
// new token, as the service asks after every new authorization. Shared by
// `c2c-agent pair` (no daemon) and the daemon's own pairing
// (auth/daemon-pairing.ts), so both keep or drop a grant by the same rule.
import type { Device } from '../api/types.js';
import type { DeviceEndpoints } from '../api/device.js';
import { sleep, type Clock } from '../lib/clock.js';
import { AgentError } from '../lib/errors.js';

/** Tries of GET /v2/devices/me with the new token, and the pause between them (agent ms). */
const VERIFY_TRIES = 4;
const VERIFY_PAUSE_MS = 3_000;

// 'paused': the service knows the token and says the device is paused, which the daemon shows.
const TEMPORARY: ReadonlySet<string> = new Set(['network', 'server', 'rate-limited', 'timeout', 'paused']);

export type Verified = { device: Device } | { device?: undefined; error: AgentError };

/**
 * GET /v2/devices/me with the granted token, tried a few times before
 * `deadline` (agent-monotonic). What the last failure was decides what
 * happens to the grant:
 * - refused (401, 403), or an answer that is not the service's (a 101, a
 *   body that is not a device record): thrown, and nothing may be stored;
 * - the network or the service having a bad moment (timeout, 5xx, 429): the
 *   grant is returned unverified and is to be stored all the same. The
 *   service revoked the unit's previous tokens when it issued these, so they
 *   are the only authorization it has; the daemon verifies them when it gets
 *   through.
 */
export async function verifyGrant(api: Pick<DeviceEndpoints, 'getDevice'>, clock: Clock, deadline: number, signal: AbortSignal, again = 'run `c2c-agent pair` again'): Promise<Verified> {
  let last: AgentError | undefined;
  for (let i = 0; i < VERIFY_TRIES; i++) {
    if (i > 0) {
      if (clock.now() + VERIFY_PAUSE_MS >= deadline) break;
      await sleep(clock, VERIFY_PAUSE_MS, signal);
    }
    try {
      return { device: (await api.getDevice(signal)).value };
    } catch (err) {
      if (!(err instanceof AgentError)) throw err;
      last = err;
      if (!TEMPORARY.has(err.kind)) break;
    }
  }
  const e = last as AgentError;
  if (TEMPORARY.has(e.kind)) return { error: e };
  throw new AgentError(e.kind, `approved, but the service did not confirm the new credentials (${e.message}); nothing was stored: ${again}`, e.details);
}

/** The device as `pair --json` and the local API's `paired` event show it. */
export function deviceSummary(d: Device): Record<string, unknown> {
  return { id: d.id, name: d.name ?? null, status: d.status ?? null, project_id: d.project_id ?? d.project?.id ?? null, project: d.project?.name ?? null };
}
