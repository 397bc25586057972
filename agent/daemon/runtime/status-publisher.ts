// Publishes the daemon's snapshot where people look: status.json in the
// runtime dir (for `c2c-agent status`) and systemd's STATUS= line. The
// controller's changes go out at once; the other units' figures (an upload's
// bytes) change far more often, so those are written at most once a real
// second, and the STATUS= line (a process fork each) at most every ten.
import type { Clock, Timer } from '../../lib/clock.js';
import type { DaemonUnit } from '../../core/unit.js';
import type { EventBus } from '../../core/event-bus.js';
import type { DaemonSnapshot } from '../../core/state.js';
import { statusDocument, type StatusDocument, type StatusSections } from '../../core/status-document.js';
import { statusLine } from '../snapshot.js';
import type { SystemdNotifier } from '../systemd/notify.js';
import type { FileSink } from './file-sink.js';

const FILE_EVERY_REAL_MS = 1_000;
const LINE_EVERY_REAL_MS = 10_000;

export class StatusPublisher implements DaemonUnit {
  readonly name = 'status';
  private last: DaemonSnapshot | undefined;
  private fileTimer: Timer | undefined;
  private lineSentAt = -Infinity;
  private lineTimer: Timer | undefined;

  constructor(
    private readonly sink: FileSink<StatusDocument>,
    private readonly notifier: SystemdNotifier,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    /** The other units' sections of status.json. */
    private readonly sections: () => Partial<StatusSections> = () => ({}),
    /** Their one-line summaries, appended to STATUS= ("uploading 3 files, 1.2 GiB left"). */
    private readonly texts: () => string[] = () => [],
  ) {}

  start(): void {
    // A feature's figures changed (a channel plugged in, bytes sent, an item settled: each says statusChanged): rewrite soon.
    this.bus.on('statusChanged', this, () => this.refresh());
  }

  onSnapshot(snap: DaemonSnapshot): void {
    this.last = snap;
    this.write();
    this.sendLine();
  }

  /** A unit's own facts changed (a channel plugged in, bytes sent): rewrite soon. */
  refresh(): void {
    if (!this.last || this.fileTimer) return;
    this.fileTimer = this.clock.setTimer(() => {
      this.fileTimer = undefined;
      this.write();
      if (this.clock.now() - this.lineSentAt >= LINE_EVERY_REAL_MS * this.clock.scale) this.sendLine();
      else this.lineTimer ??= this.clock.setTimer(() => {
        this.lineTimer = undefined;
        this.sendLine();
      }, LINE_EVERY_REAL_MS * this.clock.scale);
    }, FILE_EVERY_REAL_MS * this.clock.scale);
  }

  /** The status document as it is now (the local API's GET /v1/status); undefined before the controller's first snapshot. */
  document(): StatusDocument | undefined {
    return this.last && statusDocument(this.last, this.sections());
  }

  /** Made when the sink's write begins (file-sink.ts): the units' sections are read then, once for a burst. */
  private write(): void {
    if (this.last) this.sink.write(() => this.document());
  }

  private sendLine(): void {
    if (!this.last || !this.notifier.enabled) return;
    this.lineSentAt = this.clock.now();
    void this.notifier.status([statusLine(this.last, this.clock.now()), ...this.texts()].join('; '));
  }

  async stop(): Promise<void> {
    this.bus.removeListeners(this);
    this.fileTimer?.cancel();
    this.lineTimer?.cancel();
    this.write();
    await this.sink.flush();
  }
}
