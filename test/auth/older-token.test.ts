// "Sent with an older token", tested in one place (token-source.ts
// `sentWithOlderToken`, issue 30). reauthorization.ts kept its own copy: the
// end of the refreshes it had started itself. So a refusal of a heartbeat
// sent before a refresh ahead of expiry (or before a reload after a pairing)
// looked like a refusal of the new token, and spent the new single-use refresh
// token on a refresh nobody needed. The controller here runs with the real
// token source, as the daemon builds them.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Controller } from '../../agent/daemon/controller.js';
import { boundsOf } from '../../agent/daemon/heartbeat/policy.js';
import { EventBus } from '../../agent/core/event-bus.js';
import { createLogger } from '../../agent/lib/logger.js';
import { FakeApi, type Behaviour, type Call } from '../daemon/fake-api.js';
import { DEFAULT_TEST_BOUNDS } from '../support/bounds.js';
import { grantOf, tempDir, writeCredentials } from '../support/auth-fixtures.js';
import { FILE_WALL, LIFETIME_S, makeSource } from '../support/token-source-harness.js';
import { seeded } from '../support/seeded.js';

const S = 1000;
const MIN = 60 * S;

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir('c2c-older-');
});
afterEach(() => tmp.cleanup());

function rig() {
  const h = makeSource({ dir: tmp.dir });
  let n = 1;
  h.oauth.onRefresh = async () => {
    n++;
    return grantOf(`access-new-00000${n}`, `refresh-new-00000${n}`, LIFETIME_S);
  };
  /** The next heartbeat sent is refused with 401, its answer 10 s later. */
  let refuseNext = false;
  const behave = (call: Call): Behaviour => {
    if (call === 'heartbeat' && refuseNext) {
      refuseNext = false;
      return { outcome: 'unauthorized', latencyMs: 10 * S };
    }
    return { outcome: 'ok' };
  };
  const api = new FakeApi(h.clock, behave);
  const controller = new Controller({
    clock: h.clock,
    random: seeded(11),
    logger: createLogger('error', { write: () => undefined }),
    api,
    tokens: h.source,
    bounds: boundsOf(DEFAULT_TEST_BOUNDS),
    persistAttempt: async () => undefined,
    bus: new EventBus(),
    info: { firmwareVersion: '1.2.3', profile: 'generic', agentVersion: '0.1.0', timeScale: 1, pid: 4242 },
  });
  /** Steps until a heartbeat refused with 401 is on its way, and returns when it was sent. */
  const refusedHeartbeatInFlight = async (): Promise<number> => {
    refuseNext = true;
    const before = api.count('heartbeat');
    while (api.count('heartbeat') === before) await h.clock.advance(1 * S);
    return api.calls.filter((c) => c.call === 'heartbeat').at(-1)!.t;
  };
  return { h, api, controller, refusedHeartbeatInFlight };
}

describe('a heartbeat refused with the token a refresh has replaced since', () => {
  it('a refresh ahead of expiry while it was on its way: checked again, no second refresh', async () => {
    const { h, api, controller, refusedHeartbeatInFlight } = rig();
    controller.start();
    await h.clock.advance(5 * MIN);
    expect(controller.currentState).toBe('online');
    await refusedHeartbeatInFlight();
    const checks = api.count('getDevice');
    await h.clock.advance(2 * S);
    // The token source's own timer would do this at 50 to 75 % of the lifetime; the heartbeat is still on its way.
    await h.source.refresh('ahead of expiry');
    expect(h.oauth.count('refresh')).toBe(1);
    await h.clock.advance(30 * S);
    expect(api.count('getDevice')).toBe(checks + 1);
    expect(h.oauth.count('refresh')).toBe(1);
    expect(h.source.current()).toBe('access-new-000002');
    expect(controller.currentState).toBe('online');
    await controller.stop();
  });

  it('a reload after a pairing while it was on its way: checked again, the new pair not refreshed', async () => {
    const { h, api, controller, refusedHeartbeatInFlight } = rig();
    controller.start();
    await h.clock.advance(5 * MIN);
    await refusedHeartbeatInFlight();
    const checks = api.count('getDevice');
    await h.clock.advance(2 * S);
    writeCredentials(h.settings.tokenFile, { access: 'access-paired-0001', refresh: 'refresh-paired-001', lifetimeS: LIFETIME_S, wallNow: FILE_WALL, ageMs: 0 });
    h.source.reload();
    await h.clock.advance(30 * S);
    expect(api.count('getDevice')).toBe(checks + 1);
    expect(h.oauth.count('refresh')).toBe(0);
    expect(h.source.current()).toBe('access-paired-0001');
    expect(controller.currentState).toBe('online');
    await controller.stop();
  });
});
