import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { build } from 'esbuild';
import { startFakeCloud } from './index.js';
import type { FakeCloud } from './index.js';
import { call, heartbeat } from './test-helpers.js';

let cloud: FakeCloud | undefined;
afterEach(async () => {
  await cloud?.close();
  cloud = undefined;
});

type Json = Record<string, any>;
const admin = async (c: FakeCloud, method: string, p: string, body?: unknown) => {
  const r = await fetch(c.adminUrl + p, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await r.text();
  return { status: r.status, body: text ? (JSON.parse(text) as Json) : undefined };
};

describe('admin HTTP endpoint', () => {
  it('adds, lists and clears faults', async () => {
    const c = (cloud = await startFakeCloud());
    const added = await admin(c, 'POST', '/faults', { kind: 'status', status: 503, path: '/health' });
    expect(added.status).toBe(201);
    expect((await call(c.url, '/health')).status).toBe(503);
    expect((await admin(c, 'GET', '/faults')).body).toMatchObject([{ kind: 'status', hits: 1, id: added.body!.id }]);
    expect((await admin(c, 'POST', '/faults', { kind: 'nonsense' })).status).toBe(400);
    expect((await admin(c, 'DELETE', `/faults/${added.body!.id}`)).status).toBe(204);
    expect((await call(c.url, '/health')).status).toBe(200);
    await admin(c, 'POST', '/faults', { kind: 'status' });
    expect((await admin(c, 'DELETE', '/faults')).status).toBe(204);
    expect((await call(c.url, '/health')).status).toBe(200);
  });

  it('revokes, pauses, unpauses, approves, refuses and accepts; reads the referee and the journal', async () => {
    const c = (cloud = await startFakeCloud({ devices: 2 }));
    const [a, b] = c.devices;
    expect(await heartbeat(c, 0)).toBe(204);
    expect((await admin(c, 'POST', `/devices/${a!.id}/pause`)).status).toBe(204);
    expect((await admin(c, 'GET', `/devices/${a!.id}`)).body!.status).toBe('paused');
    expect((await admin(c, 'POST', `/devices/${a!.id}/unpause`)).status).toBe(204);
    expect((await admin(c, 'POST', `/devices/${b!.id}/revoke`)).status).toBe(204);
    expect(await heartbeat(c, 1)).toBe(401);
    expect((await admin(c, 'POST', '/devices/nobody/revoke')).status).toBe(404);
    expect((await admin(c, 'GET', `/referee/${a!.id}`)).body).toMatchObject({ heartbeats: 1, successfulHeartbeats: 1, tooSoon: 0 });
    const journal = await admin(c, 'GET', '/journal');
    expect(journal.body).toHaveLength(2);
    expect((await admin(c, 'GET', `/journal?since=${journal.body![1].t}`)).body).toHaveLength(1);
    expect((await admin(c, 'POST', '/approve', { user_code: '123456' })).status).toBe(404);
    expect((await admin(c, 'POST', '/approve', {})).status).toBe(400);
    expect((await admin(c, 'POST', '/refuse')).status).toBe(204);
    await expect(fetch(`${c.url}/health`)).rejects.toThrow();
    expect((await admin(c, 'POST', '/accept')).status).toBe(204);
    expect((await fetch(`${c.url}/health`)).status).toBe(200);
    expect((await admin(c, 'GET', '/devices')).body).toHaveLength(2);
  });

  it('lists every asset, in creation order', async () => {
    const c = (cloud = await startFakeCloud({ devices: 2 }));
    expect((await admin(c, 'GET', '/assets')).body).toEqual([]);
    for (const [i, name] of ['a.mp4', 'b.mp4'].entries()) {
      const body = JSON.stringify({ name, filetype: 'video/mp4', filesize: 10, offset: 0 });
      const r = await call(c.url, '/v2/devices/assets', { method: 'POST', token: c.devices[i]!.accessToken, headers: { 'content-type': 'application/json' }, body });
      expect(r.status).toBe(200);
    }
    const listed = (await admin(c, 'GET', '/assets')).body as unknown as Json[];
    expect(listed.map((a) => [a.name, a.deviceId, a.complete])).toEqual([
      ['a.mp4', c.devices[0]!.id, false],
      ['b.mp4', c.devices[1]!.id, false],
    ]);
    expect((await admin(c, 'GET', `/assets/${listed[0]!.id}`)).body).toEqual(listed[0]);
  });
});

describe('standalone (main.ts)', () => {
  let dir: string;
  let bundle: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'fake-cloud-'));
    bundle = path.join(dir, 'fake-cloud.mjs');
    await build({
      entryPoints: [path.join(process.cwd(), 'test/fake-cloud/main.ts')],
      outfile: bundle,
      bundle: true,
      platform: 'node',
      format: 'esm',
      logLevel: 'silent',
      banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints one JSON line, serves HTTPS with the CA file it names, and closes cleanly on SIGTERM (CA file removed)', async () => {
    let caFile = '';
    const child = spawn(process.execPath, [bundle, '--port', '0', '--devices', '3', '--time-scale', '60', '--auto-approve', '5'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).once('line', resolve);
        child.once('exit', () => reject(new Error('exited before printing')));
      });
      const info = JSON.parse(line) as Json;
      expect(info.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(info.adminUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      caFile = info.caFile as string;
      expect(readFileSync(caFile, 'utf8')).toMatch(/^-----BEGIN CERTIFICATE-----/);
      expect(info.devices).toHaveLength(3);
      expect(Object.keys(info.devices[0]).sort()).toEqual(
        ['accessToken', 'clientId', 'clientSecret', 'id', 'name', 'projectId', 'projectName', 'refreshToken'].sort(),
      );
      // Verified against the CA file the line names, and nothing else.
      const status = await new Promise<number | undefined>((resolve, reject) => {
        const req = httpsRequest(`${info.url}/v2/devices/heartbeat`, {
          method: 'POST',
          ca: readFileSync(caFile, 'utf8'),
          headers: { authorization: `Bearer ${info.devices[0].accessToken}`, 'x-client-version': '1.0.0' },
        }, (res) => {
          res.resume();
          resolve(res.statusCode);
        });
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(204);
      const referee = (await (await fetch(`${info.adminUrl}/referee/${info.devices[0].id}`)).json()) as Json;
      expect(referee.heartbeats).toBe(1);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(existsSync(caFile)).toBe(false);
  });

  it('serves plain HTTP with --plain-http (caFile empty)', async () => {
    const child = spawn(process.execPath, [bundle, '--plain-http', '--devices', '1'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).once('line', resolve);
        child.once('exit', () => reject(new Error('exited before printing')));
      });
      const info = JSON.parse(line) as Json;
      expect(info.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(info.caFile).toBe('');
      expect((await fetch(`${info.url}/health`)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });

  it('exits 64 with a usage line on a bad option', async () => {
    const child = spawn(process.execPath, [bundle, '--devices', 'many'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(64);
    expect(err).toMatch(/--devices must be a number/);
  });
});
