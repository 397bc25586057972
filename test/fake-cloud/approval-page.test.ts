// The verification link a camera prints (`open: …/pair?user_code=015869`)
// opens a page that approves the code, and a code typed as the camera shows
// it (`015 869`) is accepted wherever a person approves one.
import { afterEach, describe, expect, it } from '@jest/globals';
import { startFakeCloud } from './index.js';
import type { FakeCloud } from './index.js';
import { call } from './test-helpers.js';
import { VirtualClock } from '../support/virtual-clock.js';

let cloud: FakeCloud | undefined;
afterEach(async () => {
  await cloud?.close();
  cloud = undefined;
});

const GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

async function start(): Promise<FakeCloud> {
  cloud = await startFakeCloud({ clock: new VirtualClock().now });
  return cloud;
}

/** A pairing code as a camera asks for one, with the complete link (the QR code's). */
async function askCode(c: FakeCloud, clientId = 'unit-0001'): Promise<{ userCode: string; deviceCode: string; complete: string; uri: string }> {
  const body = new URLSearchParams({ client_id: clientId, client_secret: c.clientSecret, scope: 'asset_create offline' });
  const r = await call(c.url, '/v2/auth/device/code', { method: 'POST', body, headers: { 'x-client-platypus-enabled': 'true' } });
  const j = (await r.json()) as Record<string, string>;
  return { userCode: j.user_code!, deviceCode: j.device_code!, complete: j.verification_uri_complete!, uri: j.verification_uri! };
}

async function poll(c: FakeCloud, deviceCode: string, clientId = 'unit-0001'): Promise<Record<string, unknown>> {
  const body = new URLSearchParams({ client_id: clientId, client_secret: c.clientSecret, grant_type: GRANT, device_code: deviceCode });
  return (await (await call(c.url, '/v2/auth/token', { method: 'POST', body })).json()) as Record<string, unknown>;
}

/** What a browser does: GET the link, no x-client-version, no token. */
async function open(url: string): Promise<{ status: number; type: string | null; csp: string | null; html: string }> {
  const r = await fetch(url);
  return { status: r.status, type: r.headers.get('content-type'), csp: r.headers.get('content-security-policy'), html: await r.text() };
}

/** What the page's Approve button sends: a urlencoded form POST to /pair. */
async function approveByForm(c: FakeCloud, typed: string): Promise<{ status: number; html: string }> {
  const r = await fetch(`${c.url}/pair`, { method: 'POST', body: new URLSearchParams({ user_code: typed }) });
  return { status: r.status, html: await r.text() };
}

const grouped = (code: string): string => `${code.slice(0, 3)} ${code.slice(3)}`;

describe('the approval page', () => {
  it('the complete link opens an HTML page with the code and an Approve button, no script and no external asset', async () => {
    const c = await start();
    const { userCode, complete } = await askCode(c);
    const page = await open(complete);
    expect(page.status).toBe(200);
    expect(page.type).toBe('text/html; charset=utf-8');
    expect(page.csp).toContain("default-src 'none'");
    expect(page.html).toContain(`value="${grouped(userCode)}"`);
    expect(page.html).toMatch(/<form method="post" action="\/pair">/);
    expect(page.html).toMatch(/<button type="submit">Approve<\/button>/);
    expect(page.html).not.toMatch(/<script|<link|<img|src=|https?:\/\/(?!127\.0\.0\.1)/i);
  });

  it('the link without a code opens the same form, empty', async () => {
    const c = await start();
    const { uri } = await askCode(c);
    const page = await open(uri);
    expect(page.status).toBe(200);
    expect(page.html).toContain('value=""');
  });

  it('Approve approves the code: the camera gets its tokens at its next poll', async () => {
    const c = await start();
    const { userCode, deviceCode } = await askCode(c);
    expect(await poll(c, deviceCode)).toEqual({ error: 'authorization_pending' });
    const done = await approveByForm(c, userCode);
    expect(done.status).toBe(200);
    expect(done.html).toContain(`Approved: ${grouped(userCode)}`);
    expect(await poll(c, deviceCode)).toMatchObject({ access_token: expect.any(String), refresh_token: expect.any(String) });
  });

  it.each([['with a space', grouped], ['with a dash', (code: string) => `${code.slice(0, 3)}-${code.slice(3)}`], ['padded', (code: string) => ` ${code} `]])(
    'takes a code typed as the camera shows it (%s)',
    async (_, typed) => {
      const c = await start();
      const { userCode, deviceCode } = await askCode(c);
      expect((await approveByForm(c, typed(userCode))).status).toBe(200);
      expect(await poll(c, deviceCode)).toHaveProperty('access_token');
    },
  );

  it('an unknown code is a 404 page that says so, a missing one a 400; neither approves anything', async () => {
    const c = await start();
    const { userCode, deviceCode } = await askCode(c);
    const wrong = userCode === '000000' ? '000001' : '000000';
    const unknown = await approveByForm(c, wrong);
    expect(unknown.status).toBe(404);
    expect(unknown.html).toContain('unknown, expired or already used');
    expect((await approveByForm(c, '')).status).toBe(400);
    const escaped = await approveByForm(c, '<b>1</b>');
    expect(escaped.html).not.toContain('<b>1</b>');
    expect(await poll(c, deviceCode)).toEqual({ error: 'authorization_pending' });
  });
});

describe('a code typed with a space, elsewhere', () => {
  it('control.approve and the admin POST /approve drop spaces and dashes too', async () => {
    const c = await start();
    const first = await askCode(c, 'unit-a');
    expect(c.control.approve(grouped(first.userCode))).toBe(true);
    expect(await poll(c, first.deviceCode, 'unit-a')).toHaveProperty('access_token');
    const second = await askCode(c, 'unit-b');
    const r = await fetch(`${c.adminUrl}/approve`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user_code: `${second.userCode.slice(0, 3)}-${second.userCode.slice(3)}` }) });
    expect(r.status).toBe(204);
    expect(await poll(c, second.deviceCode, 'unit-b')).toHaveProperty('access_token');
  });
});
