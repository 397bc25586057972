// The credentials file encrypted at rest (docs/files.md, docs/packaging.md
// "Secrets at rest"): the token file's JSON sealed with AES-256-GCM under a
// key derived (HKDF-SHA256) from the unit's token-key credential, so no
// access or refresh token is in clear on flash. Pure: bytes in, bytes out;
// who reads the key and the file is credentials-systemd.ts and credentials.ts.
//
// The envelope is one JSON object:
//   {"format":"c2c-agent-credentials-encrypted","version":1,"kdf":"hkdf-sha256",
//    "cipher":"aes-256-gcm","salt":…,"nonce":…,"ciphertext":…,"tag":…}
// (base64). Each write draws a new salt (so a new derived key) and a new
// nonce. Every header field, with the file's purpose, is the associated data:
// any byte changed anywhere fails authentication.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

export const ENVELOPE_FORMAT = 'c2c-agent-credentials-encrypted';
export const ENVELOPE_VERSION = 1;
/** The token-key's least size: 256 bits of key material. */
export const TOKEN_KEY_MIN_BYTES = 32;

const KDF = 'hkdf-sha256';
const CIPHER = 'aes-256-gcm';
/** What the key and the authenticated data are for: a key or a file made for anything else does not open this. */
const PURPOSE = 'c2c-agent credentials.json: OAuth access and refresh tokens';
const SALT_BYTES = 16;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

interface Envelope {
  format: typeof ENVELOPE_FORMAT;
  version: typeof ENVELOPE_VERSION;
  kdf: typeof KDF;
  cipher: typeof CIPHER;
  salt: string;
  nonce: string;
  ciphertext: string;
  tag: string;
}

/** Why an envelope did not open; never carries a byte of the key or of the plaintext. */
export type OpenFailure = 'unknown-version' | 'does-not-authenticate';

export class EnvelopeError extends Error {
  constructor(readonly why: OpenFailure) {
    super(why);
    this.name = 'EnvelopeError';
  }
}

/** Whether a parsed credentials file is an envelope (of any version) rather than the tokens in clear. */
export function isEnvelope(parsed: unknown): boolean {
  return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) && 'format' in parsed;
}

function derive(tokenKey: Uint8Array, salt: Uint8Array): Buffer {
  return Buffer.from(hkdfSync('sha256', tokenKey, salt, PURPOSE, 32));
}

function aad(e: Omit<Envelope, 'ciphertext' | 'tag'>): Buffer {
  return Buffer.from(JSON.stringify([PURPOSE, e.format, e.version, e.kdf, e.cipher, e.salt, e.nonce]), 'utf8');
}

/** The envelope's JSON text (one line and a newline) holding `plaintext`. */
export function seal(plaintext: string, tokenKey: Uint8Array): string {
  const salt = randomBytes(SALT_BYTES);
  const nonce = randomBytes(NONCE_BYTES);
  const head = { format: ENVELOPE_FORMAT, version: ENVELOPE_VERSION, kdf: KDF, cipher: CIPHER, salt: salt.toString('base64'), nonce: nonce.toString('base64') } as const;
  const cipher = createCipheriv(CIPHER, derive(tokenKey, salt), nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad(head));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const envelope: Envelope = { ...head, ciphertext: ciphertext.toString('base64'), tag: cipher.getAuthTag().toString('base64') };
  return `${JSON.stringify(envelope)}\n`;
}

/** Base64 decoded only when it is the canonical encoding of what it decodes to (Node skips bad characters and ignores spare bits). */
function strictBase64(v: unknown, bytes?: number): Buffer {
  if (typeof v !== 'string') throw new EnvelopeError('does-not-authenticate');
  const b = Buffer.from(v, 'base64');
  if (b.toString('base64') !== v || (bytes !== undefined && b.length !== bytes)) throw new EnvelopeError('does-not-authenticate');
  return b;
}

/**
 * The plaintext of a parsed envelope (isEnvelope() true). Throws
 * EnvelopeError: 'unknown-version' for a format or version this agent does
 * not write, 'does-not-authenticate' for a wrong key or an altered file.
 */
export function open(parsed: Record<string, unknown>, tokenKey: Uint8Array): string {
  if (parsed.format !== ENVELOPE_FORMAT || parsed.version !== ENVELOPE_VERSION) throw new EnvelopeError('unknown-version');
  if (parsed.kdf !== KDF || parsed.cipher !== CIPHER) throw new EnvelopeError('does-not-authenticate');
  const expected = new Set(['format', 'version', 'kdf', 'cipher', 'salt', 'nonce', 'ciphertext', 'tag']);
  if (Object.keys(parsed).some((k) => !expected.has(k))) throw new EnvelopeError('does-not-authenticate');
  const salt = strictBase64(parsed.salt, SALT_BYTES);
  const nonce = strictBase64(parsed.nonce, NONCE_BYTES);
  const ciphertext = strictBase64(parsed.ciphertext);
  const tag = strictBase64(parsed.tag, TAG_BYTES);
  const decipher = createDecipheriv(CIPHER, derive(tokenKey, salt), nonce, { authTagLength: TAG_BYTES });
  decipher.setAAD(aad({ format: ENVELOPE_FORMAT, version: ENVELOPE_VERSION, kdf: KDF, cipher: CIPHER, salt: parsed.salt as string, nonce: parsed.nonce as string }));
  decipher.setAuthTag(tag);
  let plain: Buffer;
  try {
    plain = Buffer.concat([decipher.update(ciphertext), decipher.final()]);
  } catch {
    throw new EnvelopeError('does-not-authenticate');
  }
  const text = plain.toString('utf8');
  // Authenticated, so written by an agent holding the key: still, only text it could have written.
  if (!Buffer.from(text, 'utf8').equals(plain)) throw new EnvelopeError('does-not-authenticate');
  return text;
}
