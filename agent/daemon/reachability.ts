// Is the service reachable again? One probe for every loop: while the
// network is down, cheap GET /health calls notice its return within seconds,
// long before a five-minute backoff would (a camera that booted without
// Wi-Fi should be online soon after the Wi-Fi is).
import type { Clock, Timer } from '../lib/clock.js';
import { AgentError } from '../lib/errors.js';
import { backoffDelay } from '../lib/backoff.js';
import { guarded } from './abort.js';

/**
 * Failures where no connection to the service was made: the network or DNS
 * is down, so a cheap GET /health may notice it return long before the
 * backoff would. Anything after connect (ECONNRESET, a truncated body, a
 * proxy resetting one path) or a timeout can fail the same way again while
 * /health answers fine, so those get plain backoff. ECONNABORTED is left out:
 * the stack reports it both before and after connect.
 */
export const CONNECT_FAILURES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ENETDOWN', 'EHOSTDOWN']);

/** Worth a /health probe: the failure was at connect level (see CONNECT_FAILURES). */
export function unreachable(e: { kind: string; details: { code?: string | undefined } } | undefined): boolean {
  return e?.kind === 'network' && e.details.code !== undefined && CONNECT_FAILURES.has(e.details.code);
}

/** How often to ask GET /health while unreachable, so reconnection is noticed within seconds. */
export function probeDelay(probes: number, random: () => number): number {
  return backoffDelay({ baseMs: 10_000, capMs: 30_000, floorMs: 5_000 }, probes, random);
}

/** One GET /health under the request guard: any HTTP answer, even an error, means the network is back. */
export async function probeOnce(clock: Clock, ac: AbortController, health: (signal: AbortSignal) => Promise<unknown>): Promise<boolean> {
  try {
    await guarded(clock, ac, health);
    return true;
  } catch (err) {
    return !(err instanceof AgentError && err.kind === 'network') && !ac.signal.aborted;
  }
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
    const reachable = await probeOnce(this.clock, ac, this.health);
    if (this.inFlight !== ac) return; // stopped meanwhile
    this.inFlight = undefined;
    if (reachable) return this.onReachable();
    this.probes++;
    this.arm();
  }
}
