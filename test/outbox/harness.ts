// An outbox on the simulated file system, a fake clock and a logger whose
// lines the test can read: what every fixed-scenario outbox test starts from.
import { FakeClock } from '../support/fake-clock.js';
import { createLogger } from '../../agent/lib/logger.js';
import { Outbox, type OutboxOptions } from '../../agent/outbox/outbox.js';
import { scanSegment } from '../../agent/outbox/segments.js';
import type { OutboxRecord } from '../../agent/outbox/record.js';
import { SimFs, seeded } from './sim-fs.js';

export const DIR = '/state/queue';

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

const WARN = 40;

export class Harness {
  readonly logs: LogLine[] = [];
  readonly logger = createLogger('debug', { write: (line: string) => void this.logs.push(JSON.parse(line) as LogLine) });
  ob!: Outbox;

  constructor(
    private readonly opts: Partial<OutboxOptions> = {},
    readonly clock = new FakeClock(),
    readonly sim = new SimFs(seeded(7)),
  ) {}

  /** Opens (again) on the same disk, as a restarted daemon would. */
  async open(): Promise<Outbox> {
    this.ob = new Outbox({ dir: DIR, fs: this.sim.mount(), clock: this.clock, bootId: 'boot-1', logger: this.logger, ...this.opts });
    await this.ob.open();
    return this.ob;
  }

  /** Lets one group-commit window pass (and everything it starts settle). */
  async window(): Promise<void> {
    await this.clock.advance(this.opts.flushMs ?? 500);
  }

  warnings(): LogLine[] {
    return this.logs.filter((l) => l.level === WARN);
  }

  segments(): string[] {
    return this.sim.list(DIR).filter((n) => n.startsWith('seg-'));
  }

  /** The records in one segment file, as open would read them. */
  records(name: string): OutboxRecord[] {
    return scanSegment(this.sim.read(`${DIR}/${name}`) ?? new Uint8Array(0), false).records.map((r) => r.rec);
  }
}

export const payload = (n: number, size = 150): { n: number; pad: string } => ({ n, pad: 'p'.repeat(size) });
