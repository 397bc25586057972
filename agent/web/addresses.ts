// Where a person opens the page: the links `web-pin`, GET /v1/web, the
// daemon's log line and the simulator print. For a wildcard listen address
// (0.0.0.0, ::) each IPv4 address of the camera's interfaces that is not
// loopback; else the address or name it listens on.
import os from 'node:os';
import type { WebSettings } from '../config/types.js';

export function pageUrls(web: Pick<WebSettings, 'host' | 'port' | 'tls'>, interfaces: () => ReturnType<typeof os.networkInterfaces> = os.networkInterfaces): string[] {
  const scheme = web.tls === undefined ? 'http' : 'https';
  const port = (web.tls === undefined && web.port === 80) || (web.tls !== undefined && web.port === 443) ? '' : `:${web.port}`;
  const url = (host: string): string => `${scheme}://${host.includes(':') ? `[${host}]` : host}${port}/`;
  if (web.host !== '0.0.0.0' && web.host !== '::') return [url(web.host)];
  const v4 = Object.values(interfaces())
    .flatMap((list) => list ?? [])
    .filter((a) => a.family === 'IPv4' && !a.internal)
    .map((a) => a.address);
  return v4.length > 0 ? [...new Set(v4)].map(url) : [url('127.0.0.1')];
}
