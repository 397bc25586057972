// The web page as the bundle ships it (scripts/build-cold-code.mjs): the
// page's server and the page are packs of their own, so the packs a daemon
// with webListen off expands (its own, the shared one) hold none of the
// page's code; and the bundle's daemon, run with webListen in a folder with
// no node_modules, serves the page, signs in with the PIN `web-pin` prints
// and answers the local API through it (each pack expanded when first used).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { brotliDecompressSync } from 'node:zlib';
import { buildBundle, type Bundle } from '../cli/bundle.js';
import type { FakeCloud } from '../fake-cloud/index.js';
import { killAll, makeDirs, removeDirs, startAgent, startTestCloud, type AgentDirs } from '../integration/agent-process.js';
import { until } from '../support/until.js';
import { freePort } from './support.js';

let bundle: Bundle;
let cloud: FakeCloud;
let dirs: AgentDirs;
beforeAll(async () => {
  [bundle, cloud] = await Promise.all([buildBundle(), startTestCloud()]);
  dirs = makeDirs();
}, 60_000);
afterAll(async () => {
  await killAll();
  bundle.cleanup();
  await cloud.close();
  removeDirs(dirs);
});

/** The code of the pack stored for `name` ('shared' or an entry's path), expanded as cold-module.ts does. */
function pack(text: string, name: string): string {
  const m = new RegExp(`${JSON.stringify(name).replace(/[/.]/g, '\\$&')},\\s*"([A-Za-z0-9+/=]+)"`).exec(text);
  if (m === null) throw new Error(`no pack named ${name} in the bundle`);
  return brotliDecompressSync(Buffer.from(m[1]!, 'base64')).toString('utf8');
}

/** Strings only the page's code holds: the page, its rules, its server's log line. */
const PAGE_MARKS = ['Pair this camera', 'c2c-session', 'x-frame-options', 'web page listening', 'QR code of the link'];

describe('the web page in the bundle', () => {
  it('the daemon and the shared pack hold none of the page\'s code; its server and page are packs of their own', () => {
    const text = readFileSync(bundle.file, 'utf8');
    for (const name of ['agent/daemon/main.ts', 'shared']) {
      const code = pack(text, name);
      expect({ name, found: PAGE_MARKS.filter((m) => code.includes(m)) }).toEqual({ name, found: [] });
    }
    expect(pack(text, 'agent/web/web-server.ts')).toContain('web page listening');
    const page = pack(text, 'agent/web/web-app.ts');
    for (const m of ['Pair this camera', 'c2c-session', 'x-frame-options', 'QR code of the link']) expect(page).toContain(m);
  });

  it('the bundle\'s daemon with webListen serves the page; web-pin prints the PIN it signs in with', async () => {
    const port = await freePort();
    const agent = startAgent({ apiUrl: cloud.url, token: cloud.devices[0]!.accessToken, dirs, timeScale: 1, env: { C2C_WEB_LISTEN: `127.0.0.1:${port}` } });
    const get = (path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> =>
      new Promise((resolve) => {
        http
          .get({ host: '127.0.0.1', port, path, headers: { host: `127.0.0.1:${port}`, ...headers } }, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (body += c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
          })
          .on('error', () => resolve({ status: 0, body: '', headers: {} }));
      });
    const page = await until('the page served', async () => {
      const r = await get('/');
      return r.status === 200 && r.body;
    }, { hangMs: 30_000, everyMs: 50 });
    expect(page).toContain('<label for="pin">PIN</label>');
    const pin = bundle.run(['web-pin', '--state-dir', dirs.stateDir, '--web-listen', `127.0.0.1:${port}`]);
    expect(pin.status).toBe(0);
    expect(pin.stdout).toMatch(/^\d{8}\n$/);
    expect(pin.stderr).toContain(`http://127.0.0.1:${port}/`);
    const signedIn = await new Promise<{ status: number; cookie: string }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/session', headers: { host: `127.0.0.1:${port}`, 'content-type': 'application/json' } }, (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0, cookie: String(res.headers['set-cookie']?.[0] ?? '').split(';')[0]! });
      });
      req.on('error', reject);
      req.end(JSON.stringify({ pin: pin.stdout.trim() }));
    });
    expect(signedIn.status).toBe(200);
    const status = await get('/api/v1/status', { cookie: signedIn.cookie });
    expect(status.status).toBe(200);
    expect(JSON.parse(status.body)).toMatchObject({ state: expect.any(String) });
    expect(agent.output()).not.toContain(pin.stdout.trim());
  });
});
