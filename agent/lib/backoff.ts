// Exponential backoff with full jitter (AWS architecture blog): the delay is
// uniform in [floor, min(cap, base * 2^attempt)], so a fleet that lost the
// network together does not come back together.
export interface BackoffPolicy {
  baseMs: number;
  capMs: number;
  floorMs?: number;
}

export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const floor = policy.floorMs ?? 0;
  const ceiling = Math.max(floor, Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(attempt, 30)));
  return floor + random() * (ceiling - floor);
}
