// Publishes the daemon's snapshot where people look: status.json in the
// runtime dir (for `c2c-agent status`) and systemd's STATUS= line.
import type { Clock } from '../../lib/clock.js';
import type { DaemonUnit } from '../unit.js';
import { statusLine, type DaemonSnapshot } from '../snapshot.js';
import type { SystemdNotifier } from '../systemd/notify.js';
import type { FileSink } from './file-sink.js';

export class StatusPublisher implements DaemonUnit {
  readonly name = 'status';
  private last: DaemonSnapshot | undefined;

  constructor(
    private readonly sink: FileSink<DaemonSnapshot>,
    private readonly notifier: SystemdNotifier,
    private readonly clock: Clock,
    /** What the other units report, merged into status.json. */
    private readonly extras: () => Record<string, unknown> = () => ({}),
  ) {}

  start(): void {}

  onSnapshot(snap: DaemonSnapshot): void {
    this.last = snap;
    this.write();
    if (this.notifier.enabled) void this.notifier.status(statusLine(snap, this.clock.now()));
  }

  /** A unit's own facts changed (a channel plugged in, the queue drained): rewrite the file. */
  refresh(): void {
    if (this.last) this.write();
  }

  private write(): void {
    if (this.last) this.sink.write({ ...this.last, ...this.extras() });
  }

  async stop(): Promise<void> {
    await this.sink.flush();
  }
}
