// The local API's client over one kept-alive socket (node's global agent keeps
// it): a request on a socket already connected adds no listener to it. Each
// request used to leave a 'connect' listener behind (found by the schema's
// test, test/e2e/local-api-schema.test.ts: node warned at the eleventh).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import { apiRequest } from '../../agent/localapi/client.js';

let dir: string;
let server: http.Server;
const sockets = new Set<Socket>();
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'c2c-client-'));
  server = http.createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end('{"ok":true}');
  });
  server.on('connection', (s: Socket) => void sockets.add(s));
  await new Promise<void>((resolve) => server.listen(join(dir, 'api.sock'), resolve));
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

describe('apiRequest on a kept-alive socket', () => {
  it('forty requests in a row: answered, and no listener left behind', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.name);
    process.on('warning', onWarning);
    const seen = new Set<Socket>();
    try {
      for (let i = 0; i < 40; i++) {
        const reply = await apiRequest(join(dir, 'api.sock'), 'GET', '/v1/status');
        expect(reply).toEqual({ status: 200, body: { ok: true } });
      }
      for (const s of Object.values(http.globalAgent.freeSockets).flat()) if (s !== undefined) seen.add(s as Socket);
      expect(seen.size).toBeGreaterThan(0);
      for (const s of seen) expect(s.listenerCount('connect')).toBe(0);
      await new Promise((r) => setImmediate(r));
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });
});
