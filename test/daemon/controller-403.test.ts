// A 403 to a call that proves the authorization, one rule for a device check
// and a heartbeat (auth/reauthorization.ts, issue 30): the token is valid but
// lacks the access or the scope, a refresh would give a token of the same
// grant and spend the single-use refresh token, so needs-pairing at once. The
// heartbeat used to treat a 403 as a 401 (a refresh, a check, heartbeats
// again, refused again); the device check went to needs-pairing.
import { describe, expect, it } from '@jest/globals';
import { MIN, S, setup } from './controller-harness.js';
import type { Behaviour } from './fake-api.js';

const ok: Behaviour = { outcome: 'ok' };
const forbidden: Behaviour = { outcome: 'forbidden' };

describe('a 403', () => {
  it('to a heartbeat: needs-pairing at once, no refresh, no device check', async () => {
    let refused = false;
    const h = setup({ behave: (c) => (refused && c === 'heartbeat' ? forbidden : ok), refresh: async () => 'refreshed' });
    h.controller.start();
    await h.clock.advance(5 * MIN);
    expect(h.controller.currentState).toBe('online');
    const checks = h.api.count('getDevice');
    refused = true;
    const beats = h.api.count('heartbeat');
    while (h.api.count('heartbeat') === beats) await h.clock.advance(1 * S);
    await h.clock.advance(1 * S);
    expect(h.controller.currentState).toBe('needs-pairing');
    expect(h.refreshes()).toBe(0);
    expect(h.api.count('getDevice')).toBe(checks);
    // Needs-pairing looks again at its low rate only, and sends no heartbeat meanwhile.
    await h.clock.advance(10 * MIN);
    expect(h.api.count('heartbeat')).toBe(beats + 1);
    await h.controller.stop();
  });

  it('to a device check: needs-pairing at once, no refresh', async () => {
    const h = setup({ behave: (c) => (c === 'getDevice' ? forbidden : ok), refresh: async () => 'refreshed' });
    h.controller.start();
    await h.clock.advance(1 * S);
    expect(h.controller.currentState).toBe('needs-pairing');
    expect(h.refreshes()).toBe(0);
    await h.controller.stop();
  });

  it('access given back: the needs-pairing check finds the same token good again', async () => {
    let refused = true;
    const h = setup({ behave: (c) => (refused && c === 'getDevice' ? forbidden : ok) });
    h.controller.start();
    await h.clock.advance(1 * S);
    expect(h.controller.currentState).toBe('needs-pairing');
    refused = false;
    await h.clock.advance(31 * MIN);
    expect(h.controller.currentState).toBe('online');
    await h.controller.stop();
  });
});
