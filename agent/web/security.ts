// The web page's rules, as plain functions and two small stores on the
// Clock, so each is tested alone (test/web/security.test.ts):
//
// - Host: a request is served only when its Host names the camera: one of
//   its addresses (every interface's, and the listen address) or its names
//   (the hostname, hostname.local, localhost). A page of another site whose
//   name was pointed at the camera (DNS rebinding) sends its own name, and is
//   refused. As tailscale's web client does.
// - PIN: compared in constant time (both sides hashed to one length first);
//   wrong PINs limited by PinLimiter: WEB_PAGE.pinTries in a row, then a
//   pause, doubling within a streak (lib/timing.ts), on the injected Clock.
//   Frigate limits its logins the same way.
// - Sessions: a random token in an HttpOnly, SameSite=Strict cookie (Secure,
//   and the __Host- prefix, under HTTPS), kept only in memory (a restart
//   signs everyone out), ended after WEB_PAGE.sessionIdleMs unused; each
//   with its own CSRF token that every write must carry in a header, as
//   OctoPrint does. Only a hash of each token is kept.
// - Headers: no framing (X-Frame-Options DENY and frame-ancestors 'none'), a
//   CSP with no inline script (default-src 'self'), no sniffing, no referrer.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import os from 'node:os';
import type { Clock } from '../lib/clock.js';
import { WEB_PAGE } from '../lib/timing.js';

/** Sent with every answer, the page's and the refusals'. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-frame-options': 'DENY',
  'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=()',
  'cache-control': 'no-store',
};

/** The host a Host header names, lower case, without its port, brackets or a trailing dot; undefined when it is no host. */
export function hostOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const h = header.trim().toLowerCase();
  const m = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/.exec(h) ?? /^([^:[\]\s/@]+?)\.?(?::\d{1,5})?$/.exec(h);
  if (m === null) return undefined;
  const host = m[1]!;
  if (h.startsWith('[') && isIP(host) !== 6) return undefined;
  return host;
}

/** What the camera answers to: its addresses and names (lower case, IPv6 without a zone). */
export interface CameraNames {
  addresses(): readonly string[];
  names(): readonly string[];
}

/** The camera's own: every interface's address (read at each call: an address given by DHCP later counts), the listen address, the hostname, hostname.local and localhost. */
export function cameraNames(listenHost: string, o: { interfaces?: () => ReturnType<typeof os.networkInterfaces>; hostname?: () => string } = {}): CameraNames {
  const interfaces = o.interfaces ?? os.networkInterfaces;
  const hostname = o.hostname ?? os.hostname;
  const wildcard = listenHost === '0.0.0.0' || listenHost === '::';
  return {
    addresses: () => {
      const out = Object.values(interfaces()).flatMap((list) => (list ?? []).map((a) => a.address.toLowerCase().replace(/%.*$/, '')));
      if (!wildcard && isIP(listenHost) !== 0) out.push(listenHost);
      return out;
    },
    names: () => {
      const h = hostname().toLowerCase().replace(/\.$/, '');
      const short = h.split('.')[0]!;
      return [...new Set([h, short, `${short}.local`, 'localhost', ...(isIP(listenHost) === 0 && !wildcard ? [listenHost] : [])])];
    },
  };
}

/** Whether a request with this Host header is for the camera (anything else: refused, DNS rebinding). */
export function hostAllowed(header: string | undefined, camera: CameraNames): boolean {
  const host = hostOf(header);
  if (host === undefined) return false;
  if (isIP(host) !== 0) return camera.addresses().includes(host);
  return camera.names().includes(host);
}

/**
 * Whether a write comes from the page itself, judged by what the browser
 * says of it: an Origin (when sent) of the same host, a Sec-Fetch-Site (when
 * sent) of same-origin. Beside the CSRF token, not instead of it.
 */
export function sameOrigin(headers: { origin?: string | undefined; host?: string | undefined; 'sec-fetch-site'?: string | undefined }): boolean {
  const site = headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return false;
  const origin = headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host.toLowerCase() === (headers.host ?? '').trim().toLowerCase();
  } catch {
    return false;
  }
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** Constant time whatever the two are: both hashed to one length first, so neither the length nor the first differing byte shows in the time. */
export function sameSecret(given: string, real: string): boolean {
  return timingSafeEqual(digest(given), digest(real));
}

/** A PIN as a person types it, the spaces and dashes of a grouped one left out. */
export const normalizePin = (typed: string): string => typed.replace(/[\s-]/g, '');

export type PinVerdict = { kind: 'ok' } | { kind: 'wrong'; triesLeft: number; pausedMs?: number } | { kind: 'paused'; retryInMs: number };

/**
 * Wrong PINs, camera-wide (one limit for everyone: a guesser cannot spread
 * over addresses): WEB_PAGE.pinTries in a row, then a pause; during a pause
 * no PIN is looked at, the right one neither. After a pause the streak goes
 * on: the next wrong tries lead to a pause twice as long, up to
 * pinPauseMaxMs. A right PIN, or an hour without a wrong one, ends the streak.
 */
export class PinLimiter {
  private wrong = 0;
  private pauses = 0;
  private lastWrongAt = -Infinity;
  private pausedUntil = -Infinity;

  constructor(
    private readonly clock: Clock,
    private readonly rules: Record<'pinTries' | 'pinPauseMs' | 'pinPauseMaxMs' | 'pinStreakForgetMs', number> = WEB_PAGE,
  ) {}

  /** A try with `typed` against `real`: ok, wrong (tries left, and the pause it began), or refused unseen during a pause. */
  attempt(typed: string, real: string): PinVerdict {
    const now = this.clock.now();
    if (now < this.pausedUntil) return { kind: 'paused', retryInMs: this.pausedUntil - now };
    if (now - this.lastWrongAt >= this.rules.pinStreakForgetMs) {
      this.wrong = 0;
      this.pauses = 0;
    }
    if (sameSecret(normalizePin(typed), real)) {
      this.wrong = 0;
      this.pauses = 0;
      this.lastWrongAt = -Infinity;
      return { kind: 'ok' };
    }
    this.lastWrongAt = now;
    this.wrong++;
    if (this.wrong < this.rules.pinTries) return { kind: 'wrong', triesLeft: this.rules.pinTries - this.wrong };
    const pausedMs = Math.min(this.rules.pinPauseMaxMs, this.rules.pinPauseMs * 2 ** this.pauses);
    this.pauses++;
    this.wrong = 0;
    this.pausedUntil = now + pausedMs;
    return { kind: 'wrong', triesLeft: 0, pausedMs };
  }

  /** How long the pause in force still lasts (0: none). */
  pausedFor(): number {
    return Math.max(0, this.pausedUntil - this.clock.now());
  }
}

export interface Session {
  /** Sent by the page in X-CSRF-Token with every write. */
  readonly csrf: string;
  lastUsed: number;
}

const token = (): string => randomBytes(32).toString('base64url');

/** The signed-in browsers, in memory: a token's hash to its session; the least recently used goes past WEB_PAGE.maxSessions. */
export class Sessions {
  private readonly byHash = new Map<string, Session>();
  private readonly ended = new Set<(hash: string) => void>();

  constructor(
    private readonly clock: Clock,
    private readonly rules: Record<'sessionIdleMs' | 'maxSessions', number> = WEB_PAGE,
  ) {}

  /** A new session: its token (for the cookie only) and its CSRF token. */
  create(): { token: string; session: Session; id: string } {
    const t = token();
    const session: Session = { csrf: token(), lastUsed: this.clock.now() };
    const id = hashOf(t);
    this.byHash.set(id, session);
    while (this.byHash.size > this.rules.maxSessions) this.end(this.byHash.keys().next().value as string);
    return { token: t, session, id };
  }

  /** The live session of a cookie's token (marked used now), or undefined. */
  find(cookieToken: string | undefined): { id: string; session: Session } | undefined {
    if (cookieToken === undefined || cookieToken === '') return undefined;
    const id = hashOf(cookieToken);
    const session = this.byHash.get(id);
    if (session === undefined) return undefined;
    const now = this.clock.now();
    if (now - session.lastUsed >= this.rules.sessionIdleMs) {
      this.end(id);
      return undefined;
    }
    session.lastUsed = now;
    // Most recently used last: the first is the one to go.
    this.byHash.delete(id);
    this.byHash.set(id, session);
    return { id, session };
  }

  end(id: string): void {
    if (!this.byHash.delete(id)) return;
    for (const fn of this.ended) fn(id);
  }

  endAll(): void {
    for (const id of [...this.byHash.keys()]) this.end(id);
  }

  /** Called with a session's id when it ends (its live-update streams close). */
  onEnd(fn: (id: string) => void): void {
    this.ended.add(fn);
  }

  get size(): number {
    return this.byHash.size;
  }
}

const hashOf = (t: string): string => digest(t).toString('base64url');

/** Whether a write carries its session's CSRF token (X-CSRF-Token), compared in constant time. */
export function csrfOk(session: Pick<Session, 'csrf'>, header: string | string[] | undefined): boolean {
  return typeof header === 'string' && header !== '' && sameSecret(header, session.csrf);
}

/** The session cookie's name: __Host- under HTTPS (the browser then takes it only Secure, Path=/, for this host alone). */
export const cookieName = (https: boolean): string => (https ? '__Host-c2c-session' : 'c2c-session');

/** Set-Cookie for a new session. No Max-Age: it ends with the browser, or after WEB_PAGE.sessionIdleMs unused. */
export function sessionCookie(value: string, https: boolean): string {
  return `${cookieName(https)}=${value}; Path=/; HttpOnly; SameSite=Strict${https ? '; Secure' : ''}`;
}

/** Set-Cookie that ends it. */
export function clearedCookie(https: boolean): string {
  return `${cookieName(https)}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${https ? '; Secure' : ''}`;
}

/** The value of one cookie from a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
