// A throwaway certificate authority for the fake cloud, made in-process.
//
// Why not `openssl` or a package: the fake runs in a slim container image
// (packaging/containers/fake-cloud.Dockerfile) that has no openssl binary, a
// spawn per start would cost tens of ms in suites that start the fake
// hundreds of times, and a package (node-forge, selfsigned) brings RSA key
// generation in JavaScript (hundreds of ms) or a large dependency for what is
// ~150 lines of DER: node:crypto makes P-256 keys and signs; this file only
// lays out the X.509 structure (RFC 5280) around them. A CA and a server
// certificate take about 2 ms.
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';

// --- DER ------------------------------------------------------------------

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const tlv = (tag: number, body: Buffer): Buffer => Buffer.concat([Buffer.from([tag]), len(body.length), body]);
const seq = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
const explicit = (n: number, body: Buffer): Buffer => tlv(0xa0 + n, body);
const octets = (b: Buffer): Buffer => tlv(0x04, b);
const bits = (b: Buffer, unused = 0): Buffer => tlv(0x03, Buffer.concat([Buffer.from([unused]), b]));
const bool = (v: boolean): Buffer => tlv(0x01, Buffer.from([v ? 0xff : 0]));
const utf8 = (s: string): Buffer => tlv(0x0c, Buffer.from(s, 'utf8'));

function integer(b: Buffer): Buffer {
  let body = b;
  while (body.length > 1 && body[0] === 0 && (body[1] as number) < 0x80) body = body.subarray(1);
  if ((body[0] as number) >= 0x80) body = Buffer.concat([Buffer.from([0]), body]);
  return tlv(0x02, body);
}

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const out: number[] = [40 * (parts[0] as number) + (parts[1] as number)];
  for (const p of parts.slice(2)) {
    const chunk: number[] = [p & 0x7f];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift(0x80 | (v & 0x7f));
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

/** UTCTime for 1950..2049, GeneralizedTime otherwise (RFC 5280, 4.1.2.5). */
function time(ms: number): Buffer {
  const iso = new Date(ms).toISOString(); // 2026-11-25T17:04:09.123Z
  const digits = iso.slice(0, 19).replace(/[-T:]/g, '') + 'Z'; // 20261125170409Z
  const year = new Date(ms).getUTCFullYear();
  return year >= 1950 && year < 2050 ? tlv(0x17, Buffer.from(digits.slice(2))) : tlv(0x18, Buffer.from(digits));
}

const name = (cn: string): Buffer => seq(set(seq(oid('2.5.4.3'), utf8(cn))));
const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));
}

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  // Full IPv6 expansion: '::1' -> 16 bytes.
  const [head = '', tail = ''] = ip.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === '' ? [] : tail.split(':');
  const groups = ip.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

function subjectAltNames(hosts: readonly string[]): Buffer {
  return seq(...hosts.map((h) => (isIP(h) ? tlv(0x87, ipBytes(h)) : tlv(0x82, Buffer.from(h, 'ascii')))));
}

// --- certificates ----------------------------------------------------------

export interface KeyPair {
  privateKey: KeyObject;
  publicKey: KeyObject;
}

export interface Issuer {
  commonName: string;
  keys: KeyPair;
  /** The PEM of the issuer's own certificate (what a client trusts). */
  certPem: string;
}

interface CertSpec {
  commonName: string;
  subjectKeys: KeyPair;
  issuer: { commonName: string; keys: KeyPair };
  notBefore: number;
  notAfter: number;
  isCa: boolean;
  hosts?: readonly string[];
}

const keyId = (k: KeyPair): Buffer => createHash('sha1').update(k.publicKey.export({ type: 'spki', format: 'der' })).digest();

function certificateDer(spec: CertSpec): Buffer {
  const serial = randomBytes(16);
  serial[0] = (serial[0] as number) & 0x7f; // positive
  const exts = [
    extension('2.5.29.19', true, spec.isCa ? seq(bool(true)) : seq()),
    // CA: keyCertSign and cRLSign; leaf: digitalSignature.
    extension('2.5.29.15', true, spec.isCa ? bits(Buffer.from([0x06]), 1) : bits(Buffer.from([0x80]), 7)),
    extension('2.5.29.14', false, octets(keyId(spec.subjectKeys))),
    extension('2.5.29.35', false, seq(tlv(0x80, keyId(spec.issuer.keys)))),
  ];
  if (!spec.isCa) {
    exts.push(extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))));
    exts.push(extension('2.5.29.17', false, subjectAltNames(spec.hosts ?? [])));
  }
  const tbs = seq(
    explicit(0, integer(Buffer.from([2]))),
    integer(serial),
    ECDSA_SHA256,
    name(spec.issuer.commonName),
    seq(time(spec.notBefore), time(spec.notAfter)),
    name(spec.commonName),
    spec.subjectKeys.publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, seq(...exts)),
  );
  const signature = sign('sha256', tbs, spec.issuer.keys.privateKey);
  return seq(tbs, ECDSA_SHA256, bits(signature));
}

const pem = (der: Buffer): string => `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n?$/, '\n')}-----END CERTIFICATE-----\n`;

const newKeys = (): KeyPair => generateKeyPairSync('ec', { namedCurve: 'P-256' });

const DAY_MS = 24 * 3600_000;

/** A self-signed CA valid from a day ago for ten years. */
export function makeCa(commonName: string, nowMs = Date.now()): Issuer {
  const keys = newKeys();
  const der = certificateDer({ commonName, subjectKeys: keys, issuer: { commonName, keys }, notBefore: nowMs - DAY_MS, notAfter: nowMs + 3650 * DAY_MS, isCa: true });
  return { commonName, keys, certPem: pem(der) };
}

export interface ServerCertificate {
  /** The server certificate then its issuer's, PEM. */
  certPem: string;
  keyPem: string;
}

/** A server certificate for `hosts` (names and IP addresses) signed by `issuer`. */
export function makeServerCertificate(issuer: Issuer, hosts: readonly string[], notBefore: number, notAfter: number): ServerCertificate {
  const keys = newKeys();
  const der = certificateDer({ commonName: hosts[0] ?? 'fake-cloud', subjectKeys: keys, issuer, notBefore, notAfter, isCa: false, hosts });
  return { certPem: pem(der) + issuer.certPem, keyPem: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}

/** The names the fake's good certificate is valid for: where it listens. */
export const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '::1'] as const;

/**
 * The certificates the fake can serve (control.serveCertificate):
 * - good: valid now for the loopback names, signed by the fake's CA;
 * - not-yet-valid: valid from `notBefore` (default 3 days ahead) for 30 days;
 * - expired: valid for 30 days up to `notAfter` (default 3 days ago);
 * - wrong-host: valid now, but only for `wrong-host.invalid`;
 * - unknown-ca: valid now for the loopback names, signed by another CA nobody trusts;
 * - custom: `notBefore`/`notAfter`/`hosts` as given, signed by the fake's CA.
 */
export type CertificateKind = 'good' | 'not-yet-valid' | 'expired' | 'wrong-host' | 'unknown-ca' | 'custom';
export const CERTIFICATE_KINDS: readonly CertificateKind[] = ['good', 'not-yet-valid', 'expired', 'wrong-host', 'unknown-ca', 'custom'];

export interface CertificateChoice {
  kind: CertificateKind;
  /** Epoch ms (not-yet-valid, custom). */
  notBefore?: number;
  /** Epoch ms (expired, custom). */
  notAfter?: number;
  /** Names and addresses (custom; default the loopback names). */
  hosts?: string[];
}

/** Throws on a choice that cannot mean anything, so a typo in a test fails loudly. */
export function validateCertificateChoice(value: unknown): CertificateChoice {
  if (value === null || typeof value !== 'object') throw new Error('certificate choice must be an object');
  const c = value as Record<string, unknown>;
  if (!CERTIFICATE_KINDS.includes(c.kind as CertificateKind)) throw new Error(`unknown certificate kind: ${String(c.kind)} (one of ${CERTIFICATE_KINDS.join(', ')})`);
  for (const k of ['notBefore', 'notAfter']) if (c[k] !== undefined && !Number.isFinite(c[k])) throw new Error(`certificate.${k} must be epoch ms`);
  if (c.hosts !== undefined && (!Array.isArray(c.hosts) || !c.hosts.every((h) => typeof h === 'string' && h !== ''))) throw new Error('certificate.hosts must be a list of names');
  return c as unknown as CertificateChoice;
}

export function certificateFor(ca: Issuer, choice: CertificateChoice, nowMs = Date.now()): ServerCertificate {
  const hosts = choice.hosts ?? [...LOOPBACK_HOSTS];
  switch (choice.kind) {
    case 'good':
      return makeServerCertificate(ca, LOOPBACK_HOSTS, nowMs - DAY_MS, nowMs + 30 * DAY_MS);
    case 'not-yet-valid': {
      const from = choice.notBefore ?? nowMs + 3 * DAY_MS;
      return makeServerCertificate(ca, LOOPBACK_HOSTS, from, from + 30 * DAY_MS);
    }
    case 'expired': {
      const until = choice.notAfter ?? nowMs - 3 * DAY_MS;
      return makeServerCertificate(ca, LOOPBACK_HOSTS, until - 30 * DAY_MS, until);
    }
    case 'wrong-host':
      return makeServerCertificate(ca, ['wrong-host.invalid'], nowMs - DAY_MS, nowMs + 30 * DAY_MS);
    case 'unknown-ca':
      return makeServerCertificate(makeCa('Unknown CA (not trusted)', nowMs), LOOPBACK_HOSTS, nowMs - DAY_MS, nowMs + 30 * DAY_MS);
    case 'custom':
      return makeServerCertificate(ca, hosts, choice.notBefore ?? nowMs - DAY_MS, choice.notAfter ?? nowMs + 30 * DAY_MS);
  }
}
