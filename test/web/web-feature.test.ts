// The web page as the daemon runs it (agent/web/feature.ts through
// daemon/features.ts), in-process on the e2e rig: off, nothing listens and no
// route or PIN exists; on, it listens as the daemon starts, the local API
// offers the camera's UI its address and PIN, and the PIN is in no log line.
import { afterEach, describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { webPinFileOf } from '../../agent/web/pin.js';
import { MINUTE, Rig } from '../e2e/rig.js';
import { freePort } from './support.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/** One GET on loopback; the status, or the error's code when nothing listens. */
function get(port: number, path: string): Promise<number | string> {
  return new Promise((resolve) => {
    http
      .get({ host: '127.0.0.1', port, path, headers: { host: `127.0.0.1:${port}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
      .on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
  });
}

describe('the web page as a feature', () => {
  it('off (no webListen): no socket, no PIN, no GET /v1/web', async () => {
    const r = (rig = await Rig.up());
    const port = await freePort();
    r.start();
    await r.until('a heartbeat', () => r.cloud.referee(r.device.id).successfulHeartbeats >= 1, 15 * MINUTE);
    expect(await get(port, '/')).toBe('ECONNREFUSED');
    expect(existsSync(webPinFileOf(r.stateDir))).toBe(false);
    expect((await r.api('GET', '/v1/web')).status).toBe(404);
    expect(r.lines.filter((l) => l.msg.startsWith('web page'))).toEqual([]);
  });

  it('on: listens as the daemon starts, with its PIN made; GET /v1/web gives the camera UI the address and PIN; the PIN in no log line', async () => {
    const r = (rig = await Rig.up());
    const port = await freePort();
    r.start({ C2C_WEB_LISTEN: `127.0.0.1:${port}` });
    await r.until('the page listening', () => r.lines.some((l) => l.msg === 'web page listening'), MINUTE);
    const pin = readFileSync(webPinFileOf(r.stateDir), 'utf8').trim();
    expect(pin).toMatch(/^\d{8}$/);
    expect(statSync(webPinFileOf(r.stateDir)).mode & 0o777).toBe(0o600);
    expect(await get(port, '/')).toBe(200);
    const web = await r.api<Record<string, unknown>>('GET', '/v1/web');
    expect(web).toEqual({ status: 200, body: { listen: `127.0.0.1:${port}`, urls: [`http://127.0.0.1:${port}/`], https: false, pin } });
    await r.until('a heartbeat', () => r.cloud.referee(r.device.id).successfulHeartbeats >= 1, 15 * MINUTE);
    // The same PIN after a restart: it is kept, not made again.
    await r.stop();
    r.start({ C2C_WEB_LISTEN: `127.0.0.1:${port}` });
    await r.until('the page listening again', () => r.lines.filter((l) => l.msg === 'web page listening').length >= 2, MINUTE);
    expect(readFileSync(webPinFileOf(r.stateDir), 'utf8').trim()).toBe(pin);
    expect(JSON.stringify(r.lines)).not.toContain(pin);
    expect(readFileSync(join(r.runtimeDir, 'status.json'), 'utf8')).not.toContain(pin);
  });

  it('a port already taken: logged, and the daemon runs on without its page', async () => {
    const r = (rig = await Rig.up());
    const taken = http.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      r.start({ C2C_WEB_LISTEN: `127.0.0.1:${port}` });
      await r.until('two heartbeats', () => r.cloud.referee(r.device.id).successfulHeartbeats >= 2, 15 * MINUTE);
      const failed = r.lines.find((l) => l.msg === 'cannot serve the web page; the daemon runs on without it');
      expect(failed).toMatchObject({ listen: `127.0.0.1:${port}` });
      expect(String(failed?.err)).toContain('EADDRINUSE');
      expect(r.state()).toBe('online');
    } finally {
      taken.close();
    }
  });
});
