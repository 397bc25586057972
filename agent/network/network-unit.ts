// The status document's `network` section: the default route's link (read
// under --host-root by link.ts), the last round trip to the service and
// when it was (from the transport's last answer), and the recent upload
// rate (the uploads unit's). Nothing is written, and the kernel's files are
// read only when someone looks: for GET /v1/status at most once per
// LINK_REREAD_MS of real time (refresh(), on statusAsked), for status.json (written at every
// heartbeat) at most once per LINK_STALE_MS, and again after every state
// transition (a link that went down and came back shows there first).
import type { ResponseMeta } from '../api/types.js';
import type { Clock } from '../lib/clock.js';
import type { EventBus } from '../core/event-bus.js';
import type { StatusSections } from '../core/status-document.js';
import type { NetworkSection } from './section.js';
import type { DaemonUnit } from '../core/unit.js';
import type { DaemonSnapshot } from '../core/state.js';
import { readDefaultLink, type DefaultLink } from './link.js';
import { isoTime } from '../lib/iso-time.js';

/** Real ms a reading of the route table is trusted when the local API asks. */
export const LINK_REREAD_MS = 10_000;
/** Real ms it is trusted for status.json, which is written at every heartbeat. */
export const LINK_STALE_MS = 300_000;

export interface NetworkUnitDeps {
  hostRoot: string;
  clock: Clock;
  lastMeta: () => ResponseMeta | undefined;
  uploadBytesPerSecond: () => number;
  /** Where statusAsked is heard (someone reads the status document now: the link read again unless fresh). Absent: refresh() is called. */
  bus?: EventBus;
  /** Tests count the reads. */
  read?: (hostRoot: string) => DefaultLink;
}

export class NetworkUnit implements DaemonUnit {
  readonly name = 'network';
  private link: { at: number; value: DefaultLink } | undefined;

  constructor(private readonly d: NetworkUnitDeps) {}

  start(): void {
    this.d.bus?.on('statusAsked', this, () => this.refresh());
  }

  async stop(): Promise<void> {
    this.d.bus?.removeListeners(this);
  }

  /** A state transition (online, offline...): the link may have changed; read it at the next look. */
  onSnapshot(_snap: DaemonSnapshot, transition: boolean): void {
    if (transition) this.link = undefined;
  }

  report(): Pick<Partial<StatusSections>, 'network'> {
    return { network: this.section(LINK_STALE_MS) };
  }

  /** Someone looks now (GET /v1/status): the link read again unless read in the last LINK_REREAD_MS. */
  refresh(): void {
    this.section(LINK_REREAD_MS);
  }

  section(maxAgeMs = LINK_REREAD_MS): NetworkSection {
    const now = this.d.clock.now();
    if (this.link === undefined || now - this.link.at >= maxAgeMs * this.d.clock.scale) this.link = { at: now, value: (this.d.read ?? readDefaultLink)(this.d.hostRoot) };
    const meta = this.d.lastMeta();
    return {
      ...this.link.value,
      serviceRttMs: meta?.rttMs ?? null,
      uploadBytesPerSecond: this.d.uploadBytesPerSecond(),
      lastContactAt: meta?.receivedAt === undefined ? null : isoTime(meta.receivedAt),
    };
  }
}
