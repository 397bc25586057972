// Fakes for the dispatcher tests: an in-memory OutboxView (pending oldest
// first, every done/dead recorded), workers that answer from a script (or are
// held until the test settles them) and record when each attempt started, and
// a FakeClock-driven rig that builds the Dispatcher with a fixed random.
import { FakeClock } from '../support/fake-clock.js';
import { createLogger } from '../../agent/lib/logger.js';
import { AgentError, type ErrorKind, type RateLimitInfo } from '../../agent/lib/errors.js';
import { Dispatcher, type DispatcherDeps, type OutboxView, type Worker } from '../../agent/outbox/dispatcher.js';
import type { Outcome } from '../../agent/outbox/outcome.js';
import type { OutboxItem } from '../../agent/outbox/types.js';

export class FakeOutbox implements OutboxView {
  readonly items: OutboxItem[] = [];
  readonly doneCalls: Array<{ id: string; reason: string | undefined; at: number }> = [];
  readonly deadCalls: Array<{ id: string; reason: string; at: number }> = [];
  private seq = 0;

  constructor(private readonly clock: FakeClock) {}

  put(kind: string, id = `boot-1:${++this.seq}`): string {
    this.items.push({ id, kind, priority: 0, payload: {}, createdAt: '2026-01-01T00:00:00.000Z', bytes: 100, state: 'pending' });
    return id;
  }

  pending(kind?: string): OutboxItem[] {
    return this.items.filter((i) => i.state === 'pending' && (kind === undefined || i.kind === kind));
  }

  async done(id: string, reason?: string): Promise<void> {
    this.doneCalls.push({ id, reason, at: this.clock.now() });
    this.end(id, 'done', reason);
  }

  async dead(id: string, reason: string): Promise<void> {
    this.deadCalls.push({ id, reason, at: this.clock.now() });
    this.end(id, 'dead', reason);
  }

  private end(id: string, state: 'done' | 'dead', reason?: string): void {
    const item = this.items.find((i) => i.id === id);
    if (!item) throw new Error(`no item ${id}`);
    item.state = state;
    if (reason !== undefined) item.reason = reason;
  }
}

/** What one attempt does: answer at once, throw, answer after some agent ms, or wait for the test. */
export type Step = Outcome | Error | 'hold' | { afterMs: number; then: Outcome | Error };

export interface Call {
  id: string;
  at: number;
  signal: AbortSignal;
  settled: boolean;
  resolve(o: Outcome): void;
  reject(e: unknown): void;
}

export const ok: Outcome = { result: 'done' };

export class FakeWorker implements Worker {
  readonly calls: Call[] = [];

  constructor(
    readonly kind: string,
    private readonly clock: FakeClock,
    public script: (item: OutboxItem, n: number) => Step = () => ok,
    /** Held attempts reject with the signal's reason when aborted (as a real worker's sleep/request does). */
    private readonly abortDelayMs = 0,
  ) {}

  run(item: OutboxItem, signal: AbortSignal): Promise<Outcome> {
    return new Promise<Outcome>((res, rej) => {
      const call: Call = {
        id: item.id,
        at: this.clock.now(),
        signal,
        settled: false,
        resolve: (o) => {
          call.settled = true;
          res(o);
        },
        reject: (e) => {
          call.settled = true;
          rej(e);
        },
      };
      this.calls.push(call);
      const step = this.script(item, this.calls.length);
      if (step === 'hold') {
        signal.addEventListener('abort', () => {
          if (this.abortDelayMs === 0) call.reject(signal.reason);
          else this.clock.setTimer(() => call.reject(signal.reason), this.abortDelayMs);
        });
        return;
      }
      const answer = (s: Outcome | Error): void => (s instanceof Error ? call.reject(s) : call.resolve(s));
      if ('afterMs' in step) this.clock.setTimer(() => answer(step.then), step.afterMs);
      else answer(step);
    });
  }

  ids(): string[] {
    return this.calls.map((c) => c.id);
  }

  open(): Call[] {
    return this.calls.filter((c) => !c.settled);
  }
}

export const err = (kind: ErrorKind, message: string, details: ConstructorParameters<typeof AgentError>[2] = {}): AgentError =>
  new AgentError(kind, message, details);
export const netErr = (message = 'ECONNRESET'): AgentError => err('network', message);
export const tooMany = (retryAfterMs?: number): AgentError =>
  err('rate-limited', 'the service answered 429', retryAfterMs === undefined ? { status: 429 } : { status: 429, retryAfterMs });

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export class Rig {
  readonly clock = new FakeClock();
  readonly t0 = this.clock.now();
  readonly outbox = new FakeOutbox(this.clock);
  readonly logs: LogLine[] = [];
  readonly logger = createLogger('debug', { write: (line: string) => void this.logs.push(JSON.parse(line) as LogLine) });
  readonly settled: Array<{ at: number; inFlight: string[]; done: number; dead: number }> = [];
  rate: RateLimitInfo | undefined;
  readonly refreshCalls: string[] = [];
  refreshAnswer: () => Promise<string> = async () => 'retry';
  d!: Dispatcher;

  constructor(
    readonly workers: FakeWorker[] = [],
    private readonly extra: Partial<DispatcherDeps> = {},
  ) {}

  worker(kind: string, script?: (item: OutboxItem, n: number) => Step, abortDelayMs = 0): FakeWorker {
    const w = new FakeWorker(kind, this.clock, script, abortDelayMs);
    this.workers.push(w);
    return w;
  }

  build(): Dispatcher {
    this.d = new Dispatcher({
      outbox: this.outbox,
      workers: this.workers,
      clock: this.clock,
      random: () => 0.5,
      logger: this.logger,
      rateLimit: () => this.rate,
      unauthorized: async (why: string) => {
        this.refreshCalls.push(why);
        return this.refreshAnswer();
      },
      onSettled: () =>
        this.settled.push({ at: this.clock.now(), inFlight: this.d.view().inFlight, done: this.outbox.doneCalls.length, dead: this.outbox.deadCalls.length }),
      ...this.extra,
    });
    return this.d;
  }

  /** Built, started and open, with microtasks flushed. */
  async running(): Promise<Dispatcher> {
    const d = this.build();
    d.start();
    d.setOpen(true);
    await this.clock.advance(0);
    return d;
  }

  /** Agent ms since the rig was made. */
  get t(): number {
    return this.clock.now() - this.t0;
  }

  warnings(): LogLine[] {
    return this.logs.filter((l) => l.level === 40);
  }
}

/** Start times (ms since t0) of a worker's attempts. */
export const starts = (r: Rig, w: FakeWorker): number[] => w.calls.map((c) => c.at - r.t0);
