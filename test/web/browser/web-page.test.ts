// The camera's web page in a real browser (Debian's chromium, driven by
// playwright-core) against the daemon in-process on the e2e rig, in agent
// time: the page's own clock is the browser's, the daemon's and the fake
// cloud's the rig's virtual one, moved by `pump` while the page gets to a
// state. Elements are found by the accessible names docs/web-page.md and the
// contract give. In order, one camera's story: the refusals (another Host,
// a frame, a dozen wrong PINs, a write without the CSRF token), then signed
// in: cancel one upload, pair against the fake cloud through its approval
// page, online without a reload, uploads, auto-upload off, a button pressed,
// Cancel all;
// and no secret in anything the browser got. Screenshots at 360 and 1280 px
// (written to docs/ with UPDATE_SCREENSHOTS=1).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { WEB_PAGE } from '../../../agent/lib/timing.js';
import { webPinFileOf } from '../../../agent/web/pin.js';
import { MINUTE, Rig, SECOND } from '../../e2e/rig.js';
import { until } from '../../support/until.js';
import { freePort } from '../support.js';
import { launchChromium, pump, REBOUND_NAME } from './page-rig.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const SHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(ROOT, 'docs') : mkdtempSync(path.join(tmpdir(), 'c2c-web-shots-'));
const CLIPS = ['A001_C001.mov', 'A001_C002.mov', 'A001_C003.mov'];

let r: Rig;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let port: number;
let pin: string;
let url: string;
let profiles: string;
/** Every body the browser was answered with (the page, its assets, the API), for the secrets check. */
const answers: Array<{ url: string; body: string }> = [];
/** Every live-update line a second reader of the page's stream got, signed in as the page is. */
const streamed: string[] = [];
let streamReq: http.ClientRequest | undefined;

/** The local API, as the camera's UI sees it. */
const uploads = async (): Promise<Array<{ id: string; name: string; state: string }>> => ((await r.api<{ uploads: Array<{ id: string; name: string; state: string }> }>('GET', '/v1/uploads')).body.uploads ?? []);
/**
 * The browser's globals as the callbacks given to page.evaluate use them: those run in the page, and this
 * program has no DOM types (a cast, erased when compiled, so the callbacks' text stays plain JavaScript).
 */
interface InPage {
  document: { querySelectorAll(s: string): Iterable<{ querySelector(s: string): { textContent: string | null } | null }>; getElementById(id: string): { textContent: string | null } | null };
  sameDocument?: boolean;
  scrollTo(x: number, y: number): void;
  getComputedStyle(el: unknown): { fontSize: string; gridTemplateColumns: string };
}

/** What the page says of an upload now ('' when it has no row): read from the DOM as it is, no waiting. */
const row = (name: string): Promise<string> =>
  page.evaluate((n) => [...(globalThis as unknown as InPage).document.querySelectorAll('#uploads li')].find((li) => li.querySelector('.name')?.textContent === n)?.querySelector('.detail')?.textContent ?? '', name);
const text = async (label: string): Promise<string> => ((await page.getByLabel(label, { exact: true }).textContent()) ?? '').trim();

beforeAll(async () => {
  // Small storage parts, so that an upload is seen on its way part by part.
  r = await Rig.up({ cloud: { uploadPartBytes: 256 * 1024 } });
  // Unpaired: the person pairs it from the page.
  rmSync(path.join(r.stateDir, 'credentials.json'));
  // The generic profile with two buttons on its channel.
  profiles = mkdtempSync(path.join(tmpdir(), 'c2c-web-profiles-'));
  const generic = JSON.parse(readFileSync(path.join(ROOT, 'firmware-profiles/generic.json'), 'utf8')) as { channels: Array<Record<string, unknown>> };
  generic.channels[0]!.inputs = [
    { index: 0, name: 'Good take' },
    { index: 1, name: 'Bad take' },
  ];
  writeFileSync(path.join(profiles, 'generic.json'), JSON.stringify(generic));
  r.plug('dev/video0');
  // The camera's link, as the kernel shows it under the host root: the default route on wlan0, a Wi-Fi interface.
  mkdirSync(path.join(r.host, 'proc/net'), { recursive: true });
  writeFileSync(path.join(r.host, 'proc/net/route'), 'Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\nwlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n');
  mkdirSync(path.join(r.host, 'sys/class/net/wlan0/wireless'), { recursive: true });
  for (const clip of CLIPS) r.writeMedia(clip, 300_000, MINUTE);
  port = await freePort();
  url = `http://127.0.0.1:${port}/`;
  r.start({ ...r.mediaEnv(1), C2C_WEB_LISTEN: `127.0.0.1:${port}`, C2C_PROFILES_DIR: profiles });
  await r.until('the page listening', () => r.lines.some((l) => l.msg === 'web page listening'), MINUTE);
  pin = readFileSync(webPinFileOf(r.stateDir), 'utf8').trim();
  await pump(r, 'the three clips queued', async () => (await uploads()).length === CLIPS.length, 5 * MINUTE);
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 360, height: 800 }, deviceScaleFactor: 2 });
  // The fake cloud's pages (the verification link the camera shows, named as the daemon's wire named the fake) are answered
  // by the fake in-process, as the daemon's requests are: every origin but the camera's page.
  await context.route(
    (u) => u.origin !== new URL(url).origin && u.hostname !== 'attacker.example' && u.hostname !== REBOUND_NAME,
    async (route) => {
      const req = route.request();
      const u = new URL(req.url());
      const body = req.postDataBuffer();
      const res = await r.cloud.inject({ method: req.method(), path: `${u.pathname}${u.search}`, headers: { ...(await req.allHeaders()), host: u.host, ...(body !== null && { 'content-length': String(body.length) }) }, ...(body !== null && { body }) });
      await route.fulfill({ status: res.status, headers: res.headers, body: res.body });
    },
  );
  context.on('response', (res) => {
    if (!res.url().startsWith(url) || res.headers()['content-type']?.startsWith('text/event-stream')) return;
    res.text().then(
      (body) => answers.push({ url: res.url(), body }),
      () => undefined,
    );
  });
  page = await context.newPage();
});

afterAll(async () => {
  streamReq?.destroy();
  await browser?.close();
  await r?.close();
  rmSync(profiles, { recursive: true, force: true });
  if (SHOTS !== path.join(ROOT, 'docs')) rmSync(SHOTS, { recursive: true, force: true });
});

describe('the refusals', () => {
  it('a page of another name pointed at the camera (DNS rebinding): 421, and no page', async () => {
    const res = await page.goto(`http://${REBOUND_NAME}:${port}/`);
    expect(res?.status()).toBe(421);
    expect(await page.getByLabel('PIN').count()).toBe(0);
    expect(await page.content()).toContain('wrong-host');
  });

  it('the page in a frame of another site: not shown (X-Frame-Options DENY, frame-ancestors none)', async () => {
    const attacker = await context.newPage();
    await attacker.route('http://attacker.example/', (route) => route.fulfill({ status: 200, contentType: 'text/html', body: `<!doctype html><title>a site</title><iframe src="${url}" width="360" height="600"></iframe>` }));
    await attacker.goto('http://attacker.example/');
    // Chromium shows its error page in the frame instead of the camera's.
    const frame = await until('the frame refused', () => attacker.frames().find((f) => f !== attacker.mainFrame() && f.url().startsWith('chrome-error:')));
    expect(await frame.locator('#pin').count()).toBe(0);
    await attacker.close();
  });

  it('a dozen wrong PINs: tries left, then a pause the page states; the right PIN refused during it, taken after it', async () => {
    await page.goto(url);
    const field = page.getByLabel('PIN', { exact: true });
    const signIn = page.getByRole('button', { name: 'Sign in', exact: true });
    const said: string[] = [];
    for (let i = 0; i < 12; i++) {
      await field.fill(String(10_000_000 + i));
      const answered = page.waitForResponse((res) => res.url() === `${url}session` && res.request().method() === 'POST');
      await signIn.click();
      await answered;
      said.push(((await page.getByRole('alert').first().textContent()) ?? '').trim());
    }
    expect(said[0]).toBe(`Wrong PIN. ${WEB_PAGE.pinTries - 1} tries left before a pause.`);
    expect(said[WEB_PAGE.pinTries - 1]).toBe('Wrong PIN. Too many wrong PINs: signing in is paused for 30 s.');
    expect(said[11]).toMatch(/^Too many wrong PINs: signing in is paused for 30 s more\.$/);
    await field.fill(pin);
    await signIn.click();
    await page.getByText('paused for 30 s more').waitFor();
    expect(await page.getByRole('heading', { name: 'Uploads' }).isVisible()).toBe(false);
    // The pause is agent time: the camera's clock moves 30 s.
    await r.advance(WEB_PAGE.pinPauseMs);
    await field.fill(pin);
    await signIn.click();
    await page.getByRole('heading', { name: 'Uploads' }).waitFor();
  });

  it('a write without the session\'s CSRF token: 403, nothing changed', async () => {
    const status = await page.evaluate(async () => {
      const res = await fetch('/api/v1/prefs', { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ autoUpload: false }) });
      return { status: res.status, body: (await res.json()) as { error: { kind: string } } };
    });
    expect(status).toEqual({ status: 403, body: { error: { kind: 'csrf', message: expect.any(String) } } });
    expect((await r.api<{ autoUpload: boolean }>('GET', '/v1/prefs')).body.autoUpload).toBe(true);
  });
});

describe('signed in, on a phone', () => {
  beforeAll(async () => {
    // A second reader of the page's live updates, with the page's own cookie: every line it gets is checked for secrets at the end.
    const cookie = (await context.cookies(url)).map((c) => `${c.name}=${c.value}`).join('; ');
    streamReq = http.get({ host: '127.0.0.1', port, path: '/api/v1/events', headers: { host: `127.0.0.1:${port}`, cookie } }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (t: string) => streamed.push(t));
    });
    streamReq.on('error', () => undefined);
  });

  it('shows the state, project, last heartbeat and network; the uploads, each with its Cancel; the buttons of the profile', async () => {
    await pump(r, 'the state shown', async () => (await text('State')) === 'Not paired', MINUTE);
    expect(await text('Project')).toBe('None: not paired');
    expect(await text('Last heartbeat')).toBe('None yet');
    expect(await text('Network')).toBe('Wi-Fi (wlan0)');
    for (const clip of CLIPS) await page.getByRole('button', { name: `Cancel ${clip}`, exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'Good take', exact: true }).isVisible()).toBe(true);
    expect(await page.getByRole('button', { name: 'Bad take', exact: true }).isVisible()).toBe(true);
    expect(await page.getByRole('switch', { name: 'Auto-upload', exact: true }).isChecked()).toBe(true);
  });

  it('cancels one upload: its row says so, the daemon has it cancelled, the others stay queued', async () => {
    await page.getByRole('button', { name: `Cancel ${CLIPS[1]}`, exact: true }).click();
    await pump(r, 'the row cancelled', async () => (await row(CLIPS[1]!)) === 'Cancelled', MINUTE);
    const rows = await uploads();
    expect(rows.find((u) => u.name === CLIPS[1])?.state).toBe('cancelled');
    expect(rows.filter((u) => u.name !== CLIPS[1]).map((u) => u.state)).toEqual(['queued', 'queued']);
    expect(await page.getByRole('button', { name: `Cancel ${CLIPS[1]}`, exact: true }).isVisible()).toBe(false);
  });

  it('pairs against the fake cloud: the six-digit code large, its QR code, its link approved on the fake\'s page; the camera online without a reload', async () => {
    await page.evaluate(() => ((globalThis as unknown as InPage).sameDocument = true));
    await page.getByRole('button', { name: 'Pair this camera', exact: true }).click();
    const code = page.getByRole('status', { name: 'Pairing code' });
    await pump(r, 'the code shown', async () => /^\d{3} \d{3}$/.test(((await code.textContent()) ?? '').trim()), MINUTE);
    const shown = ((await code.textContent()) ?? '').replace(' ', '');
    const fontPx = await code.evaluate((el) => parseFloat((globalThis as unknown as InPage).getComputedStyle(el).fontSize));
    expect(fontPx).toBeGreaterThanOrEqual(32);
    const qr = page.getByRole('img', { name: 'QR code of the link to approve this camera' });
    await pump(r, 'the QR code drawn', () => qr.evaluate((img) => (img as unknown as { complete: boolean; naturalWidth: number }).complete && (img as unknown as { naturalWidth: number }).naturalWidth > 0), MINUTE);
    const link = (await page.locator('#pair-link').getAttribute('href')) ?? '';
    expect(link).toMatch(new RegExp(`^https?://[^/]+/pair\\?user_code=${shown}$`));
    expect(await qr.getAttribute('src')).toBe(`/qr.svg?text=${encodeURIComponent(link)}`);
    expect(await page.getByRole('button', { name: 'Cancel pairing', exact: true }).isVisible()).toBe(true);
    await page.evaluate(() => (globalThis as unknown as InPage).scrollTo(0, 0));
    await page.screenshot({ path: path.join(SHOTS, 'web-page-360.png'), animations: 'disabled' });

    // The person opens the link on the phone and approves the code on the service's page.
    const approval = await context.newPage();
    await approval.goto(link);
    await approval.getByRole('button', { name: 'Approve' }).click();
    await approval.getByText(`Approved: ${shown.slice(0, 3)} ${shown.slice(3)}`).waitFor();
    await approval.close();

    await pump(r, 'the camera online on the page', async () => (await text('State')) === 'Online', 5 * MINUTE);
    expect(await page.evaluate(() => (globalThis as unknown as InPage).sameDocument)).toBe(true);
    await pump(r, 'the project shown', async () => (await text('Project')).startsWith(r.device.projectName), MINUTE);
    await pump(r, 'a heartbeat shown', async () => (await text('Last heartbeat')).endsWith(', ok'), 5 * MINUTE);
    expect(await page.getByRole('button', { name: 'Pair this camera', exact: true }).isVisible()).toBe(false);
  });

  it('the uploads go once online, progress to Done on the page; the cancelled one never reaches the service', async () => {
    for (const clip of [CLIPS[0]!, CLIPS[2]!]) {
      await pump(r, `${clip} done on the page`, async () => /^Done, /.test(await row(clip)), 10 * MINUTE);
    }
    expect(r.cloud.assets().map((a) => a.name).sort()).toEqual([CLIPS[0], CLIPS[2]]);
  });

  it('switches Auto-upload off (the daemon\'s preference), and shows a change made elsewhere without a reload', async () => {
    const sw = page.getByRole('switch', { name: 'Auto-upload', exact: true });
    await sw.click();
    await pump(r, 'autoUpload off at the daemon', async () => (await r.api<{ autoUpload: boolean }>('GET', '/v1/prefs')).body.autoUpload === false, MINUTE);
    expect(await sw.isChecked()).toBe(false);
    await r.api('PATCH', '/v1/prefs', { autoUpload: true });
    await pump(r, 'the switch on again', () => sw.isChecked(), MINUTE);
  });

  it('presses a button of the profile: POST /v1/inputs/main/0, sent on to the service', async () => {
    await page.getByRole('button', { name: 'Good take', exact: true }).click();
    const said = (): Promise<string> => page.evaluate(() => (globalThis as unknown as InPage).document.getElementById('inputs-message')?.textContent ?? '');
    await pump(r, 'the press marked in the service, on the page', async () => (await said()) === 'Good take: marked in the service', 5 * MINUTE);
    expect(r.entries().filter((e) => e.method === 'POST' && /\/inputs\/0\/trigger$/.test(e.path))).toHaveLength(1);
  });

  it('at 1280 px: two columns, an upload in progress', async () => {
    // Storage slowed so that a clip is seen on its way.
    const slow = r.cloud.control.addFault({ kind: 'delay', path: '/_storage/*', delayMs: 5 * SECOND });
    r.writeMedia('A001_C004.mov', 3_000_000, MINUTE);
    await page.setViewportSize({ width: 1280, height: 800 });
    await pump(r, 'an upload on its way', async () => /^Uploading, [1-9]/.test(await row('A001_C004.mov')), 5 * MINUTE);
    const columns = await page.locator('#app').evaluate((el) => (globalThis as unknown as InPage).getComputedStyle(el).gridTemplateColumns.split(' ').length);
    expect(columns).toBe(2);
    await page.screenshot({ path: path.join(SHOTS, 'web-page-1280.png'), animations: 'disabled' });
    slow.remove();
    await pump(r, 'the slow upload done', async () => /^Done, /.test(await row('A001_C004.mov')), 10 * MINUTE);
  });

  it('Cancel all: every upload not yet done cancelled, on the page and at the daemon', async () => {
    const slow = r.cloud.control.addFault({ kind: 'delay', path: '/_storage/*', delayMs: 30 * SECOND });
    await r.api('PATCH', '/v1/prefs', { autoUpload: false });
    const clips = ['B001_C001.mov', 'B001_C002.mov'];
    for (const clip of clips) r.writeMedia(clip, 1_000_000, MINUTE);
    // Queued by hand (from the camera's UI): they go whatever autoUpload says.
    // The queue's group commit waits on the camera's clock: time moves while the answer is awaited.
    let queued: number | undefined;
    void r.api('POST', '/v1/uploads', { paths: clips.map((c) => path.join(r.media, c)) }).then((a) => (queued = a.status));
    await pump(r, 'the files queued by hand', () => Promise.resolve(queued !== undefined), MINUTE);
    expect(queued).toBe(202);
    const all = page.getByRole('button', { name: 'Cancel all', exact: true });
    await pump(r, 'Cancel all shown', () => all.isVisible(), MINUTE);
    await all.click();
    await pump(r, 'both cancelled on the page', async () => (await Promise.all(clips.map(row))).every((t) => t === 'Cancelled'), MINUTE);
    expect((await uploads()).filter((u) => clips.includes(u.name)).map((u) => u.state)).toEqual(['cancelled', 'cancelled']);
    slow.remove();
    await r.api('PATCH', '/v1/prefs', { autoUpload: true });
  });

  it('no token, refresh token, client secret or device code in any page, asset, answer or live update the browser got', async () => {
    const creds = JSON.parse(readFileSync(path.join(r.stateDir, 'credentials.json'), 'utf8')) as { access_token?: string; refresh_token?: string };
    const secrets = [creds.access_token, creds.refresh_token, r.cloud.clientSecret, pin].filter((s): s is string => typeof s === 'string' && s.length > 0);
    expect(secrets.length).toBe(4);
    const everything = [...answers.map((a) => `${a.url}\n${a.body}`), streamed.join('')];
    expect(answers.some((a) => a.url === url)).toBe(true);
    expect(answers.some((a) => a.url.endsWith('/app.js'))).toBe(true);
    expect(streamed.join('')).toContain('"type":"pairing"');
    for (const text of everything) {
      for (const s of secrets) expect(text.includes(s)).toBe(false);
      // The fake's tokens and device codes all look like fc?_...; none may reach the browser.
      expect(text).not.toMatch(/fc[a-z]_[A-Za-z0-9_-]{8}/);
      expect(text).not.toMatch(/device_code|refresh_token|client_secret|access_token/);
    }
  });
});

// Screenshots are kept where docs/ shows them only when asked (UPDATE_SCREENSHOTS=1).
mkdirSync(SHOTS, { recursive: true });
