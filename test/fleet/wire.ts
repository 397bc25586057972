// The wire between one agent process and the in-process fake cloud: the
// transport's request handed to cloud.inject(), with what a socket adds on
// the agent's side: the request timeout on the unit's clock (a stalled
// answer fails in agent time), an abort, the unit's own network being down,
// and a dead process (a request in flight when the power goes never returns).
import type { Wire, WireResponse } from '../../agent/api/transport.js';
import type { FakeCloud } from '../fake-cloud/index.js';
import type { DeviceClock } from '../support/virtual-clock.js';

export interface WireStats {
  /** Answers by "METHOD path status" (status 0: no answer: refused, reset, timed out, aborted). */
  answers: Map<string, number>;
}

function netError(code: string, message: string, extra: Record<string, string> = {}): Error {
  return Object.assign(new Error(message), { code, ...extra });
}

export function fleetWire(cloud: Pick<FakeCloud, 'inject'>, clock: DeviceClock, networkDown: () => boolean, stats: WireStats): Wire {
  const count = (key: string): void => void stats.answers.set(key, (stats.answers.get(key) ?? 0) + 1);
  return (req) =>
    new Promise<WireResponse>((resolve, reject) => {
      // A dead process sends nothing and hears nothing.
      if (!clock.alive) return;
      const what = `${req.method} ${req.path}`;
      let done = false;
      const finish = (settleIt: () => void, status: number): void => {
        if (done) return;
        done = true;
        timer.cancel();
        req.signal?.removeEventListener('abort', onAbort);
        count(`${what} ${status}`);
        if (clock.alive) settleIt();
      };
      const onAbort = (): void => finish(() => reject(req.signal?.reason ?? netError('ABORT_ERR', 'aborted')), 0);
      const timer = clock.setTimer(
        () => finish(() => reject(netError('ETIMEDOUT', `timeout awaiting response for ${req.timeoutMs} ms`, { name: 'TimeoutError', event: 'request' })), 0),
        req.timeoutMs,
      );
      if (req.signal?.aborted) return onAbort();
      req.signal?.addEventListener('abort', onAbort, { once: true });
      if (networkDown()) return finish(() => reject(netError('EHOSTUNREACH', 'connect EHOSTUNREACH')), 0);
      cloud.inject({ method: req.method, path: req.path, headers: req.headers, ...(req.body !== undefined && { body: req.body }) }).then(
        (res) => finish(() => resolve(res), res.status),
        (err: unknown) => finish(() => reject(err), 0),
      );
    });
}
