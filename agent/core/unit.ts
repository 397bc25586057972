// The shape of everything the daemon runs (the controller, the token source,
// the status file, the outbox, channels, uploads, systemd's watchdog). A
// unit's constructor only stores its arguments: timers, files, sockets and
// event-bus listeners belong to start() and are released by stop(), so a
// unit can be built, tested and thrown away without side effects.
import type { EventBus } from './event-bus.js';
import type { DaemonSnapshot } from './state.js';
import type { StatusSections } from './status-document.js';

export interface DaemonUnit {
  /** For logs: 'status-file', 'watchdog', ... */
  readonly name: string;
  /** Called once, after the controller started, in the order the units were given. */
  start(): void;
  /** Called once, in reverse order; resolves when nothing of the unit is in flight. */
  stop(): Promise<void>;
  /** Every change the controller publishes; `transition` is true when the state itself changed. */
  onSnapshot?(snap: DaemonSnapshot, transition: boolean): void;
  /** Its own section of status.json beside the controller's snapshot (status-document.ts; no secrets): `{ channels: {...} }`, or `{}`. */
  report?(): Partial<StatusSections>;
  /** A few words for the STATUS= line while there is something to say ("uploading 3 files, 1.2 GiB left"). */
  statusText?(): string | undefined;
}

/** Starts a unit, after subscribing its onSnapshot to the controller's stateChanged. */
export function startUnit(bus: EventBus, u: DaemonUnit): void {
  if (u.onSnapshot) bus.on('stateChanged', u, ({ snapshot, transition }) => u.onSnapshot?.(snapshot, transition));
  u.start();
}

/** Stops a unit, then drops every listener registered for it (its own and its onSnapshot). */
export async function stopUnit(bus: EventBus, u: DaemonUnit): Promise<void> {
  try {
    await u.stop();
  } finally {
    bus.removeListeners(u);
  }
}
