// The advice at the end of a message about pairing: one home, and with
// C2C_TOKEN set it says what can help (pairing cannot while the token in the
// environment wins).
import { describe, expect, it } from '@jest/globals';
import { fitAdvice, pairAdvice, PAIR_ADVICE, splitAdvice, TOKEN_IN_ENV_ADVICE } from '../../agent/lib/advice.js';

describe('advice', () => {
  it('is "run `c2c-agent pair`" without C2C_TOKEN, and names C2C_TOKEN with it', () => {
    expect(pairAdvice(false)).toBe('run `c2c-agent pair`');
    expect(pairAdvice(true)).toBe('C2C_TOKEN is set and wins over pairing: give a valid token in C2C_TOKEN, or unset it and run `c2c-agent pair`');
  });

  it('fits a message from anywhere: every "run `c2c-agent pair`" becomes the C2C_TOKEN advice when it is set, once', () => {
    const message = 'unit not authorized: GET /v2/devices/me: HTTP 401 (the token was rejected; run `c2c-agent pair`)';
    expect(fitAdvice(message, false)).toBe(message);
    const fitted = fitAdvice(message, true);
    expect(fitted).toBe(`unit not authorized: GET /v2/devices/me: HTTP 401 (the token was rejected; ${TOKEN_IN_ENV_ADVICE})`);
    expect(fitAdvice(fitted, true)).toBe(fitted);
  });

  it('splits a trailing piece of advice off a reason, so `status` says it once', () => {
    expect(splitAdvice(`the service refused the refresh token (invalid_grant); ${PAIR_ADVICE}`)).toEqual({ text: 'the service refused the refresh token (invalid_grant)', advice: PAIR_ADVICE });
    expect(splitAdvice(`refused; ${TOKEN_IN_ENV_ADVICE}`)).toEqual({ text: 'refused', advice: TOKEN_IN_ENV_ADVICE });
    expect(splitAdvice(`GET /v2/devices/me: HTTP 401 (the token was rejected; ${TOKEN_IN_ENV_ADVICE})`)).toEqual({ text: 'GET /v2/devices/me: HTTP 401 (the token was rejected)', advice: TOKEN_IN_ENV_ADVICE });
    expect(splitAdvice('network ECONNREFUSED')).toEqual({ text: 'network ECONNREFUSED' });
  });
});
