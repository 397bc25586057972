// The envelope alone (auth/credentials-envelope.ts): what seal() writes and
// what open() accepts. The file-level rules (which exit code, which line)
// are credentials-at-rest.test.ts's.
import { describe, expect, test } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { ENVELOPE_FORMAT, ENVELOPE_VERSION, EnvelopeError, isEnvelope, open, seal } from '../../agent/auth/credentials-envelope.js';

const KEY = randomBytes(32);
const PLAIN = `${JSON.stringify({ access_token: 'fca_access-token-0001', refresh_token: 'fcr_refresh-token-0001', token_type: 'bearer' }, null, 2)}\n`;

const parsed = (text: string): Record<string, unknown> => JSON.parse(text) as Record<string, unknown>;

function failure(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof EnvelopeError) return err.why;
    throw err;
  }
  throw new Error('expected an EnvelopeError');
}

describe('seal and open', () => {
  test('round trip: the same text back, and none of it in the envelope', () => {
    const sealed = seal(PLAIN, KEY);
    expect(sealed.endsWith('\n')).toBe(true);
    const env = parsed(sealed);
    expect(env).toEqual({ format: ENVELOPE_FORMAT, version: ENVELOPE_VERSION, kdf: 'hkdf-sha256', cipher: 'aes-256-gcm', salt: expect.any(String), nonce: expect.any(String), ciphertext: expect.any(String), tag: expect.any(String) });
    expect(isEnvelope(env)).toBe(true);
    expect(open(env, KEY)).toBe(PLAIN);
    for (const piece of ['fca_', 'fcr_', 'access-token', 'refresh-token', 'bearer']) expect(sealed).not.toContain(piece);
  });

  test('every write draws a new salt and nonce: the same text seals differently', () => {
    const a = parsed(seal(PLAIN, KEY));
    const b = parsed(seal(PLAIN, KEY));
    expect(a.salt).not.toBe(b.salt);
    expect(a.nonce).not.toBe(b.nonce);
    expect(a.ciphertext).not.toBe(b.ciphertext);
    expect(open(b, KEY)).toBe(PLAIN);
  });

  test('a tokens file in clear is not an envelope', () => {
    expect(isEnvelope(parsed(PLAIN))).toBe(false);
    expect(isEnvelope(null)).toBe(false);
    expect(isEnvelope([1])).toBe(false);
  });
});

describe('open refuses', () => {
  test('another key (one bit off, or a prefix of the right one)', () => {
    const env = parsed(seal(PLAIN, KEY));
    const other = Buffer.from(KEY);
    other[31] = other[31]! ^ 1;
    expect(failure(() => open(env, other))).toBe('does-not-authenticate');
    expect(failure(() => open(env, KEY.subarray(0, 31)))).toBe('does-not-authenticate');
  });

  test.each(['salt', 'nonce', 'ciphertext', 'tag'])('%s changed in one bit of what it decodes to', (field) => {
    const env = parsed(seal(PLAIN, KEY));
    const bytes = Buffer.from(env[field] as string, 'base64');
    bytes[0] = bytes[0]! ^ 0x80;
    expect(failure(() => open({ ...env, [field]: bytes.toString('base64') }, KEY))).toBe('does-not-authenticate');
  });

  test('base64 that decodes to the same bytes but is not what seal wrote (spare bits, stray characters)', () => {
    const env = parsed(seal(PLAIN, KEY));
    const tag = env.tag as string; // 16 bytes: 22 characters and '=='; the 22nd carries 4 spare bits
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const spare = tag.slice(0, 21) + alphabet[alphabet.indexOf(tag[21]!) ^ 1]! + tag.slice(22);
    expect(Buffer.from(spare, 'base64').equals(Buffer.from(tag, 'base64'))).toBe(true);
    expect(failure(() => open({ ...env, tag: spare }, KEY))).toBe('does-not-authenticate');
    expect(failure(() => open({ ...env, ciphertext: `${env.ciphertext as string}*` }, KEY))).toBe('does-not-authenticate');
  });

  test('a header field changed, removed or added', () => {
    const env = parsed(seal(PLAIN, KEY));
    expect(failure(() => open({ ...env, kdf: 'hkdf-sha512' }, KEY))).toBe('does-not-authenticate');
    expect(failure(() => open({ ...env, cipher: 'aes-128-gcm' }, KEY))).toBe('does-not-authenticate');
    const { tag: _tag, ...noTag } = env;
    expect(failure(() => open(noTag, KEY))).toBe('does-not-authenticate');
    expect(failure(() => open({ ...env, extra: 1 }, KEY))).toBe('does-not-authenticate');
  });

  test('a format or version this agent does not write', () => {
    const env = parsed(seal(PLAIN, KEY));
    expect(failure(() => open({ ...env, version: 2 }, KEY))).toBe('unknown-version');
    expect(failure(() => open({ ...env, version: '1' }, KEY))).toBe('unknown-version');
    expect(failure(() => open({ ...env, format: 'something-else' }, KEY))).toBe('unknown-version');
  });

  test("the salt or nonce of another envelope (both derive the key and are authenticated)", () => {
    const a = parsed(seal(PLAIN, KEY));
    const b = parsed(seal(PLAIN, KEY));
    expect(failure(() => open({ ...a, salt: b.salt }, KEY))).toBe('does-not-authenticate');
    expect(failure(() => open({ ...a, nonce: b.nonce }, KEY))).toBe('does-not-authenticate');
  });
});
