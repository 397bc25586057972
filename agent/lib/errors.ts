// Typed errors: every failure the agent can meet is one of these kinds, and
// the CLI maps the kind to a sysexits code (docs/commands.md, "Exit codes (sysexits)").
// Messages are one line, name the bad value and its source, and never carry
// a secret (they pass through scrub() on the way out anyway).

export type ErrorKind =
  | 'usage'
  | 'config'
  | 'unauthorized'
  | 'forbidden'
  | 'rate-limited'
  | 'paused'
  | 'conflict'
  | 'not-found'
  | 'server'
  | 'network'
  | 'protocol'
  | 'unavailable'
  | 'timeout'
  /** A local file system that is full, out of descriptors or failing: may pass by itself. */
  | 'disk'
  /** The other end could not prove it is the service (its certificate), or spoke plain HTTP to https://. */
  | 'tls'
  /** Certificates cannot be checked: this unit's clock is off (before NTP), or a certificate not yet valid by it. */
  | 'clock'
  | 'internal';

export const EXIT = {
  ok: 0,
  internal: 1,
  usage: 64,
  unavailable: 69,
  tempfail: 75,
  protocol: 76,
  noperm: 77,
  config: 78,
} as const;

/** What each exit code means, for --help and the docs. */
export const EXIT_MEANINGS: Record<(typeof EXIT)[keyof typeof EXIT], string> = {
  0: 'ok',
  1: 'internal error',
  64: 'usage',
  69: 'service unavailable',
  75: 'temporary failure',
  76: 'protocol error',
  77: 'not authorized',
  78: 'configuration error',
};

const exitByKind: Record<ErrorKind, number> = {
  usage: EXIT.usage,
  config: EXIT.config,
  unauthorized: EXIT.noperm,
  forbidden: EXIT.noperm,
  'rate-limited': EXIT.tempfail,
  paused: EXIT.tempfail,
  conflict: EXIT.tempfail,
  'not-found': EXIT.protocol,
  server: EXIT.tempfail,
  network: EXIT.unavailable,
  protocol: EXIT.protocol,
  unavailable: EXIT.unavailable,
  // Something that may well work on a second try (a pairing nobody approved in time).
  timeout: EXIT.tempfail,
  disk: EXIT.tempfail,
  // What answered did not prove it is the service: a response the agent
  // cannot accept in the protocol exchange, like a captive portal's 101 (76).
  // The fix is a setting (caFile, the API URL) or the network in between,
  // not a retry.
  tls: EXIT.protocol,
  // Passes by itself once NTP sets the time: a temporary failure (75); the
  // daemon keeps trying and comes online then.
  clock: EXIT.tempfail,
  internal: EXIT.internal,
};

/** The kind a string names when it is one of the agent's (a refusal or an event from the daemon carries one), else undefined. */
export function errorKindOf(kind: unknown): ErrorKind | undefined {
  return typeof kind === 'string' && Object.hasOwn(exitByKind, kind) ? (kind as ErrorKind) : undefined;
}

export interface RateLimitInfo {
  limit?: number;
  remaining?: number;
  windowMs?: number;
}

export class AgentError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly details: {
      status?: number;
      code?: string;
      retryAfterMs?: number;
      rateLimit?: RateLimitInfo;
      /** Server Date minus local wall time, when an HTTP answer carried a Date. */
      clockOffsetMs?: number;
      source?: string;
      cause?: unknown;
    } = {},
  ) {
    super(message);
    this.name = 'AgentError';
  }

  get exitCode(): number {
    return exitByKind[this.kind];
  }

  get status(): number | undefined {
    return this.details.status;
  }

  /** The shape used in --json output and logs. */
  toJSON(): { kind: ErrorKind; message: string; status?: number; code?: string } {
    const out: { kind: ErrorKind; message: string; status?: number; code?: string } = { kind: this.kind, message: this.message };
    if (this.details.status !== undefined) out.status = this.details.status;
    if (this.details.code !== undefined) out.code = this.details.code;
    return out;
  }
}

export const configError = (message: string, source?: string): AgentError =>
  new AgentError('config', message, source === undefined ? {} : { source });

export const usageError = (message: string): AgentError => new AgentError('usage', message);

export function exitCodeOf(err: unknown): number {
  return err instanceof AgentError ? err.exitCode : EXIT.internal;
}
