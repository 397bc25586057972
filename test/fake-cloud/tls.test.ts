// The fake's HTTPS: the throwaway CA, the certificates it can be told to
// serve (and swap mid-run), and the faults below HTTP (cut and slow handshakes).
import { afterEach, describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { X509Certificate } from 'node:crypto';
import { startFakeCloud } from './index.js';
import type { FakeCloud } from './index.js';
import { certificateFor, makeCa } from './certs.js';
import { until } from '../support/until.js';

let cloud: FakeCloud | undefined;
afterEach(async () => {
  await cloud?.close();
  cloud = undefined;
});

interface Outcome {
  status?: number;
  code?: string;
  ms: number;
}

/** GET /health with the CA given (or none): the status, or the TLS error's code. */
function health(url: string, ca: string | undefined, host = '127.0.0.1'): Promise<Outcome> {
  const started = performance.now();
  const u = new URL(url);
  return new Promise((resolve) => {
    const req = request({ host, port: u.port, path: '/health', ...(ca !== undefined && { ca }), agent: false, servername: host === '127.0.0.1' ? undefined : host }, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, ms: performance.now() - started });
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ code: err.code ?? 'none', ms: performance.now() - started }));
    req.end();
  });
}

describe('certificates made in-process', () => {
  it('a server certificate names the loopback hosts and chains to the CA', () => {
    const ca = makeCa('test CA');
    const cert = certificateFor(ca, { kind: 'good' });
    const leaf = new X509Certificate(cert.certPem);
    const root = new X509Certificate(ca.certPem);
    expect(leaf.verify(root.publicKey)).toBe(true);
    expect(leaf.checkIssued(root)).toBe(true);
    expect(root.ca).toBe(true);
    expect(leaf.ca).toBe(false);
    expect(leaf.subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
    expect(leaf.checkHost('localhost')).toBe('localhost');
    expect(leaf.checkIP('127.0.0.1')).toBe('127.0.0.1');
  });

  it('validity dates are the ones asked for, before 2050 and after it', () => {
    const ca = makeCa('test CA');
    const from = Date.UTC(2031, 0, 2, 3, 4, 5);
    const until = Date.UTC(2061, 5, 6, 7, 8, 9);
    const leaf = new X509Certificate(certificateFor(ca, { kind: 'custom', notBefore: from, notAfter: until }).certPem);
    expect(new Date(leaf.validFrom).getTime()).toBe(from);
    expect(new Date(leaf.validTo).getTime()).toBe(until);
  });
});

describe('the fake over HTTPS', () => {
  it('serves https:// with a CA file a client can trust, and removes the file at close', async () => {
    cloud = await startFakeCloud({ tls: true });
    expect(cloud.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(readFileSync(cloud.caFile, 'utf8')).toBe(cloud.caPem);
    expect(await health(cloud.url, cloud.caPem)).toMatchObject({ status: 200 });
    expect(await health(cloud.url, cloud.caPem, 'localhost')).toMatchObject({ status: 200 });
    // Not trusted without the CA.
    expect(await health(cloud.url, undefined)).toMatchObject({ code: 'SELF_SIGNED_CERT_IN_CHAIN' });
    const file = cloud.caFile;
    await cloud.close();
    cloud = undefined;
    expect(existsSync(file)).toBe(false);
  });

  it('plain HTTP stays the in-process default (no CA file)', async () => {
    cloud = await startFakeCloud();
    expect(cloud.url).toMatch(/^http:\/\//);
    expect(cloud.caFile).toBe('');
    expect((await fetch(`${cloud.url}/health`)).status).toBe(200);
  });

  it.each([
    ['not-yet-valid', 'CERT_NOT_YET_VALID'],
    ['expired', 'CERT_HAS_EXPIRED'],
    ['wrong-host', 'ERR_TLS_CERT_ALTNAME_INVALID'],
    ['unknown-ca', 'SELF_SIGNED_CERT_IN_CHAIN'],
  ] as const)('serves a %s certificate at start when asked (%s)', async (kind, code) => {
    cloud = await startFakeCloud({ tls: true, certificate: { kind } });
    expect(await health(cloud.url, cloud.caPem)).toMatchObject({ code });
  });

  it('swaps the certificate at run time: bad, then good again, also over the admin endpoint', async () => {
    cloud = await startFakeCloud({ tls: true });
    cloud.control.serveCertificate({ kind: 'expired' });
    expect(await health(cloud.url, cloud.caPem)).toMatchObject({ code: 'CERT_HAS_EXPIRED' });
    const r = await fetch(`${cloud.adminUrl}/certificate`, { method: 'POST', body: JSON.stringify({ kind: 'good' }) });
    expect(r.status).toBe(204);
    expect(await health(cloud.url, cloud.caPem)).toMatchObject({ status: 200 });
    const bad = await fetch(`${cloud.adminUrl}/certificate`, { method: 'POST', body: JSON.stringify({ kind: 'nonsense' }) });
    expect(bad.status).toBe(400);
    expect(() => cloud!.control.serveCertificate({ kind: 'custom', notBefore: Number.NaN })).toThrow(/notBefore/);
  });

  it('a cut handshake resets the connection; a slow one answers after the delay; the faults count their hits', async () => {
    cloud = await startFakeCloud({ tls: true });
    const cut = cloud.control.addConnectionFault({ kind: 'cut-handshake', count: 1 });
    expect(await health(cloud.url, cloud.caPem)).toMatchObject({ code: 'ECONNRESET' });
    expect(await health(cloud.url, cloud.caPem)).toMatchObject({ status: 200 });
    expect(cloud.control.listConnectionFaults()).toEqual([{ kind: 'cut-handshake', count: 1, id: cut.id, hits: 1 }]);
    cut.remove();
    cloud.control.addConnectionFault({ kind: 'slow-handshake', delayMs: 300 });
    const slow = await health(cloud.url, cloud.caPem);
    expect(slow.status).toBe(200);
    expect(slow.ms).toBeGreaterThanOrEqual(250);
    cloud.control.clearConnectionFaults();
    expect(cloud.control.listConnectionFaults()).toEqual([]);
    expect(() => cloud!.control.addConnectionFault({ kind: 'slow-handshake' })).toThrow(/delayMs/);
  });

  it('refusing connections drops held handshakes and accepting serves TLS again on the same port', async () => {
    cloud = await startFakeCloud({ tls: true });
    cloud.control.addConnectionFault({ kind: 'slow-handshake', delayMs: 60_000 });
    const held = health(cloud.url, cloud.caPem);
    // The connection is held once the fault has taken it.
    await until('the handshake held', () => cloud!.control.listConnectionFaults()[0]?.hits === 1);
    cloud.control.refuseConnections();
    expect((await held).code).toBe('ECONNRESET');
    expect(await health(cloud.url, cloud.caPem)).toMatchObject({ code: 'ECONNREFUSED' });
    cloud.control.clearConnectionFaults();
    await cloud.control.acceptConnections();
    expect(await health(cloud.url, cloud.caPem)).toMatchObject({ status: 200 });
  });
});
