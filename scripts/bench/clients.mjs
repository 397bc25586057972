// What the idle part attaches to a running daemon, as a camera's own UI
// and a phone would: a reader of the local API's events, and a phone signed
// in to the web page reading its live updates. Each counts what it reads and
// drops it.
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import path from 'node:path';
import { sleep } from './procs.mjs';

/** Attaches one reader of GET /v1/events to the agent's local API once its socket appears; the lines are counted and dropped. */
export async function eventsClient(socketPath, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(socketPath)) {
    if (Date.now() > deadline) throw new Error(`bench: no local API socket at ${socketPath}`);
    await sleep(50);
  }
  const seen = { lines: 0, heartbeats: 0 };
  const req = http.request({ socketPath, path: '/v1/events' }, (res) => {
    res.setEncoding('utf8');
    res.on('data', (chunk) => {
      seen.lines += chunk.split('\n').length - 1;
      seen.heartbeats += chunk.split('"type":"heartbeat"').length - 1;
    });
  });
  req.on('error', () => undefined);
  req.end();
  return { seen, close: () => req.destroy() };
}

/** A port free on loopback now. */
export async function freePort() {
  const srv = createServer();
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address();
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

/**
 * One phone with the web page open: signs in with the PIN the daemon made in
 * its state dir, then reads the page's live updates (GET /api/v1/events,
 * server-sent events) for the whole run, counting the lines.
 */
export async function webPage(port, stateDir, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  const pinFile = path.join(stateDir, 'web-pin');
  while (!existsSync(pinFile)) {
    if (Date.now() > deadline) throw new Error(`bench: no web page PIN at ${pinFile}`);
    await sleep(50);
  }
  const pin = readFileSync(pinFile, 'utf8').trim();
  const host = `127.0.0.1:${port}`;
  const signIn = () =>
    new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/session', headers: { host, 'content-type': 'application/json' } }, (res) => {
        res.resume();
        if (res.statusCode !== 200) reject(new Error(`bench: signing in to the web page answered ${res.statusCode}`));
        else resolve(String(res.headers['set-cookie']?.[0] ?? '').split(';')[0]);
      });
      req.on('error', reject);
      req.end(JSON.stringify({ pin }));
    });
  // The PIN is made just before the page listens.
  let cookie;
  for (;;) {
    try {
      cookie = await signIn();
      break;
    } catch (err) {
      if (err.code !== 'ECONNREFUSED' || Date.now() > deadline) throw err;
      await sleep(50);
    }
  }
  const seen = { lines: 0 };
  const req = http.get({ host: '127.0.0.1', port, path: '/api/v1/events', headers: { host, cookie } }, (res) => {
    res.setEncoding('utf8');
    res.on('data', (chunk) => (seen.lines += (chunk.match(/^data: /gm) ?? []).length));
  });
  req.on('error', () => undefined);
  return { seen, close: () => req.destroy() };
}
