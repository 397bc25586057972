// Device-code pairing (RFC 8628): ask for a code, show it, poll until the
// person approves it in the service's app. Codes live at most two minutes,
// so an expired one is replaced until the overall time limit. Every wait is
// on the injected clock and ends at once when the signal aborts (Ctrl-C,
// SIGTERM): nothing is written here, so a cancelled pairing leaves nothing.
import type { ClientCredentials, DeviceCode, OAuthEndpoints, TokenGrant } from '../api/oauth.js';
import { Backoff, retryAfterOf } from '../lib/backoff.js';
import { sleep, type Clock } from '../lib/clock.js';
import { AgentError } from '../lib/errors.js';
import type { PairingProgress } from './events.js';

/** RFC 8628: a slow_down adds five seconds to the polling interval. */
const SLOW_DOWN_STEP_S = 5;

/** What a display needs of a code: everything but the secret device code. */
export type ShownCode = Omit<DeviceCode, 'deviceCode'> & { /** Agent-monotonic time the code expires. */ expiresAt: number };

/** A code in the service's own field names, as every output shows it: `pair --json`'s code line, the daemon's `pairing` event, POST /v1/pair's answer. */
export function codeFields(c: ShownCode): Omit<Extract<PairingProgress, { phase: 'code' }>, 'phase'> {
  return {
    user_code: c.userCode,
    verification_uri: c.verificationUri,
    verification_uri_complete: c.verificationUriComplete,
    expires_in: c.expiresInSeconds,
    interval: c.intervalSeconds,
    ...(c.name !== undefined && { name: c.name }),
  };
}

export type PairingEvent =
  | { type: 'code'; code: ShownCode }
  | { type: 'waiting'; remainingSeconds: number }
  | { type: 'slow-down'; intervalSeconds: number }
  | { type: 'retrying'; error: AgentError };

export interface PairingOptions {
  oauth: OAuthEndpoints;
  client: ClientCredentials;
  clock: Clock;
  random: () => number;
  signal: AbortSignal;
  /** Give up (exit 75) after this long, agent ms, replacing expired codes until then. */
  timeoutMs: number;
  onEvent: (e: PairingEvent) => void;
}

/** Failures worth another try inside the time limit: the network, a 5xx, a 429, a clock NTP may set meanwhile. */
const transient = (e: AgentError): boolean => e.kind === 'network' || e.kind === 'server' || e.kind === 'rate-limited' || e.kind === 'clock';

export async function pairDevice(o: PairingOptions): Promise<TokenGrant> {
  const deadline = o.clock.now() + o.timeoutMs;
  const remaining = (): number => deadline - o.clock.now();
  let codes = 0;
  // A new code that could not be had: [1 s, min(30 s, 2 s * 2^n)], or the 429's Retry-After when longer.
  const failures = new Backoff({ failure: { baseMs: 2_000, capMs: 30_000, floorMs: 1_000 }, random: o.random });
  for (;;) {
    if (codes > 0 && remaining() <= 0) throw timedOut(o.timeoutMs);
    let code: DeviceCode;
    try {
      code = await o.oauth.requestDeviceCode(o.client, o.signal);
      failures.succeeded();
    } catch (err) {
      const e = asAgentError(err, o.signal);
      // The first code failing is reported as it is: the installer is standing there.
      if (codes === 0 || !transient(e)) throw e;
      if (remaining() <= 0) throw timedOut(o.timeoutMs);
      o.onEvent({ type: 'retrying', error: e });
      await sleep(o.clock, Math.min(remaining(), failures.failed(e)), o.signal);
      continue;
    }
    codes++;
    const expiresAt = o.clock.now() + code.expiresInSeconds * 1000;
    const { deviceCode, ...shown } = code;
    o.onEvent({ type: 'code', code: { ...shown, expiresAt } });
    const grant = await pollUntilDone(o, deviceCode, code.intervalSeconds, expiresAt, deadline);
    if (grant !== undefined) return grant;
    if (remaining() <= 0) throw timedOut(o.timeoutMs);
  }
}

/** Polls one code; undefined when it expired (ask for another). */
async function pollUntilDone(o: PairingOptions, deviceCode: string, intervalS: number, expiresAt: number, deadline: number): Promise<TokenGrant | undefined> {
  let interval = Math.max(1, intervalS);
  for (;;) {
    const wait = Math.min(interval * 1000, Math.max(0, deadline - o.clock.now()));
    await sleep(o.clock, wait, o.signal);
    const now = o.clock.now();
    if (now >= deadline) throw timedOut(o.timeoutMs);
    if (now >= expiresAt) return undefined;
    let outcome;
    try {
      outcome = await o.oauth.pollDeviceCode(o.client, deviceCode, o.signal);
    } catch (err) {
      const e = asAgentError(err, o.signal);
      if (!transient(e)) throw e;
      if (e.kind === 'rate-limited') interval = Math.max(interval, Math.ceil(retryAfterOf(e) / 1000));
      o.onEvent({ type: 'retrying', error: e });
      continue;
    }
    if (outcome.kind === 'tokens') return outcome.grant;
    if (outcome.kind === 'expired') return undefined;
    if (outcome.kind === 'slow-down') {
      interval += SLOW_DOWN_STEP_S;
      o.onEvent({ type: 'slow-down', intervalSeconds: interval });
    } else {
      o.onEvent({ type: 'waiting', remainingSeconds: Math.max(0, Math.round((expiresAt - o.clock.now()) / 1000)) });
    }
  }
}

function timedOut(ms: number): AgentError {
  return new AgentError('timeout', `nobody approved the pairing within ${Number((ms / 1000).toPrecision(3))} s; run \`c2c-agent pair\` again (or give --timeout SECONDS)`);
}

/** A cancelled wait rejects with the signal's reason: pass that through untouched. */
function asAgentError(err: unknown, signal: AbortSignal): AgentError {
  if (signal.aborted) throw signal.reason ?? err;
  return err instanceof AgentError ? err : new AgentError('internal', String(err));
}
