// A proxy or captive portal answering `101 Switching Protocols` (issue 18,
// cause 4), end to end: the built bundle as real processes against a scripted
// loopback server. Before the fix got never settled on a 101: with the
// connection closed the event loop emptied and `check --json` exited 0 with no
// output at all; with it kept open check, pair and unpair hung; the daemon
// kept one socket per answer. Now each is a protocol error (76) at once.
// Interim answers (102, 103, any other 1xx) come before a final one and are
// read past (issue 27): `check` after them is exit 0.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ensureBuilt, killAll, makeDirs, removeDirs, startAgent, waitFor, type AgentDirs } from './agent-process.js';
import { FAKE_SECRET, killCommands, runCommand, settingsArgs, writeSecretFile, type AgentSettings } from './pair-process.js';

/** Agent time runs 40 times faster: a 1 s poll interval is 25 real ms. */
const SCALE = 40;
const SECRET = 'fcs_client_secret_0123456789';
const DEVICE_CODE = 'fcd_device_code_0123456789';
const ACCESS = 'fca_access_token_0123456789';
const REFRESH = 'fcr_refresh_token_0123456789';

type Route = (req: http.IncomingMessage, res: http.ServerResponse) => void;
let routes: Record<string, Route> = {};
const seen: string[] = [];
const open = new Set<Socket>();
let server: http.Server;
let url: string;
const allDirs: AgentDirs[] = [];

const RAW_101 = 'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n';
const upgrade =
  (keepOpen: boolean): Route =>
  (req) => {
    req.socket.write(RAW_101);
    if (!keepOpen) req.socket.end();
  };
const json =
  (value: unknown): Route =>
  (_req, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
const deviceCode = json({ device_code: DEVICE_CODE, user_code: '123456', verification_uri: 'http://127.0.0.1/pair', expires_in: 120, interval: 1 });
const grant = json({ access_token: ACCESS, refresh_token: REFRESH, expires_in: 3600, token_type: 'bearer' });

beforeAll(async () => {
  await ensureBuilt();
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const key = `${req.method ?? ''} ${(req.url ?? '').split('?')[0] ?? ''}`;
      seen.push(key);
      const route = routes[key] ?? routes['*'];
      if (route) route(req, res);
      else res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"no route"}');
    });
  });
  server.on('connection', (s: Socket) => {
    open.add(s);
    s.once('close', () => open.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 120_000);
afterEach(async () => {
  await killCommands();
  await killAll();
  routes = {};
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  for (const d of allDirs) removeDirs(d);
});

function unit(): { dirs: AgentDirs; s: AgentSettings; credentials: string } {
  const dirs = makeDirs();
  allDirs.push(dirs);
  const secretFile = writeSecretFile(dirs, SECRET);
  return { dirs, s: { apiUrl: url, dirs, timeScale: SCALE, secretFile }, credentials: `${dirs.stateDir}/credentials.json` };
}

describe('check --json against a 101', () => {
  for (const keepOpen of [false, true]) {
    it(`with the connection ${keepOpen ? 'kept open' : 'closed'}: exit 76 with {"ok":false}, never 0 and never silent`, async () => {
      routes = { '*': upgrade(keepOpen) };
      const u = unit();
      const r = await runCommand(['check', '--json', ...settingsArgs(u.s)], u.dirs, { C2C_TOKEN: ACCESS });
      expect({ code: r.code, signal: r.signal }).toEqual({ code: 76, signal: null });
      expect(r.events).toEqual([expect.objectContaining({ ok: false, exitCode: 76 })]);
      expect(r.stdout).toContain('HTTP 101');
      expect(r.stdout + r.stderr).not.toContain(ACCESS);
    });
  }
});

describe('check --json after interim 1xx answers (issue 27): read past, as RFC 9110 15.2 asks', () => {
  const PROCESSING = 'HTTP/1.1 102 Processing\r\n\r\n';
  const HINTS = 'HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\nLink: </app.js>; rel=preload; as=script\r\n\r\n';
  const cases: Array<[string, string[]]> = [
    ['102 then the device record', [PROCESSING]],
    ['103 with Link headers then the device record', [HINTS]],
    ['several 1xx (100, 102, 103, 102, an unknown 150) then the device record', ['HTTP/1.1 100 Continue\r\n\r\n', PROCESSING, HINTS, PROCESSING, 'HTTP/1.1 150 Whatever\r\n\r\n']],
  ];
  for (const [name, heads] of cases) {
    it(`${name}: exit 0 with the device`, async () => {
      routes = {
        'GET /v2/devices/me': (req, res) => {
          for (const h of heads) req.socket.write(h);
          json({ id: 'dev-interim-1', name: 'Unit 1', status: 'active' })(req, res);
        },
      };
      const u = unit();
      const r = await runCommand(['check', '--json', ...settingsArgs(u.s)], u.dirs, { C2C_TOKEN: ACCESS });
      expect({ code: r.code, signal: r.signal, stderr: r.stderr }).toEqual({ code: 0, signal: null, stderr: '' });
      expect(r.events).toEqual([expect.objectContaining({ ok: true })]);
      expect(r.stdout).toContain('dev-interim-1');
    });
  }

  it('a 101 after a 102 is still exit 76 at once', async () => {
    routes = { '*': (req) => void req.socket.write(PROCESSING + RAW_101) };
    const u = unit();
    const r = await runCommand(['check', '--json', ...settingsArgs(u.s)], u.dirs, { C2C_TOKEN: ACCESS });
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 76, signal: null });
    expect(r.stdout).toContain('HTTP 101');
  });
});

describe('pair against a 101', () => {
  for (const keepOpen of [false, true]) {
    it(`on the token poll (connection ${keepOpen ? 'kept open' : 'closed'}): exit 76, a failed event, no credentials written`, async () => {
      routes = { 'POST /v2/auth/device/code': deviceCode, 'POST /v2/auth/token': upgrade(keepOpen) };
      const u = unit();
      const r = await runCommand(['pair', '--json', ...settingsArgs(u.s)], u.dirs);
      expect({ code: r.code, signal: r.signal }).toEqual({ code: 76, signal: null });
      expect(r.events.map((e) => e.event)).toEqual(['code', 'failed']);
      expect(r.events.at(-1)).toMatchObject({ ok: false, exitCode: 76, error: { kind: 'protocol' } });
      expect(existsSync(u.credentials)).toBe(false);
      expect(r.stdout + r.stderr).not.toMatch(FAKE_SECRET);
    });
  }

  it('on the verification after a grant: exit 76, not paired, nothing stored (an answer that is not the service\'s never lands on flash as credentials)', async () => {
    routes = { 'POST /v2/auth/device/code': deviceCode, 'POST /v2/auth/token': grant, 'GET /v2/devices/me': upgrade(true) };
    const u = unit();
    const r = await runCommand(['pair', '--json', ...settingsArgs(u.s)], u.dirs);
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 76, signal: null });
    expect(r.events.map((e) => e.event)).not.toContain('paired');
    expect(r.events.at(-1)).toMatchObject({ event: 'failed', ok: false, exitCode: 76 });
    expect(JSON.stringify(r.events.at(-1))).toContain('nothing was stored');
    expect(existsSync(u.credentials)).toBe(false);
    expect(r.stdout + r.stderr).not.toMatch(FAKE_SECRET);
  });

  it('unpair against a 101 on revoke ends at once and says the token was not revoked', async () => {
    const u = unit();
    mkdirSync(u.dirs.stateDir, { recursive: true, mode: 0o700 });
    writeFileSync(u.credentials, JSON.stringify({ access_token: ACCESS, refresh_token: 'refresh-101-test', token_type: 'bearer', expires_in: 3600 }), { mode: 0o600 });
    routes = { 'POST /v2/auth/revoke': upgrade(true) };
    const un = await runCommand(['unpair', '--json', ...settingsArgs(u.s)], u.dirs);
    expect({ code: un.code, signal: un.signal }).toEqual({ code: 0, signal: null });
    expect(un.events).toEqual([expect.objectContaining({ ok: true, revoked: false, removed: true })]);
    expect(JSON.stringify(un.events)).toContain('HTTP 101');
    expect(existsSync(u.credentials)).toBe(false);
  });
});

describe('the daemon against 101s', () => {
  it('keeps no socket per answer: after many 101s on kept-open connections, none stays open', async () => {
    routes = { '*': upgrade(true) };
    const u = unit();
    const since = seen.length;
    // Fast enough for several start-up checks (5 s backoff, doubling) within a second or two.
    const daemon = startAgent({ apiUrl: url, token: ACCESS, dirs: u.dirs, timeScale: 200 });
    // Each answer's socket stays open on the server until the agent destroys its end;
    // before the fix they piled up, one per request.
    await waitFor('six requests answered 101 and no connection left open', () => seen.length - since >= 6 && open.size === 0, 20_000);
    expect(daemon.child.exitCode).toBeNull();
  });
});
