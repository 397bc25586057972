// The one 401 policy for calls that do not prove the authorization (assets,
// channels): CredentialsTokenSource.callRefused. At most one rotation for such
// refusals, none within MIN_REFRESH_GAP_MS of another refresh, and a call
// refused with a token rotated for exactly that reason is not a token problem.
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { MIN_REFRESH_GAP_MS } from '../../agent/auth/token-source.js';
import { flushMicrotasks } from '../support/fake-clock.js';
import { grantOf, tempDir } from '../support/auth-fixtures.js';
import { LIFETIME_S, makeSource } from '../support/token-source-harness.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir('c2c-ts401-');
});
afterEach(() => tmp.cleanup());

function withGrants() {
  const h = makeSource({ dir: tmp.dir });
  let n = 1;
  h.oauth.onRefresh = async () => {
    n++;
    return grantOf(`access-new-00000${n}`, `refresh-new-00000${n}`, LIFETIME_S);
  };
  h.source.reload();
  return h;
}

describe('callRefused', () => {
  test('the first refusal rotates once and says retry; the same call refused with the new token is not a token problem, and stays so', async () => {
    const h = withGrants();
    const sent = h.clock.now();
    await expect(h.source.callRefused('assets', sent)).resolves.toBe('retry');
    expect(h.oauth.count('refresh')).toBe(1);
    const again = h.clock.now();
    await expect(h.source.callRefused('assets', again)).resolves.toBe('not-token');
    // An hour of refusals: no further rotation, whatever the spacing.
    for (let i = 0; i < 60; i++) {
      await h.clock.advance(MIN_REFRESH_GAP_MS);
      await expect(h.source.callRefused('assets', h.clock.now())).resolves.toBe('not-token');
    }
    expect(h.oauth.count('refresh')).toBe(1);
    expect(h.lines.some((l) => /not of the token/.test(String(l.msg)))).toBe(true);
  });

  test('a request sent before the current token came into use is simply sent again, with no refresh', async () => {
    const h = withGrants();
    const old = h.clock.now();
    await h.clock.advance(1000);
    await h.source.refresh('ahead of expiry');
    expect(h.oauth.count('refresh')).toBe(1);
    await expect(h.source.callRefused('assets', old)).resolves.toBe('retry');
    expect(h.oauth.count('refresh')).toBe(1);
  });

  test('within a minute of any other refresh: no rotation, the call waits', async () => {
    const h = withGrants();
    await h.source.refresh('ahead of expiry');
    await h.clock.advance(MIN_REFRESH_GAP_MS - 1);
    await expect(h.source.callRefused('assets', h.clock.now())).resolves.toBe('not-token');
    expect(h.oauth.count('refresh')).toBe(1);
    await h.clock.advance(1);
    await expect(h.source.callRefused('assets', h.clock.now())).resolves.toBe('retry');
    expect(h.oauth.count('refresh')).toBe(2);
  });

  test('a refresh under way is shared: retry with its token', async () => {
    const h = makeSource({ dir: tmp.dir });
    h.source.reload();
    const running = h.source.refresh('ahead of expiry');
    const verdict = h.source.callRefused('assets', h.clock.now());
    await flushMicrotasks();
    h.oauth.pending[0]!.resolve(grantOf('access-new-000002', 'refresh-new-000002', LIFETIME_S));
    await running;
    await expect(verdict).resolves.toBe('retry');
    expect(h.oauth.count('refresh')).toBe(1);
  });

  test('a refresh that fails (network) or has nothing to refresh with: not-token, never a throw', async () => {
    const h = makeSource({ dir: tmp.dir });
    h.oauth.onRefresh = () => Promise.reject(new Error('token endpoint down'));
    h.source.reload();
    await expect(h.source.callRefused('assets', h.clock.now())).resolves.toBe('not-token');
    const none = makeSource({ dir: tmp.dir, client: null });
    none.source.reload();
    await expect(none.source.callRefused('assets', none.clock.now())).resolves.toBe('not-token');
  });

  test('new credentials (a pairing) start the policy afresh', async () => {
    const h = withGrants();
    await h.source.callRefused('assets', h.clock.now());
    await h.source.callRefused('assets', h.clock.now());
    h.source.reload();
    await h.clock.advance(MIN_REFRESH_GAP_MS);
    await expect(h.source.callRefused('assets', h.clock.now())).resolves.toBe('retry');
    expect(h.oauth.count('refresh')).toBe(2);
  });
});
