// Throwaway certificate authorities and server certificates, made in-process:
// the fake cloud's HTTPS (test/fake-cloud/certs.ts re-exports this) and the
// fuzzers' hostile TLS server (test/fuzz/lib/hostile-server.mjs) share it.
// Plain JavaScript so scripts and .mjs test code load it without a build.
//
// Why not `openssl` or a package: the fake runs in a slim container image
// (packaging/containers/fake-cloud.Dockerfile) that has no openssl binary, a
// spawn per start would cost tens of ms in suites that start the fake
// hundreds of times, and a package (node-forge, selfsigned) brings RSA key
// generation in JavaScript (hundreds of ms) or a large dependency for what is
// ~150 lines of DER: node:crypto makes P-256 keys and signs; this file only
// lays out the X.509 structure (RFC 5280) around them. A CA and a server
// certificate take a few ms (6 ms measured on a busy 2-core machine).
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { isIP } from 'node:net';
// --- DER ---

function len(n) {
  if (n < 128) return Buffer.from([n]);
  const bytes = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 255);
  return Buffer.from([128 | bytes.length, ...bytes]);
}
const tlv = (tag, body) => Buffer.concat([Buffer.from([tag]), len(body.length), body]);
const seq = (...items) => tlv(48, Buffer.concat(items));
const set = (...items) => tlv(49, Buffer.concat(items));
const explicit = (n, body) => tlv(160 + n, body);
const octets = (b) => tlv(4, b);
const bits = (b, unused = 0) => tlv(3, Buffer.concat([Buffer.from([unused]), b]));
const bool = (v) => tlv(1, Buffer.from([v ? 255 : 0]));
const utf8 = (s) => tlv(12, Buffer.from(s, 'utf8'));
function integer(b) {
  let body = b;
  while (body.length > 1 && body[0] === 0 && body[1] < 128) body = body.subarray(1);
  if (body[0] >= 128) body = Buffer.concat([Buffer.from([0]), body]);
  return tlv(2, body);
}
function oid(dotted) {
  const parts = dotted.split('.').map(Number);
  const out = [40 * parts[0] + parts[1]];
  for (const p of parts.slice(2)) {
    const chunk = [p & 127];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift(128 | v & 127);
    out.push(...chunk);
  }
  return tlv(6, Buffer.from(out));
}
/** UTCTime for 1950..2049, GeneralizedTime otherwise (RFC 5280, 4.1.2.5). */
function time(ms) {
  const iso = new Date(ms).toISOString();
  const digits = iso.slice(0, 19).replace(/[-T:]/g, '') + 'Z';
  const year = new Date(ms).getUTCFullYear();
  return year >= 1950 && year < 2050 ? tlv(23, Buffer.from(digits.slice(2))) : tlv(24, Buffer.from(digits));
}
const name = (cn) => seq(set(seq(oid('2.5.4.3'), utf8(cn))));
const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));
function extension(id, critical, value) {
  return seq(oid(id), ...critical ? [bool(true)] : [], octets(value));
}
function ipBytes(ip) {
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
function subjectAltNames(hosts) {
  return seq(...hosts.map((h) => isIP(h) ? tlv(135, ipBytes(h)) : tlv(130, Buffer.from(h, 'ascii'))));
}
// --- certificates ---

const keyId = (k) => createHash('sha1').update(k.publicKey.export({ type: 'spki', format: 'der' })).digest();
function certificateDer(spec) {
  const serial = randomBytes(16);
  serial[0] = serial[0] & 127; // positive
  const exts = [
    extension('2.5.29.19', true, spec.isCa ? seq(bool(true)) : seq()),
    // CA: keyCertSign and cRLSign; leaf: digitalSignature.
    extension('2.5.29.15', true, spec.isCa ? bits(Buffer.from([6]), 1) : bits(Buffer.from([128]), 7)),
    extension('2.5.29.14', false, octets(keyId(spec.subjectKeys))),
    extension('2.5.29.35', false, seq(tlv(128, keyId(spec.issuer.keys))))
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
    explicit(3, seq(...exts))
  );
  const signature = sign('sha256', tbs, spec.issuer.keys.privateKey);
  return seq(tbs, ECDSA_SHA256, bits(signature));
}
const pem = (der) => `-----BEGIN CERTIFICATE-----
${der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n?$/, '\n')}-----END CERTIFICATE-----
`;
const newKeys = () => generateKeyPairSync('ec', { namedCurve: 'P-256' });
const DAY_MS = 24 * 3600_000;
/** A self-signed CA valid from a day ago for ten years: { commonName, keys, certPem }. */
export function makeCa(commonName, nowMs = Date.now()) {
  const keys = newKeys();
  const der = certificateDer({ commonName, subjectKeys: keys, issuer: { commonName, keys }, notBefore: nowMs - DAY_MS, notAfter: nowMs + 3650 * DAY_MS, isCa: true });
  return { commonName, keys, certPem: pem(der) };
}
/** A server certificate for `hosts` (names and IP addresses) signed by `issuer`: { certPem (then the issuer's), keyPem }. */
export function makeServerCertificate(issuer, hosts, notBefore, notAfter) {
  const keys = newKeys();
  const der = certificateDer({ commonName: hosts[0] ?? 'fake-cloud', subjectKeys: keys, issuer, notBefore, notAfter, isCa: false, hosts });
  return { certPem: pem(der) + issuer.certPem, keyPem: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }) };
}
/** The names the good certificate is valid for: where the fake listens. */
export const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '::1'];
/**
 * The certificates the fake can serve:
 * - good: valid now for the loopback names, signed by the given CA;
 * - not-yet-valid: valid from `notBefore` (default 3 days ahead) for 30 days;
 * - expired: valid for 30 days up to `notAfter` (default 3 days ago);
 * - wrong-host: valid now, but only for `wrong-host.invalid`;
 * - unknown-ca: valid now for the loopback names, signed by another CA nobody trusts;
 * - custom: `notBefore`/`notAfter`/`hosts` as given, signed by the given CA.
 */
export const CERTIFICATE_KINDS = ['good', 'not-yet-valid', 'expired', 'wrong-host', 'unknown-ca', 'custom'];
/** Throws on a choice that cannot mean anything, so a typo in a test fails loudly. */
export function validateCertificateChoice(value) {
  if (value === null || typeof value !== 'object') throw new Error('certificate choice must be an object');
  const c = value;
  if (!CERTIFICATE_KINDS.includes(c.kind)) throw new Error(`unknown certificate kind: ${String(c.kind)} (one of ${CERTIFICATE_KINDS.join(', ')})`);
  for (const k of ['notBefore', 'notAfter']) if (c[k] !== void 0 && !Number.isFinite(c[k])) throw new Error(`certificate.${k} must be epoch ms`);
  if (c.hosts !== void 0 && (!Array.isArray(c.hosts) || !c.hosts.every((h) => typeof h === 'string' && h !== ''))) throw new Error('certificate.hosts must be a list of names');
  return c;
}
export function certificateFor(ca, choice, nowMs = Date.now()) {
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
