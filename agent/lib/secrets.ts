// The last line of defence for secrets: every value registered here is cut
// out of any text the agent writes (logs, stderr, --json). Field-name
// redaction in the logger catches structured secrets; this catches the ones
// that end up inside messages (an error echoing a URL, a server body...).
const lasting = new Set<string>();
// Tokens rotate (each refresh brings a new pair) and every upload brings its
// presigned URLs, for as long as the unit runs. Kept without a bound they were
// a slow leak (thousands of strings a year, more with many clips) that every
// scrub() also walked. Only the newest can still be in use; an old one is dead.
export const ROTATING_KEPT = {
  /** The pairs of the last 16 refreshes. */
  tokens: 32,
  /** Every part URL of a few large files (a 2 GiB file in 5 MiB parts has about 400). */
  'upload-urls': 2048,
} as const;
export type RotatingGroup = keyof typeof ROTATING_KEPT;
const rotating = new Map<RotatingGroup, Set<string>>();
const MIN_SECRET_LENGTH = 6;

export const REDACTED = '[redacted]';

/**
 * `rotating`: a value that newer ones replace (access and refresh tokens,
 * presigned upload URLs); the registry keeps the newest of each group
 * (ROTATING_KEPT). Everything else (client secret, C2C_TOKEN, a password in
 * the API URL, a device code) is kept for the life of the process.
 */
export function registerSecret(value: string | undefined | null, opts: { rotating?: RotatingGroup } = {}): void {
  if (typeof value !== 'string' || value.length < MIN_SECRET_LENGTH) return;
  if (opts.rotating === undefined) {
    lasting.add(value);
    return;
  }
  let group = rotating.get(opts.rotating);
  if (group === undefined) rotating.set(opts.rotating, (group = new Set()));
  // Re-registering moves a value to the newest end.
  group.delete(value);
  group.add(value);
  while (group.size > ROTATING_KEPT[opts.rotating]) group.delete(group.values().next().value as string);
}

/** How many values scrub() looks for (tests: the registry stays bounded). */
export function registeredSecretCount(): number {
  return [...rotating.values()].reduce((n, g) => n + g.size, lasting.size);
}

export function scrub(text: string): string {
  let out = text;
  for (const set of [lasting, ...rotating.values()]) {
    for (const secret of set) {
      if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    }
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

const SECRET_KEY_SET = new Set(SECRET_KEYS.map((k) => k.toLowerCase()));
const isSecretKey = (key: string): boolean => SECRET_KEY_SET.has(key.toLowerCase());

/** Deep copy of `value` with secret keys replaced, for --json output. */
export function redactObject<T>(value: T): T {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') {
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, isSecretKey(k) ? REDACTED : walk(x)]));
    }
    return typeof v === 'string' ? scrub(v) : v;
  };
  return walk(value) as T;
}

/** How deep withoutSecretKeys looks: a log line's fields are a few levels at most. */
const LOG_FIELDS_DEPTH = 6;

/**
 * `value` with every secret key's value replaced, for a log line's fields.
 * Arrays and objects are walked, by the own enumerable keys JSON writes
 * (an object with toJSON, a Date or a Buffer, is written by it and left);
 * an object is copied, as a plain one, only when a secret is found in it,
 * so a line without one costs a look at its keys. The registered values
 * inside text are scrub()'s, on the whole line.
 */
export function withoutSecretKeys<T>(value: T, depth = LOG_FIELDS_DEPTH): T {
  if (depth === 0 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((x, i) => {
      const y = withoutSecretKeys(x, depth - 1);
      if (y !== x) (copy ??= value.slice())[i] = y;
    });
    return (copy ?? value) as T;
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return value;
  let copy: Record<string, unknown> | undefined;
  for (const [k, x] of Object.entries(value as Record<string, unknown>)) {
    const y = isSecretKey(k) ? REDACTED : withoutSecretKeys(x, depth - 1);
    if (y !== x) Object.defineProperty((copy ??= copyOf(value)), k, { value: y, enumerable: true, writable: true, configurable: true });
  }
  return (copy ?? value) as T;
}

/**
 * The copy a secret field is replaced in: an object's own enumerable fields
 * as a plain object; an error keeps its prototype and every own field
 * (message, stack, cause), so it is still written as that error.
 */
function copyOf(value: object): Record<string, unknown> {
  if (!(value instanceof Error)) return { ...(value as Record<string, unknown>) };
  const copy = Object.create(Object.getPrototypeOf(value) as object) as Record<string, unknown>;
  for (const k of Reflect.ownKeys(value)) Object.defineProperty(copy, k, Object.getOwnPropertyDescriptor(value, k) as PropertyDescriptor);
  return copy;
}
