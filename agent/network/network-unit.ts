// The status document's `network` section: the default route's link (read
// under --host-root by link.ts), the last round trip to the service and
// when it was (from the transport's last answer), and the recent upload
// rate (the uploads unit's). The link is read again at most once per
// LINK_REREAD_MS of real time and only when someone asks (a status write, a
// GET /v1/status), never on the heartbeat's path, and nothing is written.
import type { ResponseMeta } from '../api/types.js';
import type { Clock } from '../lib/clock.js';
import type { NetworkSection, StatusSections } from '../core/status-document.js';
import type { DaemonUnit } from '../core/unit.js';
import { readDefaultLink, type DefaultLink } from './link.js';

/** Real ms a reading of the route table is trusted. */
export const LINK_REREAD_MS = 10_000;

export interface NetworkUnitDeps {
  hostRoot: string;
  clock: Clock;
  lastMeta: () => ResponseMeta | undefined;
  uploadBytesPerSecond: () => number;
  /** Tests count the reads. */
  read?: (hostRoot: string) => DefaultLink;
}

export class NetworkUnit implements DaemonUnit {
  readonly name = 'network';
  private link: { at: number; value: DefaultLink } | undefined;

  constructor(private readonly d: NetworkUnitDeps) {}

  start(): void {}

  async stop(): Promise<void> {}

  report(): Pick<Partial<StatusSections>, 'network'> {
    return { network: this.section() };
  }

  section(): NetworkSection {
    const now = this.d.clock.now();
    if (this.link === undefined || now - this.link.at >= LINK_REREAD_MS * this.d.clock.scale) this.link = { at: now, value: (this.d.read ?? readDefaultLink)(this.d.hostRoot) };
    const meta = this.d.lastMeta();
    return {
      ...this.link.value,
      serviceRttMs: meta?.rttMs ?? null,
      uploadBytesPerSecond: this.d.uploadBytesPerSecond(),
      lastContactAt: meta?.receivedAt === undefined ? null : new Date(meta.receivedAt).toISOString(),
    };
  }
}
