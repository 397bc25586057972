// The secrets registry: every registered value is scrubbed, and the tokens a
// unit rotates through for months do not pile up.
import { describe, it, expect } from '@jest/globals';
import { registerSecret, registeredSecretCount, scrub, REDACTED, ROTATING_KEPT } from '../../agent/lib/secrets.js';

describe('secrets registry', () => {
  it('a year of refreshes keeps the registry bounded; the newest tokens and the lasting secrets are still scrubbed', () => {
    registerSecret('client-secret-value-1');
    const before = registeredSecretCount();
    // 8 h tokens: three refreshes a day, two tokens each, for a year.
    let last = '';
    for (let i = 0; i < 3 * 365; i++) {
      registerSecret(`access-token-${i}-xyz`, { rotating: 'tokens' });
      last = `refresh-token-${i}-xyz`;
      registerSecret(last, { rotating: 'tokens' });
    }
    expect(registeredSecretCount()).toBeLessThanOrEqual(before + ROTATING_KEPT.tokens);
    expect(scrub(`token ${last} and client-secret-value-1`)).toBe(`token ${REDACTED} and ${REDACTED}`);
    expect(scrub('access-token-1094-xyz')).toBe(REDACTED);
    // A token from the first day is long dead and no longer looked for.
    expect(scrub('access-token-0-xyz')).toBe('access-token-0-xyz');
  });

  it('re-registering a rotating value keeps it among the newest', () => {
    registerSecret('kept-token-abc', { rotating: 'tokens' });
    for (let i = 0; i < ROTATING_KEPT.tokens - 1; i++) {
      registerSecret(`other-${i}-token`, { rotating: 'tokens' });
      registerSecret('kept-token-abc', { rotating: 'tokens' });
    }
    registerSecret('one-more-token', { rotating: 'tokens' });
    expect(scrub('kept-token-abc')).toBe(REDACTED);
  });

  it('a year of uploads keeps the URL group bounded, apart from the tokens', () => {
    registerSecret('token-of-today-abc', { rotating: 'tokens' });
    const before = registeredSecretCount();
    for (let clip = 0; clip < 100 * 365; clip++) registerSecret(`https://storage.example/part-${clip}?sig=abcdef`, { rotating: 'upload-urls' });
    expect(registeredSecretCount()).toBeLessThanOrEqual(before + ROTATING_KEPT['upload-urls']);
    expect(scrub('token-of-today-abc')).toBe(REDACTED);
    expect(scrub('https://storage.example/part-36499?sig=abcdef')).toBe(REDACTED);
  });

  it('values shorter than 6 characters are not registered (they would cut ordinary words)', () => {
    registerSecret('abc', { rotating: 'tokens' });
    registerSecret('abcde');
    expect(scrub('abc abcde')).toBe('abc abcde');
  });
});
