// The service API and storage over HTTPS: extra CAs added to (not replacing)
// the system's, TLS failures told apart in words with their own kinds and
// exit codes, and the clock check (an unverified GET /health whose Date alone
// is read, no credential sent) telling this unit's clock from the certificate.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeCloud, type FakeCloud } from '../fake-cloud/index.js';
import { certificateFor, makeCa } from '../fake-cloud/certs.js';
import { createServiceApi, type ServiceApi } from '../../agent/api/service.js';
import { createStorageClient } from '../../agent/api/storage.js';
import { secureContextFor } from '../../agent/api/trust.js';
import { readCaFile } from '../../agent/lib/ca-file.js';
import { AgentError, EXIT } from '../../agent/lib/errors.js';
import { SystemClock } from '../../agent/lib/clock.js';
import { failure } from './failure.js';

const DAY = 24 * 3600_000;
let cloud: FakeCloud;
let dir: string;
const clients: Array<{ close(): void }> = [];

beforeAll(async () => {
  cloud = await startFakeCloud({ tls: true, devices: 1 });
  dir = mkdtempSync(join(tmpdir(), 'c2c-tls-'));
});
afterEach(() => {
  cloud.control.serveCertificate({ kind: 'good' });
  cloud.control.setDateOffset(0);
  for (const c of clients.splice(0)) c.close();
});
afterAll(async () => {
  await cloud.close();
  rmSync(dir, { recursive: true, force: true });
});

const extraCas = () => readCaFile(cloud.caFile, 'test caFile');

function client(o: { trust?: boolean; token?: string; baseUrl?: string } = {}): ServiceApi {
  const api = createServiceApi({
    baseUrl: o.baseUrl ?? cloud.url,
    token: o.token ?? cloud.devices[0]!.accessToken,
    firmwareVersion: '1.0.0',
    agentVersion: '9.9.9',
    clock: new SystemClock(1),
    ...(o.trust !== false && { extraCas: extraCas() }),
  });
  clients.push(api);
  return api;
}

describe('trust', () => {
  it('trusts the caFile CA besides the system roots, in one secure context made once', async () => {
    expect((await client().getDevice()).value.id).toBe(cloud.devices[0]!.id);
    const ctx = secureContextFor(extraCas());
    expect(secureContextFor(extraCas())).toBe(ctx);
    expect(secureContextFor(undefined)).toBeUndefined();
  });

  it('with caFile, NODE_EXTRA_CA_CERTS is still honoured (both added, neither replaced)', async () => {
    const other = await startFakeCloud({ tls: true, devices: 1 });
    const before = process.env.NODE_EXTRA_CA_CERTS;
    process.env.NODE_EXTRA_CA_CERTS = other.caFile;
    try {
      expect((await client().getDevice()).value.id).toBe(cloud.devices[0]!.id);
      const viaEnv = client({ baseUrl: other.url, token: other.devices[0]!.accessToken });
      expect((await viaEnv.getDevice()).value.id).toBe(other.devices[0]!.id);
    } finally {
      if (before === undefined) delete process.env.NODE_EXTRA_CA_CERTS;
      else process.env.NODE_EXTRA_CA_CERTS = before;
      await other.close();
    }
  });

  it('without caFile a private CA is refused in words: kind tls, exit 76, what to do', async () => {
    const e = await failure(client({ trust: false }).getDevice());
    expect(e.kind).toBe('tls');
    expect(e.exitCode).toBe(EXIT.protocol);
    expect(e.message).toBe("GET /v2/devices/me: the service's certificate is not signed by a CA this unit trusts; if the service uses a private CA, give its certificate with caFile (or NODE_EXTRA_CA_CERTS); otherwise something on the network is answering for the service (a proxy or a captive portal)");
    expect(e.message).not.toMatch(/SELF_SIGNED|OpenSSL|routines/);
  });

  it('storage PUTs trust the same CA, and tell the same failures apart', async () => {
    // The fake's /health stands in for a storage URL: any HTTPS answer proves the handshake.
    const put = (extra: boolean) => {
      const s = createStorageClient({ clock: new SystemClock(1), ...(extra && { extraCas: extraCas() }) });
      clients.push(s);
      return s.put({ url: `${cloud.url}/health`, body: Buffer.from('x'), length: 1, contentType: 'video/mp4' });
    };
    const trusted = await failure(put(true));
    expect(trusted.kind).not.toBe('tls'); // an HTTP answer (not a storage URL), not a TLS failure
    expect(trusted.status).toBeDefined();
    const refused = await failure(put(false));
    expect(refused.kind).toBe('tls');
  });

  it("storage dates a certificate failure by the agent's Clock (wallNow), as the service API does, not by the process's own Date", async () => {
    cloud.control.serveCertificate({ kind: 'expired' });
    const clock = new (class extends SystemClock {
      override wallNow(): number {
        return Date.UTC(2031, 0, 2);
      }
    })(1);
    const s = createStorageClient({ clock, extraCas: extraCas() });
    clients.push(s);
    const e = await failure(s.put({ url: `${cloud.url}/health`, body: Buffer.from('x'), length: 1, contentType: 'video/mp4' }));
    expect(e.kind).toBe('tls');
    expect(e.message).toContain('(2031-01-02T00:00:00.000Z)');
  });

  it('a CA file that holds no certificate is one line naming the file, exit 78', () => {
    const bad = join(dir, 'not-a-ca.pem');
    writeFileSync(bad, 'hello\n');
    const e = (() => {
      try {
        readCaFile(bad, '--ca-file');
      } catch (err) {
        return err as AgentError;
      }
      throw new Error('no error');
    })();
    expect(e.exitCode).toBe(EXIT.config);
    expect(e.message).toContain(bad);
    expect(e.message).toContain('--ca-file');
    const garbled = join(dir, 'garbled.pem');
    writeFileSync(garbled, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    expect(() => readCaFile(garbled, '--ca-file')).toThrow(/certificate 1 of 1 is not a valid X\.509 certificate/);
    expect(() => readCaFile(join(dir, 'missing.pem'), '--ca-file')).toThrow(/missing\.pem/);
  });
});

describe('TLS failures told apart', () => {
  it('a certificate for another host', async () => {
    cloud.control.serveCertificate({ kind: 'wrong-host' });
    const e = await failure(client().getDevice());
    expect(e).toMatchObject({ kind: 'tls', details: { code: 'ERR_TLS_CERT_ALTNAME_INVALID' } });
    expect(e.message).toMatch(/certificate is for another host name than the API URL's; check the host name in the API URL$/);
  });

  it('a certificate signed by an unknown CA', async () => {
    cloud.control.serveCertificate({ kind: 'unknown-ca' });
    const e = await failure(client().getDevice());
    expect(e.kind).toBe('tls');
    expect(e.message).toMatch(/not signed by a CA this unit trusts/);
  });

  it('https:// against a plain-HTTP port', async () => {
    const plain = await startFakeCloud({ devices: 1 });
    try {
      const e = await failure(client({ baseUrl: plain.url.replace('http:', 'https:') }).getDevice());
      expect(e.kind).toBe('tls');
      expect(e.exitCode).toBe(EXIT.protocol);
      expect(e.message).toBe("GET /v2/devices/me: the server answered in plain HTTP where HTTPS was expected; check the API URL's scheme and port (http:// is allowed on loopback only)");
    } finally {
      await plain.close();
    }
  });

  it('expired while the clocks agree: the certificate is out of date, not the clock (tls)', async () => {
    cloud.control.serveCertificate({ kind: 'expired' });
    const e = await failure(client().getDevice());
    expect(e).toMatchObject({ kind: 'tls', details: { code: 'CERT_HAS_EXPIRED' } });
    expect(e.message).toMatch(/certificate has expired while this unit's clock agrees with the service's \(\d+ s apart\); the service must fix its certificate$/);
  });

  it('not yet valid with the service 3 days ahead: this unit\'s clock (kind clock, exit 75, the offset)', async () => {
    cloud.control.setDateOffset(3 * DAY);
    cloud.control.serveCertificate({ kind: 'not-yet-valid', notBefore: Date.now() + 3 * DAY - 3600_000 });
    const e = await failure(client().getDevice());
    expect(e.kind).toBe('clock');
    expect(e.exitCode).toBe(EXIT.tempfail);
    expect(e.message).toBe("GET /v2/devices/me: this unit's clock is 3 days behind the service; certificates cannot be checked until the time is set (NTP)");
    expect(e.details.clockOffsetMs).toBeGreaterThan(3 * DAY - 5000);
  });

  it('expired with the service 4 days behind: this unit is ahead', async () => {
    cloud.control.setDateOffset(-4 * DAY);
    cloud.control.serveCertificate({ kind: 'expired', notAfter: Date.now() - DAY });
    const e = await failure(client().getDevice());
    expect(e.kind).toBe('clock');
    expect(e.message).toMatch(/this unit's clock is 4 days ahead of the service;/);
  });
});

describe('the clock check', () => {
  let server: Server;
  let seen: Array<{ method?: string; url?: string; headers: Record<string, unknown> }>;
  let url: string;
  beforeAll(async () => {
    const ca = makeCa('clock-check CA');
    const cert = certificateFor(ca, { kind: 'not-yet-valid' });
    seen = [];
    server = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
      seen.push({ method: req.method, url: req.url, headers: { ...req.headers } });
      res.setHeader('date', new Date(Date.now() + 5 * DAY).toUTCString());
      res.end(JSON.stringify({ status: 'ok', secret: 'x'.repeat(1000) }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    writeFileSync(join(dir, 'clock-ca.pem'), ca.certPem);
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('is one unverified GET /health carrying no credential, and only its Date is used', async () => {
    const api = client({ baseUrl: url, token: 'tok_secret_never_sent', trust: false });
    clients.push(api);
    seen.length = 0;
    const e = await failure(api.getDevice());
    expect(e.kind).toBe('clock');
    expect(e.message).toMatch(/5 days behind the service/);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.method).toBe('GET');
    expect(seen[0]!.url).toBe('/health');
    expect(seen[0]!.headers.authorization).toBeUndefined();
    expect(JSON.stringify(seen[0]!.headers)).not.toContain('tok_secret_never_sent');
    expect(e.message).not.toContain('tok_secret_never_sent');
  });

  it('is asked at most once a minute: a second failure reuses the answer', async () => {
    const api = client({ baseUrl: url, trust: false });
    seen.length = 0;
    await failure(api.getDevice());
    const e = await failure(api.heartbeat());
    expect(e.kind).toBe('clock');
    expect(seen).toHaveLength(1);
  });

  it('without a Date in the answer, a certificate not yet valid is still said to be about the clock, with the unit\'s date', async () => {
    const ca = makeCa('no-date CA');
    const cert = certificateFor(ca, { kind: 'not-yet-valid' });
    const noDate = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
      res.sendDate = false;
      res.end();
    });
    await new Promise<void>((r) => noDate.listen(0, '127.0.0.1', r));
    try {
      const api = client({ baseUrl: `https://127.0.0.1:${(noDate.address() as AddressInfo).port}`, trust: false });
      const e = await failure(api.getDevice());
      expect(e.kind).toBe('clock');
      expect(e.details.clockOffsetMs).toBeUndefined();
      expect(e.message).toMatch(/the service's certificate is not valid yet by this unit's clock \(\d{4}-\d\d-\d\dT[^)]+\); set the time \(NTP\)$/);
    } finally {
      noDate.closeAllConnections();
      await new Promise<void>((r) => noDate.close(() => r()));
    }
  });
});

describe('http:// against a server that speaks TLS', () => {
  it('says the server speaks HTTPS and that the API URL must start with https://, not "check the network"', async () => {
    const plain = cloud.url.replace(/^https:/, 'http:');
    const e = await failure(client({ baseUrl: plain }).getDevice());
    expect(e.kind).toBe('network');
    expect(e.message).toContain('this server may speak HTTPS (TLS): the API URL must then start with https://');
    expect(e.message).not.toContain('check the network');
  });
});
