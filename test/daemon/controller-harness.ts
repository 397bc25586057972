// The Controller on a FakeClock with a FakeApi, a logger whose lines the
// test can read, and the snapshots it published: shared by the controller suites.
import { EventBus } from '../../agent/core/event-bus.js';
import { FakeClock } from '../support/fake-clock.js';
import { AgentError } from '../../agent/lib/errors.js';
import { createLogger } from '../../agent/lib/logger.js';
import type { Clock } from '../../agent/lib/clock.js';
import { Controller } from '../../agent/daemon/controller.js';
import { boundsOf } from '../../agent/daemon/heartbeat/policy.js';
import type { DaemonSnapshot } from '../../agent/core/state.js';
import type { RefreshResult } from '../../agent/auth/token-source.js';
import { FakeApi, seeded, type Behaviour, type Call } from './fake-api.js';
import { DEFAULT_TEST_BOUNDS } from '../support/bounds.js';

export const S = 1000;
export const MIN = 60 * S;
export const HOUR = 60 * MIN;

interface Opts {
  behave?: (call: Call, now: number) => Behaviour;
  fingerprint?: () => string | undefined;
  noCredentials?: () => boolean;
  clock?: Clock;
  fake?: FakeClock;
  /** The token source's answer to a refresh after a 401 (default: nothing to refresh with). */
  refresh?: () => Promise<RefreshResult>;
}

export function setup(o: Opts = {}) {
  const fake = o.fake ?? new FakeClock();
  const clock = o.clock ?? fake;
  const api = new FakeApi(fake, o.behave);
  const logs: { msg: string; from?: string; to?: string; reason?: string }[] = [];
  const logger = createLogger('debug', { write: (line: string) => void logs.push(JSON.parse(line)) });
  const published: { snap: DaemonSnapshot; transition: boolean }[] = [];
  const bus = new EventBus();
  bus.on('stateChanged', published, ({ snapshot, transition }) => void published.push({ snap: snapshot, transition }));
  let reloads = 0;
  let refreshes = 0;
  let refreshing: Promise<RefreshResult> | undefined;
  let tokenSince = -Infinity;
  const controller = new Controller({
    clock,
    random: seeded(5),
    logger,
    api,
    tokens: {
      reload: () => {
        reloads++;
        if (o.noCredentials?.()) throw new AgentError('unauthorized', 'not paired: no credentials in /x/credentials.json');
      },
      ...(o.fingerprint && { fingerprint: o.fingerprint }),
      // Without a refresh hook the unit behaves as with C2C_TOKEN: nothing to refresh with.
      refresh: (): Promise<RefreshResult> => {
        // As the token source: one refresh at a time; a token that came into use is newer than what was sent before it.
        refreshing ??= (async () => (refreshes++, (await o.refresh?.()) ?? 'unavailable'))()
          .then((r) => {
            if (r === 'refreshed') tokenSince = fake.now();
            return r;
          })
          .finally(() => (refreshing = undefined));
        return refreshing;
      },
      sentWithOlderToken: async (sentAt: number) => {
        const replaced = refreshing !== undefined && (await refreshing.catch(() => undefined)) === 'refreshed';
        return replaced || sentAt < tokenSince;
      },
    },
    bounds: boundsOf(DEFAULT_TEST_BOUNDS),
    persistAttempt: async () => {},
    bus,
    info: { firmwareVersion: '1.2.3', profile: 'generic', agentVersion: '0.1.0', timeScale: 1, pid: 4242 },
  });
  const transitions = (): string[] => logs.filter((l) => l.to !== undefined).map((l) => `${l.from}->${l.to}`);
  return { clock: fake, api, controller, bus, logs, published, transitions, reloads: () => reloads, refreshes: () => refreshes };
}

export const when = (pred: (call: Call, now: number) => boolean, bad: Behaviour) => (call: Call, now: number): Behaviour =>
  pred(call, now) ? bad : { outcome: 'ok' };

