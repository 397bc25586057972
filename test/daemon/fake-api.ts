// A DeviceApi on a FakeClock: each call's fate comes from a behaviour
// function, answers arrive after clock time passes, and the client's 30 s
// timeout is modelled, so the daemon meets stalls, outages and 429s exactly
// as it would over the wire, in simulated time. It also plays the service's
// side of the referee: it records when each heartbeat ARRIVED.
import { clockError, tlsError } from '../../agent/api/http-errors.js';
import type { FakeClock } from '../support/fake-clock.js';
import { AgentError, type RateLimitInfo } from '../../agent/lib/errors.js';
import type { ApiResult, Device, DeviceApi, ResponseMeta } from '../../agent/api/types.js';
import { seeded } from '../support/seeded.js';
export { seeded };

export type Call = 'getDevice' | 'heartbeat' | 'health';

export interface Behaviour {
  outcome: 'ok' | 'network' | 'reset' | 'server' | 'rate-limited' | 'unauthorized' | 'forbidden' | 'paused' | 'protocol' | 'clock' | 'tls';
  /** For 'protocol': the HTTP status the unreadable answer came with (the client carries it in details.status). */
  status?: number;
  /** Agent ms until the answer; past 30 s the client times out instead. */
  latencyMs?: number;
  /** Agent ms from the send until the service has the request (never after the answer). */
  uplinkMs?: number;
  retryAfterMs?: number;
  rateLimit?: RateLimitInfo;
  device?: Partial<Device>;
}

export interface Arrival {
  /** When the service saw the request. */
  t: number;
  /** The service answered 204 and the answer was delivered. */
  ok: boolean;
}

export const CLIENT_TIMEOUT_MS = 30_000;

export const DEVICE: Device = {
  id: 'dev-1',
  name: 'cam-07',
  status: 'online',
  project_id: 'prj-1',
  project: { id: 'prj-1', name: 'Testbed' },
};

function errorFor(b: Behaviour, what: string): AgentError {
  switch (b.outcome) {
    case 'network':
      return new AgentError('network', `${what}: connection refused`, { code: 'ECONNREFUSED' });
    case 'reset':
      // After connect: the request may well have reached the service.
      return new AgentError('network', `${what}: connection reset`, { code: 'ECONNRESET' });
    case 'server':
      return new AgentError('server', `${what}: 503`, { status: 503 });
    case 'rate-limited': {
      const details: AgentError['details'] = { status: 429, rateLimit: b.rateLimit ?? { limit: 60, remaining: 0, windowMs: 60_000 } };
      if (b.retryAfterMs !== undefined) details.retryAfterMs = b.retryAfterMs;
      return new AgentError('rate-limited', `${what}: 429`, details);
    }
    case 'unauthorized':
      return new AgentError('unauthorized', `${what}: 401 Not Authorized`, { status: 401 });
    case 'forbidden':
      return new AgentError('forbidden', `${what}: 403`, { status: 403 });
    case 'paused':
      return new AgentError('paused', `${what}: the device is paused`, { status: 409 });
    case 'tls':
      return tlsError(what, 'SELF_SIGNED_CERT_IN_CHAIN', '', 0) as AgentError;
    case 'clock':
      // As api/transport.ts words it after the clock check: the service's Date 3 days ahead.
      return clockError(what, 'CERT_NOT_YET_VALID', 3 * 24 * 3600_000);
    case 'protocol':
      return new AgentError('protocol', `${what}: field 'id' is number, expected string`, b.status === undefined ? {} : { status: b.status });
    default:
      return new AgentError('internal', 'unreachable');
  }
}

export class FakeApi implements DeviceApi {
  readonly calls: { call: Call; t: number }[] = [];
  readonly arrivals: Arrival[] = [];
  /** Called as each heartbeat settles with its arrival, if it arrived. */
  onArrival: ((a: Arrival) => void) | undefined;
  inFlight = 0;
  maxInFlight = 0;
  /** Per call: the most requests of that kind in flight at once. */
  readonly maxInFlightOf: Record<Call, number> = { getDevice: 0, heartbeat: 0, health: 0 };
  private readonly inFlightOf: Record<Call, number> = { getDevice: 0, heartbeat: 0, health: 0 };
  /** The most heartbeats and health probes in flight at once: the scheduler's one-request-at-a-time rule. */
  maxSchedulerInFlight = 0;

  constructor(
    private readonly clock: FakeClock,
    public behave: (call: Call, now: number) => Behaviour = () => ({ outcome: 'ok' }),
  ) {}

  count(call: Call): number {
    return this.calls.filter((c) => c.call === call).length;
  }

  getDevice(signal?: AbortSignal): Promise<ApiResult<Device>> {
    return this.request('getDevice', signal, (b) => ({ ...DEVICE, ...b.device }));
  }

  heartbeat(signal?: AbortSignal): Promise<ApiResult<void>> {
    return this.request('heartbeat', signal, () => undefined);
  }

  health(signal?: AbortSignal): Promise<ApiResult<{ status: string }>> {
    return this.request('health', signal, () => ({ status: 'ok' }));
  }

  private request<T>(call: Call, signal: AbortSignal | undefined, value: (b: Behaviour) => T): Promise<ApiResult<T>> {
    const sent = this.clock.now();
    const b = this.behave(call, sent);
    this.calls.push({ call, t: sent });
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    this.inFlightOf[call]++;
    this.maxInFlightOf[call] = Math.max(this.maxInFlightOf[call], this.inFlightOf[call]);
    this.maxSchedulerInFlight = Math.max(this.maxSchedulerInFlight, this.inFlightOf.heartbeat + this.inFlightOf.health);
    let settled = false;
    const done = (): void => {
      if (settled) return;
      settled = true;
      this.inFlight--;
      this.inFlightOf[call]--;
    };
    const latency = b.latencyMs ?? 50;
    const reaches = b.outcome !== 'network';
    const arrival = sent + Math.min(b.uplinkMs ?? 0, latency);
    const settle = (ok: boolean): void => {
      done();
      if (call !== 'heartbeat' || !reaches || this.clock.now() < arrival) return;
      const a = { t: arrival, ok };
      this.arrivals.push(a);
      this.onArrival?.(a);
    };
    return new Promise<ApiResult<T>>((resolve, reject) => {
      if (signal?.aborted) {
        done();
        return reject(signal.reason);
      }
      const timedOut = latency > CLIENT_TIMEOUT_MS;
      const timer = this.clock.setTimer(
        () => {
          signal?.removeEventListener('abort', onAbort);
          if (timedOut) {
            settle(false);
            return reject(new AgentError('network', `${call}: timed out after 30 s`, { code: 'ETIMEDOUT' }));
          }
          if (b.outcome === 'ok') {
            settle(true);
            const meta: ResponseMeta = { status: call === 'heartbeat' ? 204 : 200, rateLimit: b.rateLimit ?? { limit: 60, remaining: 59, windowMs: 60_000 }, clockOffsetMs: 120 };
            return resolve({ value: value(b), meta });
          }
          settle(false);
          reject(errorFor(b, call));
        },
        timedOut ? CLIENT_TIMEOUT_MS : latency,
      );
      const onAbort = (): void => {
        timer.cancel();
        settle(false);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

