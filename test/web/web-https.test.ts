// The web page over HTTPS (webCertFile and webKeyFile): served with the
// administrator's certificate, its session cookie Secure and __Host-; a
// certificate that does not load is logged and the page is not served (the
// daemon runs on).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLogger } from '../../agent/lib/logger.js';
import { HandlerMap } from '../../agent/localapi/handlers.js';
import { cameraNames } from '../../agent/web/security.js';
import { WebServer } from '../../agent/web/web-server.js';
import { LOOPBACK_HOSTS, makeCa, makeServerCertificate } from '../fake-cloud/certs.js';
import { FakeClock } from '../support/fake-clock.js';
import { webPinFileOf } from '../../agent/web/pin.js';

const CAMERA = cameraNames('127.0.0.1', { interfaces: () => ({}), hostname: () => 'cam-7' });
let dir: string;
let caPem: string;
let certFile: string;
let keyFile: string;

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'c2c-web-https-'));
  const ca = makeCa('c2c web test CA');
  const now = Date.now();
  const cert = makeServerCertificate(ca, LOOPBACK_HOSTS, now - 3_600_000, now + 86_400_000);
  caPem = ca.certPem;
  certFile = path.join(dir, 'web.crt');
  keyFile = path.join(dir, 'web.key');
  writeFileSync(certFile, cert.certPem);
  writeFileSync(keyFile, cert.keyPem, { mode: 0o600 });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function server(tls: { certFile: string; keyFile: string }, lines: string[] = []): WebServer {
  const routes = new HandlerMap().add('GET', '/v1/status', 'read', () => ({ status: 200, body: { state: 'online' } }));
  return new WebServer({
    web: { listen: '127.0.0.1:0', host: '127.0.0.1', port: 0, source: 'test', tls },
    stateDir: dir,
    clock: new FakeClock(),
    logger: createLogger('info', { write: (l: string) => void lines.push(l) }),
    routes,
    inputs: () => [],
    camera: CAMERA,
  });
}

function request(port: number, method: string, p: string, o: { body?: unknown; cookie?: string } = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, method, path: p, ca: caPem, headers: { host: `127.0.0.1:${port}`, ...(o.body !== undefined && { 'content-type': 'application/json' }), ...(o.cookie !== undefined && { cookie: o.cookie }) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(o.body === undefined ? undefined : JSON.stringify(o.body));
  });
}

describe('the web page over HTTPS', () => {
  it('serves the page with the certificate given; the session cookie is Secure and __Host-', async () => {
    const s = server({ certFile, keyFile });
    s.start();
    await s.ready();
    try {
      const port = s.port!;
      const page = await request(port, 'GET', '/');
      expect(page.status).toBe(200);
      expect(page.text).toContain('<label for="pin">PIN</label>');
      const pin = readFileSync(webPinFileOf(dir), 'utf8').trim();
      const signIn = await request(port, 'POST', '/session', { body: { pin } });
      expect(signIn.status).toBe(200);
      const cookie = String((signIn.headers['set-cookie'] as string[])[0]);
      expect(cookie).toMatch(/^__Host-c2c-session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Secure$/);
      expect((await request(port, 'GET', '/api/v1/status', { cookie: cookie.split(';')[0]! })).status).toBe(200);
    } finally {
      await s.stop();
    }
  });

  it('a key file that is not there: one error line naming it, and no page; stop() still ends cleanly', async () => {
    const lines: string[] = [];
    const s = server({ certFile, keyFile: path.join(dir, 'missing.key') }, lines);
    s.start();
    await s.ready();
    expect(s.port).toBeUndefined();
    const failed = lines.map((l) => JSON.parse(l) as { msg: string; err?: string }).find((l) => l.msg === 'cannot serve the web page; the daemon runs on without it');
    expect(failed?.err).toContain('missing.key');
    await s.stop();
  });
});
