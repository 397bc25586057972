// When the controller asks GET /v2/devices/me again: the re-verify and
// needs-pairing rates, the start-up backoff, and the cheap GET /health
// probes that notice the network coming back long before a 5-minute backoff
// would (a camera that booted without Wi-Fi should be online within seconds
// of the Wi-Fi returning).
import type { Clock, Timer } from '../lib/clock.js';
import { AgentError } from '../lib/errors.js';
import { backoffDelay } from '../lib/backoff.js';
import { guarded } from './abort.js';
import { MAX_RETRY_AFTER_MS, probeDelay } from './heartbeat-policy.js';

export { unreachable } from './heartbeat-policy.js';

const MINUTE = 60_000;

/** The wait before the next start-up check: backoff, or a Retry-After if longer (capped like the scheduler's). */
export function startupRetryDelay(e: AgentError, failures: number, random: () => number): number {
  const wait = backoffDelay({ baseMs: 5_000, capMs: 5 * MINUTE, floorMs: 2_000 }, failures, random);
  const retryAfter = e.kind === 'rate-limited' ? Math.min(Math.max(0, e.details.retryAfterMs ?? 0), MAX_RETRY_AFTER_MS) : 0;
  return Math.max(wait, retryAfter);
}

/** The next re-verify after a good one; paused looks again sooner, so uploads resume soon after the person unpauses. */
export function reverifyDelay(paused: boolean, random: () => number): number {
  return (paused ? 15 : 60) * MINUTE * (0.85 + 0.3 * random());
}

/** In needs-pairing, a low rate: the token will not come back by itself, only a person pairing does that. */
export function pairingCheckDelay(random: () => number): number {
  return (15 + 15 * random()) * MINUTE;
}

/** A check that failed in needs-pairing for another reason than a refusal (the network, say). */
export function pairingRetryDelay(failures: number, random: () => number): number {
  return backoffDelay({ baseMs: 30_000, capMs: 5 * MINUTE, floorMs: 30_000 }, failures, random);
}

/** A failed re-verify while heartbeating: the heartbeats report reachability, so just come back later. */
export function reverifyRetryDelay(random: () => number): number {
  return backoffDelay({ baseMs: 5 * MINUTE, capMs: 15 * MINUTE, floorMs: 2 * MINUTE }, 0, random);
}

/** GET /health every 5 to 30 s until any HTTP answer, then onReachable() once. */
export class HealthProbe {
  private timer: Timer | undefined;
  private inFlight: AbortController | undefined;
  private probes = 0;
  private at: number | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly random: () => number,
    private readonly health: (signal: AbortSignal) => Promise<unknown>,
    private readonly onReachable: () => void,
  ) {}

  get active(): boolean {
    return this.at !== undefined || this.inFlight !== undefined;
  }

  /** The next probe (agent-monotonic), for the watchdog's health check. */
  get nextAt(): number | undefined {
    return this.at;
  }

  start(): void {
    if (this.active) return;
    this.probes = 0;
    this.arm();
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.at = undefined;
    const ac = this.inFlight;
    this.inFlight = undefined;
    ac?.abort(new AgentError('network', 'probe stopped', { code: 'ABORTED' }));
  }

  private arm(): void {
    const ms = probeDelay(this.probes, this.random);
    this.at = this.clock.now() + ms;
    this.timer = this.clock.setTimer(() => void this.probe(), ms);
  }

  private async probe(): Promise<void> {
    this.timer = undefined;
    this.at = undefined;
    const ac = new AbortController();
    this.inFlight = ac;
    let reachable: boolean;
    try {
      await guarded(this.clock, ac, this.health);
      reachable = true;
    } catch (err) {
      // Any HTTP answer, even an error, means the network is back.
      reachable = !(err instanceof AgentError && err.kind === 'network') && !ac.signal.aborted;
    }
    if (this.inFlight !== ac) return; // stopped meanwhile
    this.inFlight = undefined;
    if (reachable) return this.onReachable();
    this.probes++;
    this.arm();
  }
}
