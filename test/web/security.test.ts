// The web page's rules, one at a time (agent/web/security.ts): the Host
// check, the same-origin check, the constant-time compare, the PIN limiter on
// a FakeClock, sessions and their CSRF token, the cookie and the headers.
import { describe, expect, it } from '@jest/globals';
import { WEB_PAGE } from '../../agent/lib/timing.js';
import {
  cameraNames,
  clearedCookie,
  cookieValue,
  csrfOk,
  hostAllowed,
  hostOf,
  normalizePin,
  PinLimiter,
  sameOrigin,
  sameSecret,
  SECURITY_HEADERS,
  sessionCookie,
  Sessions,
} from '../../agent/web/security.js';
import { FakeClock } from '../support/fake-clock.js';

const IFACES = {
  lo: [{ address: '127.0.0.1', family: 'IPv4', internal: true }, { address: '::1', family: 'IPv6', internal: true }],
  wlan0: [{ address: '192.168.1.20', family: 'IPv4', internal: false }, { address: 'fe80::1%wlan0', family: 'IPv6', internal: false }],
} as unknown as ReturnType<typeof import('node:os').networkInterfaces>;
const camera = cameraNames('0.0.0.0', { interfaces: () => IFACES, hostname: () => 'cam-7' });

describe('the Host check (DNS rebinding)', () => {
  it.each([
    ['192.168.1.20:8080'],
    ['192.168.1.20'],
    ['127.0.0.1:8080'],
    ['[::1]:8080'],
    ['[fe80::1]:8080'],
    ['cam-7:8080'],
    ['CAM-7.local:8080'],
    ['cam-7.local.'],
    ['localhost:8080'],
  ])('%s is the camera', (host) => {
    expect(hostAllowed(host, camera)).toBe(true);
  });

  it.each([
    ['evil.example:8080'],
    ['192.168.1.21:8080'],
    ['cam-7.evil.example'],
    ['192.168.1.20.nip.io'],
    ['[::2]:8080'],
    [''],
    ['192.168.1.20:8080@evil'],
    ['a b'],
  ])('%j is refused', (host) => {
    expect(hostAllowed(host, camera)).toBe(false);
  });

  it('no Host at all is refused', () => {
    expect(hostAllowed(undefined, camera)).toBe(false);
  });

  it('an address given later by DHCP counts at once (the interfaces are read at each look)', () => {
    let ifaces = {} as typeof IFACES;
    const later = cameraNames('0.0.0.0', { interfaces: () => ifaces, hostname: () => 'cam' });
    expect(hostAllowed('10.0.0.5:80', later)).toBe(false);
    ifaces = { eth0: [{ address: '10.0.0.5', family: 'IPv4', internal: false }] } as unknown as typeof IFACES;
    expect(hostAllowed('10.0.0.5:80', later)).toBe(true);
  });

  it('a listen address or name of its own counts', () => {
    expect(hostAllowed('10.9.9.9:80', cameraNames('10.9.9.9', { interfaces: () => ({}), hostname: () => 'x' }))).toBe(true);
    expect(hostAllowed('cam.lan:80', cameraNames('cam.lan', { interfaces: () => ({}), hostname: () => 'x' }))).toBe(true);
  });

  it('hostOf takes the host out of a header', () => {
    expect([hostOf('A.B:1'), hostOf('[::1]:80'), hostOf('[nope]:80'), hostOf('x/y')]).toEqual(['a.b', '::1', undefined, undefined]);
  });
});

describe('same origin', () => {
  it('takes no Origin, or one for the same host; refuses another site', () => {
    expect(sameOrigin({ host: '192.168.1.20:8080' })).toBe(true);
    expect(sameOrigin({ host: '192.168.1.20:8080', origin: 'http://192.168.1.20:8080' })).toBe(true);
    expect(sameOrigin({ host: '192.168.1.20:8080', origin: 'http://evil.example' })).toBe(false);
    expect(sameOrigin({ host: '192.168.1.20:8080', origin: 'null' })).toBe(false);
    expect(sameOrigin({ host: '192.168.1.20:8080', 'sec-fetch-site': 'cross-site' })).toBe(false);
    expect(sameOrigin({ host: '192.168.1.20:8080', 'sec-fetch-site': 'same-site' })).toBe(false);
    expect(sameOrigin({ host: '192.168.1.20:8080', 'sec-fetch-site': 'same-origin' })).toBe(true);
  });
});

describe('secrets compared', () => {
  it('in constant time, whatever their lengths', () => {
    expect(sameSecret('12345678', '12345678')).toBe(true);
    expect(sameSecret('1234567', '12345678')).toBe(false);
    expect(sameSecret('', '12345678')).toBe(false);
    expect(sameSecret('123456789', '12345678')).toBe(false);
  });

  it('a PIN typed grouped is the same PIN', () => {
    expect(normalizePin(' 1234 5678 ')).toBe('12345678');
    expect(normalizePin('1234-5678')).toBe('12345678');
  });
});

describe('the PIN limiter, on the Clock', () => {
  const PIN = '12345678';

  it(`${WEB_PAGE.pinTries} wrong PINs, then a pause in which no PIN is looked at, the right one neither`, async () => {
    const clock = new FakeClock();
    const l = new PinLimiter(clock);
    for (let i = 1; i < WEB_PAGE.pinTries; i++) expect(l.attempt('00000000', PIN)).toEqual({ kind: 'wrong', triesLeft: WEB_PAGE.pinTries - i });
    expect(l.attempt('00000000', PIN)).toEqual({ kind: 'wrong', triesLeft: 0, pausedMs: WEB_PAGE.pinPauseMs });
    expect(l.attempt(PIN, PIN)).toEqual({ kind: 'paused', retryInMs: WEB_PAGE.pinPauseMs });
    await clock.advance(WEB_PAGE.pinPauseMs - 1);
    expect(l.attempt(PIN, PIN)).toEqual({ kind: 'paused', retryInMs: 1 });
    expect(l.pausedFor()).toBe(1);
    await clock.advance(1);
    expect(l.pausedFor()).toBe(0);
    expect(l.attempt(PIN, PIN)).toEqual({ kind: 'ok' });
  });

  it('each further pause of a streak is twice the last, up to the cap', async () => {
    const clock = new FakeClock();
    const l = new PinLimiter(clock);
    const pauses: number[] = [];
    for (let round = 0; round < 8; round++) {
      let v = l.attempt('0', PIN);
      while (v.kind === 'wrong' && v.pausedMs === undefined) v = l.attempt('0', PIN);
      if (v.kind !== 'wrong' || v.pausedMs === undefined) throw new Error('expected a pause');
      pauses.push(v.pausedMs);
      await clock.advance(v.pausedMs);
    }
    expect(pauses).toEqual([30_000, 60_000, 120_000, 240_000, 480_000, 900_000, 900_000, 900_000]);
  });

  it('a right PIN ends the streak; so does a quiet hour', async () => {
    const clock = new FakeClock();
    const l = new PinLimiter(clock);
    for (let i = 0; i < WEB_PAGE.pinTries - 1; i++) l.attempt('0', PIN);
    expect(l.attempt(PIN, PIN).kind).toBe('ok');
    expect(l.attempt('0', PIN)).toEqual({ kind: 'wrong', triesLeft: WEB_PAGE.pinTries - 1 });
    for (let i = 0; i < WEB_PAGE.pinTries - 2; i++) l.attempt('0', PIN);
    await clock.advance(WEB_PAGE.pinStreakForgetMs);
    expect(l.attempt('0', PIN)).toEqual({ kind: 'wrong', triesLeft: WEB_PAGE.pinTries - 1 });
  });
});

describe('sessions', () => {
  it('a cookie token finds its session; unknown, empty or ended ones do not', () => {
    const s = new Sessions(new FakeClock());
    const a = s.create();
    expect(s.find(a.token)?.session.csrf).toBe(a.session.csrf);
    expect(s.find('nope')).toBeUndefined();
    expect(s.find('')).toBeUndefined();
    expect(s.find(undefined)).toBeUndefined();
    const ended: string[] = [];
    s.onEnd((id) => ended.push(id));
    s.end(a.id);
    expect(s.find(a.token)).toBeUndefined();
    expect(ended).toEqual([a.id]);
  });

  it('ends after sessionIdleMs unused; use keeps it', async () => {
    const clock = new FakeClock();
    const s = new Sessions(clock);
    const a = s.create();
    const b = s.create();
    await clock.advance(WEB_PAGE.sessionIdleMs - 1);
    expect(s.find(a.token)).toBeDefined();
    await clock.advance(1);
    expect(s.find(b.token)).toBeUndefined();
    // a was used 1 ms before b ran out: it lasts until sessionIdleMs after that use.
    await clock.advance(WEB_PAGE.sessionIdleMs - 2);
    expect(s.find(a.token)).toBeDefined();
  });

  it('keeps at most maxSessions, the least recently used going first', () => {
    const s = new Sessions(new FakeClock(), { sessionIdleMs: WEB_PAGE.sessionIdleMs, maxSessions: 2 });
    const a = s.create();
    const b = s.create();
    s.find(a.token);
    s.create();
    expect(s.find(b.token)).toBeUndefined();
    expect(s.find(a.token)).toBeDefined();
    expect(s.size).toBe(2);
  });

  it('tokens are long and random; the CSRF token must match in full', () => {
    const s = new Sessions(new FakeClock());
    const a = s.create();
    const b = s.create();
    expect(a.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.token).not.toBe(b.token);
    expect(a.session.csrf).not.toBe(a.token);
    expect(csrfOk(a.session, a.session.csrf)).toBe(true);
    expect(csrfOk(a.session, b.session.csrf)).toBe(false);
    expect(csrfOk(a.session, a.session.csrf.slice(0, -1))).toBe(false);
    expect(csrfOk(a.session, undefined)).toBe(false);
    expect(csrfOk(a.session, '')).toBe(false);
    expect(csrfOk(a.session, [a.session.csrf, a.session.csrf])).toBe(false);
  });
});

describe('cookies and headers', () => {
  it('the session cookie is HttpOnly and SameSite=Strict; Secure and __Host- under HTTPS', () => {
    expect(sessionCookie('t', false)).toBe('c2c-session=t; Path=/; HttpOnly; SameSite=Strict');
    expect(sessionCookie('t', true)).toBe('__Host-c2c-session=t; Path=/; HttpOnly; SameSite=Strict; Secure');
    expect(clearedCookie(false)).toContain('Max-Age=0');
    expect(cookieValue('a=1; c2c-session=xyz; b=2', 'c2c-session')).toBe('xyz');
    expect(cookieValue('c2c-session-other=1', 'c2c-session')).toBeUndefined();
  });

  it('no framing, no inline script, nothing from elsewhere', () => {
    expect(SECURITY_HEADERS['x-frame-options']).toBe('DENY');
    const csp = SECURITY_HEADERS['content-security-policy']!;
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(csp).not.toMatch(/https?:/);
  });
});
