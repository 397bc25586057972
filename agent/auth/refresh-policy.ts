// When to refresh an access token: at half to three quarters of its
// lifetime (4 to 6 h of the service's 8), drawn at random so a fleet that
// paired together does not refresh together, and leaving hours to retry a
// refresh that fails while the current token still works.
export function refreshDelay(lifetimeMs: number, random: () => number): number {
  return lifetimeMs * (0.5 + 0.25 * random());
}
