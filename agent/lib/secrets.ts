// The last line of defence for secrets: every value registered here is cut
// out of any text the agent writes (logs, stderr, --json). Field-name
// redaction in the logger catches structured secrets; this catches the ones
// that end up inside messages (an error echoing a URL, a server body...).
const known = new Set<string>();
const MIN_SECRET_LENGTH = 6;

export const REDACTED = '[redacted]';

export function registerSecret(value: string | undefined | null): void {
  if (typeof value === 'string' && value.length >= MIN_SECRET_LENGTH) known.add(value);
}

export function scrub(text: string): string {
  let out = text;
  for (const secret of known) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  return out;
}

/** Keys whose values are secret wherever they appear (logs, JSON output). */
export const SECRET_KEYS = [
  'authorization',
  'access_token',
  'accessToken',
  'refresh_token',
  'refreshToken',
  'client_secret',
  'clientSecret',
  'device_code',
  'deviceCode',
  'token',
];

/** Deep copy of `value` with secret keys replaced, for --json output. */
export function redactObject<T>(value: T): T {
  const keys = new Set(SECRET_KEYS.map((k) => k.toLowerCase()));
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') {
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, keys.has(k.toLowerCase()) ? REDACTED : walk(x)]),
      );
    }
    return typeof v === 'string' ? scrub(v) : v;
  };
  return walk(value) as T;
}
