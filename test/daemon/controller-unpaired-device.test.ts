// Issue 29: once the unit is unpaired (the daemon's own unpair, a
// credentials file gone), revoked (the service refuses the refresh token) or
// refused (403), the status no longer shows the device it had: `device` is
// null in needs-pairing at once (docs/local-api.md, "The status document"),
// not the last record with its "online".
import { describe, expect, it } from '@jest/globals';
import { statusDocument } from '../../agent/core/status-document.js';
import { MIN, setup } from './controller-harness.js';
import type { Behaviour } from './fake-api.js';

const ok: Behaviour = { outcome: 'ok' };

describe('needs-pairing clears the device from the status at once', () => {
  it('the daemon unpaired (credentialsReplaced, no credentials any more): the next snapshot has no device', async () => {
    let paired = true;
    const h = setup({ noCredentials: () => !paired, behave: () => ok });
    h.controller.start();
    await h.clock.advance(MIN);
    expect(h.controller.snapshot().device).toMatchObject({ id: expect.any(String) });
    paired = false;
    h.bus.emit('credentialsReplaced', { why: 'unpaired' });
    expect(h.controller.currentState).toBe('needs-pairing');
    const last = h.published.at(-1)!.snap;
    expect(last.state).toBe('needs-pairing');
    expect(last.device).toBeUndefined();
    expect(last.project).toBeUndefined();
    expect(statusDocument(last, {}).device).toBeNull();
    await h.controller.stop();
  });

  it('revoked (tokensRejected): no device from that snapshot on', async () => {
    const h = setup({ behave: () => ok });
    h.controller.start();
    await h.clock.advance(MIN);
    expect(h.controller.snapshot().device).toBeDefined();
    h.controller.tokensRejected('needs pairing: the service refused the refresh token (invalid_grant)');
    const first = h.published.find((p) => p.snap.state === 'needs-pairing')!.snap;
    expect(first.device).toBeUndefined();
    expect(h.controller.snapshot().device).toBeUndefined();
    await h.controller.stop();
  });

  it('refused with a 403 at a check: no device', async () => {
    let refused = false;
    const h = setup({ behave: (c) => (refused && c === 'getDevice' ? { outcome: 'forbidden' } : ok) });
    h.controller.start();
    await h.clock.advance(MIN);
    expect(h.controller.snapshot().device).toBeDefined();
    refused = true;
    h.controller.reload();
    await h.clock.advance(1_000);
    expect(h.controller.currentState).toBe('needs-pairing');
    expect(h.controller.snapshot().device).toBeUndefined();
    await h.controller.stop();
  });
});
