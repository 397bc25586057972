// Publishes the daemon's snapshot where people look: status.json in the
// runtime dir (for `c2c-agent status`) and systemd's STATUS= line.
import type { Clock } from '../../lib/clock.js';
import type { DaemonUnit } from '../unit.js';
import { statusLine, type DaemonSnapshot } from '../snapshot.js';
import type { SystemdNotifier } from '../systemd/notify.js';
import type { FileSink } from './file-sink.js';

export class StatusPublisher implements DaemonUnit {
  readonly name = 'status';

  constructor(
    private readonly sink: FileSink<DaemonSnapshot>,
    private readonly notifier: SystemdNotifier,
    private readonly clock: Clock,
  ) {}

  start(): void {}

  onSnapshot(snap: DaemonSnapshot): void {
    this.sink.write(snap);
    if (this.notifier.enabled) void this.notifier.status(statusLine(snap, this.clock.now()));
  }

  async stop(): Promise<void> {
    await this.sink.flush();
  }
}
