// The web page's server over real HTTP on loopback, its handlers a stand-in
// of the local API's handler map, its clock a FakeClock: each rule the page
// lives by (agent/web/web-app.ts, security.ts), judged by the answers. The
// same rules in a real browser against the real daemon: test/web/browser/.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { HandlerMap, type StreamSink } from '../../agent/localapi/handlers.js';
import { WEB_PAGE } from '../../agent/lib/timing.js';
import { webPinFileOf } from '../../agent/web/pin.js';
import { cameraNames } from '../../agent/web/security.js';
import { WebServer } from '../../agent/web/web-server.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: Record<string, unknown> & { error?: { kind: string; message: string } };
}

const CAMERA = cameraNames('127.0.0.1', { interfaces: () => ({}), hostname: () => 'cam-7' });

let dir: string;
let clock: FakeClock;
let server: WebServer;
let port: number;
let pin: string;
const calls: string[] = [];
let sinks: StreamSink[] = [];
let prefs = { autoUpload: true };

function routes(): HandlerMap {
  const r = new HandlerMap();
  r.add('GET', '/v1/status', 'read', () => ({ status: 200, body: { state: 'online', device: { id: 'd1', name: 'Cam' }, token: 'must-not-show' } }));
  r.add('GET', '/v1/uploads', 'read', () => ({ status: 200, body: { uploads: [] } }));
  r.add('GET', '/v1/prefs', 'read', () => ({ status: 200, body: prefs }));
  r.add('PATCH', '/v1/prefs', 'write', (req) => {
    calls.push(`PATCH /v1/prefs ${JSON.stringify(req.body)}`);
    prefs = { ...prefs, ...(req.body as object) };
    return { status: 200, body: prefs };
  });
  r.add('DELETE', '/v1/uploads/{id}', 'write', (req) => {
    calls.push(`DELETE ${req.params.id}`);
    return { status: 200, body: { cancelled: true } };
  });
  r.add('GET', '/v1/events', 'read', () => ({ stream: (sink) => void sinks.push(sink) }));
  r.add('POST', '/v1/unpair', 'write', () => {
    calls.push('unpair');
    return { status: 200, body: {} };
  });
  r.add('GET', '/v1/web', 'read', () => ({ status: 200, body: { pin } }));
  return r;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'c2c-web-'));
  clock = new FakeClock();
  server = new WebServer({
    web: { listen: '127.0.0.1:0', host: '127.0.0.1', port: 0, source: 'test' },
    stateDir: dir,
    clock,
    routes: routes(),
    inputs: () => [{ channel: 'main', index: 0, name: 'Good take' }],
    camera: CAMERA,
  });
  server.start();
  await server.ready();
  port = server.port!;
  pin = readFileSync(webPinFileOf(dir), 'utf8').trim();
});

afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

afterEach(() => {
  calls.length = 0;
});

function request(method: string, p: string, o: { body?: unknown; raw?: string; headers?: Record<string, string>; host?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const payload = o.raw ?? (o.body === undefined ? undefined : JSON.stringify(o.body));
    const req = http.request({
      host: '127.0.0.1',
      port,
      method,
      path: p,
      headers: { host: o.host ?? `127.0.0.1:${port}`, ...(payload !== undefined && { 'content-type': 'application/json' }), ...o.headers },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json = {};
        try {
          json = JSON.parse(text) as object;
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** Signs in; the cookie and the CSRF token. */
async function signIn(): Promise<{ cookie: string; csrf: string }> {
  const r = await request('POST', '/session', { body: { pin } });
  expect(r.status).toBe(200);
  const cookie = String(r.headers['set-cookie']?.[0]).split(';')[0]!;
  return { cookie, csrf: r.json.csrf as string };
}

describe('the PIN', () => {
  it('is made at start: 8 digits in <state-dir>/web-pin, mode 0600', () => {
    expect(pin).toMatch(/^\d{8}$/);
    expect(statSync(webPinFileOf(dir)).mode & 0o777).toBe(0o600);
  });

  it('the page code loads on the first request, not at start', async () => {
    const fresh = new WebServer({ web: { listen: '127.0.0.1:0', host: '127.0.0.1', port: 0, source: 'test' }, stateDir: dir, clock, routes: routes(), inputs: () => [], camera: CAMERA });
    fresh.start();
    await fresh.ready();
    expect(fresh.pageLoaded).toBe(false);
    await new Promise<void>((resolve) => http.get({ host: '127.0.0.1', port: fresh.port, path: '/', headers: { host: 'localhost' } }, (res) => res.resume().on('end', resolve)));
    expect(fresh.pageLoaded).toBe(true);
    await fresh.stop();
  });
});

describe('every answer', () => {
  it.each([['/'], ['/app.js'], ['/session'], ['/api/v1/status']])('%s: no framing, a CSP without inline script, nothing cached', async (p) => {
    const r = await request('GET', p);
    expect(r.headers['x-frame-options']).toBe('DENY');
    expect(r.headers['content-security-policy']).toContain("default-src 'self'");
    expect(r.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(r.headers['content-security-policy']).not.toContain('unsafe-inline');
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.headers['cache-control']).toBe('no-store');
  });

  it('the page has no inline script, style or handler; its script and style are its own', async () => {
    const html = (await request('GET', '/')).text;
    expect(html).toMatch(/<script src="\/app.js" defer><\/script>/);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(html).not.toMatch(/\son[a-z]+=/i);
    expect(html).not.toMatch(/\sstyle=/i);
    expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
    expect((await request('GET', '/app.js')).headers['content-type']).toMatch(/^text\/javascript/);
  });
});

describe('the Host check', () => {
  it.each([['evil.example'], [`evil.example:${0}`], ['192.168.1.99'], ['cam-7.evil.example']])('Host %s: refused (421), the page too', async (host) => {
    for (const p of ['/', '/session', '/api/v1/status']) {
      const r = await request('GET', p, { host });
      expect(r.status).toBe(421);
      expect(r.json.error?.kind).toBe('wrong-host');
      expect(r.text).not.toContain('<html');
    }
  });

  it('the camera by its name, its name.local, localhost and its address: served', async () => {
    for (const host of [`cam-7:${port}`, `cam-7.local:${port}`, `localhost:${port}`, `127.0.0.1:${port}`]) expect((await request('GET', '/', { host })).status).toBe(200);
  });
});

describe('signing in', () => {
  it('without a session the API answers 401 and nothing else', async () => {
    const r = await request('GET', '/api/v1/status');
    expect(r.status).toBe(401);
    expect(r.json.error?.kind).toBe('signed-out');
    expect((await request('GET', '/qr.svg?text=https://a.example/pair')).status).toBe(401);
  });

  it('the right PIN (typed grouped too): an HttpOnly SameSite=Strict cookie and a CSRF token; GET /session finds it again', async () => {
    const r = await request('POST', '/session', { body: { pin: `${pin.slice(0, 4)} ${pin.slice(4)}` } });
    expect(r.status).toBe(200);
    const cookie = String(r.headers['set-cookie']?.[0]);
    expect(cookie).toMatch(/^c2c-session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict$/);
    expect(r.json.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(r.json.inputs).toEqual([{ channel: 'main', index: 0, name: 'Good take' }]);
    const again = await request('GET', '/session', { headers: { cookie: cookie.split(';')[0]! } });
    expect(again.json).toMatchObject({ signedIn: true, csrf: r.json.csrf });
    expect((await request('GET', '/session')).json).toEqual({ signedIn: false });
  });

  it('a sign-in from another site (not JSON, or another Origin) is refused before the PIN is looked at', async () => {
    const form = await request('POST', '/session', { raw: `pin=${pin}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.status).toBe(403);
    const other = await request('POST', '/session', { body: { pin }, headers: { origin: 'http://evil.example' } });
    expect(other.status).toBe(403);
  });

  it('signing out ends the session (with its CSRF token) and its live updates', async () => {
    const { cookie, csrf } = await signIn();
    const refused = await request('DELETE', '/session', { headers: { cookie } });
    expect(refused.status).toBe(403);
    const out = await request('DELETE', '/session', { headers: { cookie, 'x-csrf-token': csrf } });
    expect(out.status).toBe(200);
    expect(String(out.headers['set-cookie'])).toContain('Max-Age=0');
    expect((await request('GET', '/api/v1/status', { headers: { cookie } })).status).toBe(401);
  });
});

describe('wrong PINs', () => {
  it(`${WEB_PAGE.pinTries} in a row, then a pause the answer states; the right PIN is refused during it, taken after it`, async () => {
    const answers: Reply[] = [];
    for (let i = 0; i < 12; i++) answers.push(await request('POST', '/session', { body: { pin: '00000000' } }));
    expect(answers.slice(0, WEB_PAGE.pinTries - 1).map((a) => [a.status, a.json.error?.message])).toEqual(
      Array.from({ length: WEB_PAGE.pinTries - 1 }, (_, i) => [401, `Wrong PIN. ${WEB_PAGE.pinTries - 1 - i} ${WEB_PAGE.pinTries - 1 - i === 1 ? 'try' : 'tries'} left before a pause.`]),
    );
    const paused = answers[WEB_PAGE.pinTries - 1]!;
    expect(paused.status).toBe(429);
    expect(paused.json.error?.message).toBe('Wrong PIN. Too many wrong PINs: signing in is paused for 30 s.');
    expect(paused.headers['retry-after']).toBe('30');
    for (const a of answers.slice(WEB_PAGE.pinTries)) expect([a.status, a.json.error?.kind]).toEqual([429, 'paused']);
    const right = await request('POST', '/session', { body: { pin } });
    expect(right.status).toBe(429);
    expect(right.json.error?.message).toBe('Too many wrong PINs: signing in is paused for 30 s more.');
    expect((await request('GET', '/session')).json).toEqual({ signedIn: false, pausedSeconds: 30 });
    await clock.advance(WEB_PAGE.pinPauseMs);
    expect((await request('POST', '/session', { body: { pin } })).status).toBe(200);
  });
});

describe('writes', () => {
  it('carry the CSRF token, or are refused (403) and never reach the handler', async () => {
    const { cookie, csrf } = await signIn();
    const none = await request('PATCH', '/api/v1/prefs', { body: { autoUpload: false }, headers: { cookie } });
    expect([none.status, none.json.error?.kind]).toEqual([403, 'csrf']);
    const wrong = await request('PATCH', '/api/v1/prefs', { body: { autoUpload: false }, headers: { cookie, 'x-csrf-token': 'x'.repeat(43) } });
    expect(wrong.status).toBe(403);
    const cross = await request('DELETE', '/api/v1/uploads/u1', { headers: { cookie, 'x-csrf-token': csrf, origin: 'http://evil.example' } });
    expect(cross.status).toBe(403);
    expect(calls).toEqual([]);
    const ok = await request('PATCH', '/api/v1/prefs', { body: { autoUpload: false }, headers: { cookie, 'x-csrf-token': csrf } });
    expect([ok.status, ok.json]).toEqual([200, { autoUpload: false }]);
    const del = await request('DELETE', '/api/v1/uploads/u%201', { headers: { cookie, 'x-csrf-token': csrf } });
    expect(del.status).toBe(200);
    expect(calls).toEqual(['PATCH /v1/prefs {"autoUpload":false}', 'DELETE u 1']);
  });

  it('only the routes the page uses: not the PIN route, not unpair', async () => {
    const { cookie, csrf } = await signIn();
    expect((await request('GET', '/api/v1/web', { headers: { cookie } })).status).toBe(404);
    expect((await request('POST', '/api/v1/unpair', { body: {}, headers: { cookie, 'x-csrf-token': csrf } })).status).toBe(404);
    expect(calls).toEqual([]);
  });
});

describe('answers', () => {
  it('the local API answer, its secret keys out', async () => {
    const { cookie } = await signIn();
    const r = await request('GET', '/api/v1/status', { headers: { cookie } });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ state: 'online', device: { id: 'd1' }, token: '[redacted]' });
    expect(r.text).not.toContain('must-not-show');
  });

  it('the QR code of a link, as SVG; anything but an http(s) link refused', async () => {
    const { cookie } = await signIn();
    const r = await request('GET', `/qr.svg?text=${encodeURIComponent('https://a.example/pair?user_code=015869')}`, { headers: { cookie } });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('image/svg+xml');
    expect(r.text).toMatch(/^<svg [^>]*viewBox="0 0 \d+ \d+"/);
    expect((await request('GET', '/qr.svg?text=javascript:alert(1)', { headers: { cookie } })).status).toBe(400);
  });

  it('live updates: the events lines as server-sent events, each `data:` one JSON line; ended when the session ends', async () => {
    const { cookie, csrf } = await signIn();
    sinks = [];
    const lines: string[] = [];
    let ended!: () => void;
    const done = new Promise<void>((resolve) => (ended = resolve));
    const req = http.get({ host: '127.0.0.1', port, path: '/api/v1/events', headers: { host: `127.0.0.1:${port}`, cookie } }, (res) => {
      expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      res.setEncoding('utf8');
      res.on('data', (t: string) => lines.push(...t.split('\n\n').filter((l) => l !== '')));
      res.on('end', ended);
    });
    req.on('error', () => undefined);
    await until('the events stream attached', () => sinks.length > 0);
    sinks[0]!.send({ type: 'state', from: 'offline', to: 'online', refresh_token: 'x' });
    await request('DELETE', '/session', { headers: { cookie, 'x-csrf-token': csrf } });
    await done;
    expect(lines[0]).toBe('retry: 2000');
    expect(JSON.parse(lines[1]!.replace(/^data: /, ''))).toEqual({ type: 'state', from: 'offline', to: 'online', refresh_token: '[redacted]' });
    expect(JSON.parse(lines[2]!.replace(/^data: /, ''))).toMatchObject({ type: 'signed-out' });
  });
});
