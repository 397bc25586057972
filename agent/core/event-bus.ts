// The daemon's parts talk through this bus, in the spirit of zigbee2mqtt's
// event bus: named, typed events; a listener is registered by its
// owner (a unit) and all of an owner's listeners are removed at once when it
// stops. A producer does not know who listens, so a new unit that reacts to
// an existing signal (a device seen, bytes sent, tokens refreshed) is one
// `on()` in its own start(), not an edit of the producer and the wiring.
//
// Delivery is synchronous and in registration order; a listener that throws
// is logged and skipped, never thrown into the producer (a heartbeat must not
// fail because the status file could not be written).
import type { Device } from '../api/types.js';
import type { Logger } from '../lib/logger.js';
import type { DaemonSnapshot } from './state.js';

/**
 * The events of the core (the controller, the token source) and the few
 * every feature shares. A feature declares its own from its own folder by
 * declaration merging (`declare module '../core/event-bus.js' { interface
 * AgentEvents { … } }`, e.g. uploads/events.ts), so core names none of them.
 */
export interface AgentEvents {
  /** The controller published its state; `transition` is true when the state itself changed. */
  stateChanged: { snapshot: DaemonSnapshot; transition: boolean };
  /** GET /v2/devices/me answered with this device record. */
  deviceSeen: { device: Device };
  /** A refresh (ahead of expiry, or for a refused call) put a new token in use: verify it with GET /v2/devices/me. */
  tokensRefreshed: { why: string };
  /** The service refused the refresh token, or the credentials went away: the unit needs pairing. */
  tokensRejected: { reason: string };
  /** The daemon stored or forgot the credentials itself (pairing, unpairing): use the file as it is now. */
  credentialsReplaced: { why: 'paired' | 'unpaired' };
  /** Something a unit reports in the status document changed (queue, uploads, channels): the status file is written again soon. */
  statusChanged: Record<string, never>;
  /** Someone reads the status document now (GET /v1/status): a figure read only when asked is read again. */
  statusAsked: Record<string, never>;
  /** A reader attached to GET /v1/events; `readers` is how many there are now. */
  eventsReaderAttached: { readers: number };
}

export type AgentEvent = keyof AgentEvents;
type Listener<K extends AgentEvent> = (payload: AgentEvents[K]) => void;

interface Entry {
  owner: object;
  fn: (payload: never) => void;
}

export class EventBus {
  private readonly listeners = new Map<AgentEvent, Entry[]>();

  constructor(private readonly logger?: Logger) {}

  /** Registers `fn` for `event` on behalf of `owner` (usually the unit itself). */
  on<K extends AgentEvent>(event: K, owner: object, fn: Listener<K>): void {
    const list = this.listeners.get(event) ?? [];
    list.push({ owner, fn: fn as (payload: never) => void });
    this.listeners.set(event, list);
  }

  /** Removes every listener `owner` registered: call it from the owner's stop(). */
  removeListeners(owner: object): void {
    for (const [event, list] of this.listeners) {
      const kept = list.filter((e) => e.owner !== owner);
      if (kept.length > 0) this.listeners.set(event, kept);
      else this.listeners.delete(event);
    }
  }

  emit<K extends AgentEvent>(event: K, payload: AgentEvents[K]): void {
    const list = this.listeners.get(event);
    if (list === undefined) return;
    // A listener may remove itself (or others) while we deliver: walk a copy.
    for (const e of [...list]) {
      try {
        (e.fn as Listener<K>)(payload);
      } catch (err) {
        this.logger?.error({ event, err: err instanceof Error ? err.message : String(err) }, 'an event listener failed (a bug); carrying on');
      }
    }
  }

  /** How many listeners are registered (for tests: none left after every unit stopped). */
  listenerCount(event?: AgentEvent): number {
    if (event !== undefined) return this.listeners.get(event)?.length ?? 0;
    let n = 0;
    for (const list of this.listeners.values()) n += list.length;
    return n;
  }
}
