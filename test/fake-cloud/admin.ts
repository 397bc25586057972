// The admin HTTP endpoint (loopback only): the control API as JSON, for the
// simulator and for people driving a standalone fake by hand.
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { json, readBody, send, splitUrl } from './http.js';
import type { Reply } from './http.js';
import type { FakeCloud } from './index.js';

export interface AdminServer {
  url: string;
  close(): Promise<void>;
}

const ok = (): Reply => ({ status: 204, headers: {} });
const notFound = (what: string): Reply => json(404, { error: `unknown ${what}` });

function parse(body: Buffer): unknown {
  if (body.length === 0) return {};
  return JSON.parse(body.toString('utf8'));
}

async function route(cloud: FakeCloud, req: IncomingMessage): Promise<Reply> {
  const { path, query } = splitUrl(req.url);
  const method = req.method ?? 'GET';
  const body = (await readBody(req, 1024 * 1024)) ?? Buffer.alloc(0);
  const c = cloud.control;
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const [head, id, action] = parts;
  const known = (deviceId: string | undefined) => deviceId !== undefined && cloud.device(deviceId) !== undefined;

  if (method === 'GET' && path === '/health') return json(200, { status: 'ok' });
  if (head === 'faults' && parts.length === 1) {
    if (method === 'POST') {
      try {
        return json(201, { id: c.addFault(parse(body) as never).id });
      } catch (err) {
        return json(400, { error: (err as Error).message });
      }
    }
    if (method === 'GET') return json(200, c.listFaults());
    if (method === 'DELETE') return c.clearFaults(), ok();
  }
  if (head === 'faults' && parts.length === 2 && method === 'DELETE') {
    return c.removeFault(Number(id)) ? ok() : notFound('fault');
  }
  if (head === 'devices' && parts.length === 1 && method === 'GET') return json(200, cloud.devices);
  if (head === 'devices' && parts.length === 2 && method === 'GET') {
    const d = cloud.device(id!);
    return d ? json(200, d) : notFound('device');
  }
  if (head === 'devices' && parts.length === 3 && method === 'POST') {
    if (!known(id)) return notFound('device');
    if (action === 'revoke') return c.revokeTokens(id!), ok();
    if (action === 'pause') return c.pause(id!), ok();
    if (action === 'unpause') return c.unpause(id!), ok();
    if (action === 'expiry') {
      const b = parse(body) as { in_seconds?: unknown };
      if (b.in_seconds !== null && typeof b.in_seconds !== 'number') return json(400, { error: 'in_seconds (number or null) is required' });
      return c.setAuthorizationExpiry(id!, b.in_seconds === null ? null : b.in_seconds * 1000), ok();
    }
  }
  if (head === 'approve' && method === 'POST') {
    const b = parse(body) as { user_code?: unknown };
    if (typeof b.user_code !== 'string') return json(400, { error: 'user_code (string) is required' });
    return c.approve(b.user_code) ? ok() : notFound('or expired user_code');
  }
  if (head === 'refuse' && method === 'POST') return c.refuseConnections(), ok();
  if (head === 'accept' && method === 'POST') return await c.acceptConnections(), ok();
  if (head === 'referee' && parts.length === 2 && method === 'GET') {
    return known(id) ? json(200, cloud.referee(id!)) : notFound('device');
  }
  if (head === 'journal' && method === 'GET') {
    const since = Number(new URLSearchParams(query).get('since') ?? '-Infinity');
    return json(200, cloud.journal.filter((e) => e.t >= since));
  }
  if (head === 'assets' && parts.length === 1 && method === 'GET') return json(200, cloud.assets());
  // Real-time logging: every trigger call with the referee's findings, and every comment.
  if (head === 'presses' && parts.length === 1 && method === 'GET') return json(200, cloud.presses());
  if (head === 'comments' && parts.length === 1 && method === 'GET') return json(200, cloud.comments());
  if (head === 'assets' && parts.length === 2 && method === 'GET') {
    const a = cloud.asset(id!);
    return a ? json(200, a) : notFound('asset');
  }
  if (head === 'certificate' && parts.length === 1 && method === 'POST') {
    try {
      return c.serveCertificate(parse(body) as never), ok();
    } catch (err) {
      return json(400, { error: (err as Error).message });
    }
  }
  if (head === 'date-offset' && parts.length === 1 && method === 'POST') {
    const b = parse(body) as { ms?: unknown };
    if (typeof b.ms !== 'number' || !Number.isFinite(b.ms)) return json(400, { error: 'ms (number) is required' });
    return c.setDateOffset(b.ms), ok();
  }
  if (head === 'connection-faults' && parts.length === 1) {
    if (method === 'POST') {
      try {
        return json(201, { id: c.addConnectionFault(parse(body) as never).id });
      } catch (err) {
        return json(400, { error: (err as Error).message });
      }
    }
    if (method === 'GET') return json(200, c.listConnectionFaults());
    if (method === 'DELETE') return c.clearConnectionFaults(), ok();
  }
  if (head === 'connection-faults' && parts.length === 2 && method === 'DELETE') {
    return c.removeConnectionFault(Number(id)) ? ok() : notFound('connection fault');
  }
  if (head === 'now' && method === 'GET') return json(200, { t: cloud.now() });
  return notFound('admin route');
}

export function startAdmin(cloud: FakeCloud, host: string, port: number): Promise<AdminServer> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    route(cloud, req).then(
      (reply) => send(res, reply, {}),
      (err: unknown) => send(res, json(400, { error: String(err) }), {}),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const p = (server.address() as AddressInfo).port;
      resolve({
        url: `http://${host}:${p}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
