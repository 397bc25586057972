// The fake cloud as the process suites use it: HTTPS signed by one throwaway
// CA that every agent they spawn trusts (agent-process.ts's cleanEnv), and
// the test's own calls to it.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeCa, type Issuer } from '../fake-cloud/certs.js';
import { startFakeCloud, type FakeCloud, type FakeCloudOptions } from '../fake-cloud/index.js';

let testCa: { issuer: Issuer; file: string } | undefined;

const TEST_CA_NAME = 'c2c-agent test CA (throwaway)';

/**
 * One throwaway CA for every test process and run on this machine: every
 * fake cloud the harnesses start signs with it, and every agent they spawn
 * trusts it through NODE_EXTRA_CA_CERTS (cleanEnv), as a unit trusts a
 * private CA Node was told of: the bundle must not defeat that. (caFile is
 * tested on its own, test/integration/clock.test.ts, test/api/tls.test.ts.)
 * Made once into <tmp>/c2c-agent-test-ca (a directory renamed into place, so
 * parallel workers agree on one) and reused: nothing per process is left
 * behind when jest ends its workers.
 */
export function testCertificateAuthority(): { issuer: Issuer; file: string } {
  if (testCa !== undefined) return testCa;
  const dir = join(tmpdir(), `c2c-agent-test-ca-${process.getuid?.() ?? 'user'}`);
  const read = (): { issuer: Issuer; file: string } | undefined => {
    try {
      const certPem = readFileSync(join(dir, 'ca.pem'), 'utf8');
      const privateKey = createPrivateKey(readFileSync(join(dir, 'ca-key.pem'), 'utf8'));
      if (Date.parse(new X509Certificate(certPem).validTo) < Date.now() + 24 * 3600_000) return undefined;
      return { issuer: { commonName: TEST_CA_NAME, keys: { privateKey, publicKey: createPublicKey(privateKey) }, certPem }, file: join(dir, 'ca.pem') };
    } catch {
      return undefined;
    }
  };
  const place = (): void => {
    const issuer = makeCa(TEST_CA_NAME);
    const temp = mkdtempSync(`${dir}.tmp-`);
    // Readable by anyone (an agent a test runs as nobody trusts it too); the key by the tests only.
    chmodSync(temp, 0o755);
    writeFileSync(join(temp, 'ca.pem'), issuer.certPem, { mode: 0o644 });
    writeFileSync(join(temp, 'ca-key.pem'), issuer.keys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, { mode: 0o600 });
    try {
      renameSync(temp, dir); // fails when another worker placed one first: theirs is used
    } catch {
      rmSync(temp, { recursive: true, force: true });
    }
  };
  testCa = read();
  if (testCa === undefined) {
    place();
    testCa = read();
  }
  if (testCa === undefined) {
    // There, but expired or damaged: replaced.
    rmSync(dir, { recursive: true, force: true });
    place();
    testCa = read();
  }
  if (testCa === undefined) throw new Error(`cannot make or read the test CA in ${dir}`);
  return testCa;
}

/** The fake cloud as the end-to-end suites use it: HTTPS signed by the run's CA (`tls: false` for plain HTTP on loopback). */
export function startTestCloud(options: FakeCloudOptions = {}): Promise<FakeCloud> {
  return startFakeCloud({ tls: true, ca: testCertificateAuthority().issuer, ...options });
}

/** fetch() for a test's own calls to the fake (the test process trusts the run's CA; Node's fetch takes no CA). */
export function cloudFetch(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; text(): Promise<string>; json(): Promise<unknown>; arrayBuffer(): Promise<ArrayBuffer> }> {
  const u = new URL(url);
  const request = u.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(u, { method: init.method ?? 'GET', headers: init.headers ?? {}, ...(u.protocol === 'https:' && { ca: testCertificateAuthority().issuer.certPem }) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({
          status: res.statusCode ?? 0,
          text: async () => body.toString('utf8'),
          json: async () => JSON.parse(body.toString('utf8')) as unknown,
          arrayBuffer: async () => body.buffer.slice(body.byteOffset, body.byteOffset + body.length) as ArrayBuffer,
        });
      });
    });
    req.on('error', reject);
    req.end(init.body);
  });
}
