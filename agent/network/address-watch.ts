// The unit's own addresses, looked at once per ADDRESS_POLL_MS of real time:
// when one has been away for ADDRESS_GONE_MS (interface down, address changed
// by DHCP or a move to another network), the connections bound to it are
// closed, in flight or idle. A shorter absence (a cable pulled and put back)
// closes nothing: TCP carries on by itself. The kernel keeps
// such a socket open with nowhere to send from, and the request on it would
// otherwise wait for TCP keepalive or its whole timeout before failing.
//
// os.networkInterfaces() lists only interfaces that are up and running, so a
// link that went down counts as its addresses gone.
import os from 'node:os';
import type { DaemonUnit } from '../core/unit.js';
import type { Clock, Timer } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { ADDRESS_GONE_MS, ADDRESS_POLL_MS } from '../lib/timing.js';

export type InterfaceTable = ReturnType<typeof os.networkInterfaces>;

export interface AddressWatchDeps {
  clock: Clock;
  logger?: Logger;
  /** Closes the connections bound to these addresses; returns how many it closed. One per client (the service's, storage's). */
  closers: Array<(gone: ReadonlySet<string>) => number>;
  /** Tests give the table; default os.networkInterfaces. */
  interfaces?: () => InterfaceTable;
}

/** The unit's addresses other than loopback. */
export function addressesOf(table: InterfaceTable): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(table)) for (const a of list ?? []) if (!a.internal) out.add(a.address);
  return out;
}

export class AddressWatch implements DaemonUnit {
  readonly name = 'address-watch';
  private timer: Timer | undefined;
  /** The addresses the unit has, as of the last look. */
  private known = new Set<string>();
  /** Addresses seen before and missing now: since when (agent ms). */
  private missing = new Map<string, number>();

  constructor(private readonly d: AddressWatchDeps) {}

  start(): void {
    this.known = this.read() ?? new Set();
    this.arm();
  }

  async stop(): Promise<void> {
    this.timer?.cancel();
    this.timer = undefined;
  }

  /** One look (the timer's; tests call it). */
  look(): void {
    const now = this.read();
    if (now === undefined) return;
    const t = this.d.clock.now();
    const added = [...now].filter((a) => !this.known.has(a) && !this.missing.has(a));
    for (const a of this.known) if (!now.has(a)) this.missing.set(a, t);
    for (const a of now) this.missing.delete(a);
    this.known = now;
    const gone = new Set([...this.missing].filter(([, since]) => t - since >= ADDRESS_GONE_MS * this.d.clock.scale).map(([a]) => a));
    for (const a of gone) this.missing.delete(a);
    if (added.length > 0) this.d.logger?.info({ added }, `network changed: ${added.join(', ')} added`);
    if (gone.size === 0) return;
    const closed = this.d.closers.reduce((n, close) => n + close(gone), 0);
    this.d.logger?.info({ gone: [...gone], closedConnections: closed }, `network changed: ${[...gone].join(', ')} gone${closed > 0 ? `, ${closed} connection(s) on it closed` : ''}`);
  }

  private read(): Set<string> | undefined {
    try {
      return addressesOf((this.d.interfaces ?? os.networkInterfaces)());
    } catch (err) {
      // Never seen on Linux; a failed look is skipped, the next one tries again.
      this.d.logger?.debug({ err: String(err) }, 'cannot list network interfaces');
      return undefined;
    }
  }

  private arm(): void {
    this.timer = this.d.clock.setTimer(() => {
      this.look();
      if (this.timer !== undefined) this.arm();
    }, ADDRESS_POLL_MS * this.d.clock.scale);
  }
}
