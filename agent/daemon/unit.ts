// The shape of everything the daemon runs beside its state machine (the
// runtime status file, systemd's watchdog; later the outbox, channels and
// uploads). A unit's constructor only stores its arguments: timers, files
// and sockets belong to start() and are released by stop(), so a unit can
// be built, tested and thrown away without side effects.
import type { DaemonSnapshot } from './snapshot.js';

export interface DaemonUnit {
  /** For logs: 'status-file', 'watchdog', ... */
  readonly name: string;
  /** Called once, after the controller started, in the order the units were given. */
  start(): void;
  /** Called once, in reverse order; resolves when nothing of the unit is in flight. */
  stop(): Promise<void>;
  /** Every change the controller publishes; `transition` is true when the state itself changed. */
  onSnapshot?(snap: DaemonSnapshot, transition: boolean): void;
  /** Facts for status.json beside the controller's snapshot (no secrets): `{ channels: {...} }`. */
  report?(): Record<string, unknown>;
  /** A few words for the STATUS= line while there is something to say ("uploading 3 files, 1.2 GB left"). */
  statusText?(): string | undefined;
}
