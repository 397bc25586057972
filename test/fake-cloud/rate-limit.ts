// Leaky-bucket rate limiting, as the service describes it: each request pours
// one unit into a bucket that drains continuously at limit/windowMs units per
// millisecond; a request that would overflow the bucket is refused (429).
// Pure functions of (state, config, now) so the refill arithmetic is testable
// with injected time; RateLimiter only keeps one bucket per key.

export interface BucketConfig {
  limit: number;
  windowMs: number;
}

export interface BucketState {
  level: number;
  at: number;
}

export interface BucketDecision {
  allowed: boolean;
  /** Whole requests that could still be made right now. */
  remaining: number;
  state: BucketState;
  /** Agent ms until one more request would be allowed (0 when allowed). */
  retryAfterMs: number;
}

// Float drain arithmetic (e.g. 60 / 60000 per ms) must not turn an exact
// refill into "one request short".
const EPSILON = 1e-9;

export function drained(state: BucketState | undefined, cfg: BucketConfig, now: number): number {
  if (!state) return 0;
  const elapsed = Math.max(0, now - state.at);
  return Math.max(0, state.level - (elapsed * cfg.limit) / cfg.windowMs);
}

export function take(state: BucketState | undefined, cfg: BucketConfig, now: number): BucketDecision {
  const level = drained(state, cfg, now);
  if (level + 1 > cfg.limit + EPSILON) {
    const overflow = level + 1 - cfg.limit;
    return {
      allowed: false,
      remaining: 0,
      state: { level, at: now },
      retryAfterMs: Math.ceil((overflow * cfg.windowMs) / cfg.limit),
    };
  }
  const next = level + 1;
  return {
    allowed: true,
    remaining: Math.max(0, Math.floor(cfg.limit - next + EPSILON)),
    state: { level: next, at: now },
    retryAfterMs: 0,
  };
}

export interface RateLimitOptions extends BucketConfig {
  /** Per-path overrides, keyed by route pattern (e.g. '/v2/devices/assets'). */
  paths?: Record<string, BucketConfig>;
}

// 100 requests per second per user and path: the top of the service's stated
// range, so a correct agent (heartbeat >= 60 s apart, polling every 5 s,
// a few uploads) never sees 429 unless a test or a fault asks for one, while
// a runaway loop still does.
export const DEFAULT_RATE_LIMIT: RateLimitOptions = { limit: 100, windowMs: 1000 };

export class RateLimiter {
  private readonly buckets = new Map<string, BucketState>();

  constructor(private readonly options: RateLimitOptions) {}

  configFor(route: string): BucketConfig {
    return this.options.paths?.[route] ?? this.options;
  }

  take(user: string, route: string, now: number): BucketDecision & { config: BucketConfig } {
    const key = `${user} ${route}`;
    const config = this.configFor(route);
    const decision = take(this.buckets.get(key), config, now);
    this.buckets.set(key, decision.state);
    return { ...decision, config };
  }
}
