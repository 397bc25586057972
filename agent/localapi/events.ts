// GET /v1/events: what the daemon does, as JSON lines, to every reader
// attached. The first line is the status document; then one line per
// change: `state` (from, to, reason), `heartbeat` (outcome), `pairing` (the
// flow the daemon runs), `upload` (id, name, state, bytesDone, bytesTotal,
// priority; progress at most once a second per upload), `channels`, `prefs`
// (the preferences after a change, whoever made it). Every
// line has `type` and `at` (wall ISO time).
//
// An upload line that goes backwards (uploading to queued after a failure,
// fewer bytes done) carries its reason: the item's, else its last attempt's.
//
// Lines come from the event bus; upload lines from a look at the queue, made
// only while someone reads and at most once per LOCAL_API.uploadProgressEveryMs.
// A line is written to each reader's socket and never waited on: the server's
// stream drops a reader that falls too far behind (event-stream.ts).
import type { Clock, Timer } from '../lib/clock.js';
import { LOCAL_API } from '../lib/timing.js';
import type { EventBus } from '../core/event-bus.js';
import type { DaemonSnapshot } from '../core/state.js';
import type { StatusDocument } from '../core/status-document.js';
import type { DaemonUnit } from '../core/unit.js';
import type { UploadRow } from '../uploads/upload-rows.js';
import type { StreamSink } from './handlers.js';
import { isoTime } from '../lib/iso-time.js';

export interface EventsHubDeps {
  bus: EventBus;
  clock: Clock;
  /** The status document now: the first line for each reader. */
  status: () => StatusDocument | undefined;
  /** Every upload the queue still holds, as the API lists them. */
  uploads: () => UploadRow[];
}

const uploadKey = (r: UploadRow): string => `${r.state}:${r.bytesDone}:${r.priority}`;

/** What the last line said of an upload. */
interface Said {
  key: string;
  state: UploadRow['state'];
  bytesDone: number;
}

const saidOf = (r: UploadRow): Said => ({ key: uploadKey(r), state: r.state, bytesDone: r.bytesDone });

/** A line that takes back what an earlier one said: from uploading to queued (an attempt failed), or fewer bytes done (sent again). */
const backwards = (was: Said | undefined, now: UploadRow): boolean => was !== undefined && ((was.state === 'uploading' && now.state === 'queued') || now.bytesDone < was.bytesDone);

/** Said when a line goes backwards and nothing else says why (the attempt was stopped without an error of its own). */
const NO_REASON_KNOWN = 'the attempt stopped; it is tried again';

export class EventsHub implements DaemonUnit {
  readonly name = 'local-api-events';
  private readonly readers = new Set<StreamSink>();
  private lastState: DaemonSnapshot['state'] | undefined;
  private lastBeat: number | undefined;
  private lastChannels = '';
  private lastUploads = new Map<string, Said>();
  private uploadTimer: Timer | undefined;
  private uploadLookAt = -Infinity;

  constructor(private readonly d: EventsHubDeps) {}

  start(): void {
    const { bus } = this.d;
    bus.on('stateChanged', this, ({ snapshot }) => this.snapshot(snapshot));
    bus.on('pairing', this, (p) => this.publish({ type: 'pairing', ...p }));
    bus.on('prefsChanged', this, ({ prefs }) => this.publish({ type: 'prefs', ...prefs }));
    for (const e of ['channelsDetected', 'channelsSynced'] as const) bus.on(e, this, () => this.channels());
    for (const e of ['bytesSent', 'outboxSettled', 'statusChanged'] as const) bus.on(e, this, () => this.uploadsSoon());
  }

  async stop(): Promise<void> {
    this.d.bus.removeListeners(this);
    this.uploadTimer?.cancel();
    this.uploadTimer = undefined;
    for (const r of [...this.readers]) r.end();
    return Promise.resolve();
  }

  /** A new reader: the status document first, then every line from now on. */
  attach(sink: StreamSink): void {
    if (this.readers.size === 0) this.lastUploads = new Map(this.d.uploads().map((r) => [r.id, saidOf(r)]));
    this.readers.add(sink);
    sink.onClose(() => this.readers.delete(sink));
    sink.send({ type: 'status', at: this.at(), status: this.d.status() ?? null });
  }

  get readerCount(): number {
    return this.readers.size;
  }

  /** Sends a line to every reader now (a handler's own news, such as a cancel). */
  publish(line: { type: string } & Record<string, unknown>): void {
    if (this.readers.size === 0) return;
    const full = { ...line, at: typeof line.at === 'string' ? line.at : this.at() };
    for (const r of [...this.readers]) r.send(full);
  }

  /** Looks at the uploads soon (at once when the last look is old enough): a line for each that changed. */
  uploadsSoon(): void {
    if (this.readers.size === 0 || this.uploadTimer !== undefined) return;
    const every = LOCAL_API.uploadProgressEveryMs * this.d.clock.scale;
    const wait = Math.max(0, this.uploadLookAt + every - this.d.clock.now());
    this.uploadTimer = this.d.clock.setTimer(() => {
      this.uploadTimer = undefined;
      this.uploadLookAt = this.d.clock.now();
      this.lookAtUploads();
    }, wait);
  }

  private lookAtUploads(): void {
    if (this.readers.size === 0) return;
    const seen = new Map<string, Said>();
    let attempts: NonNullable<StatusDocument['queue']>['attempts'] | undefined;
    for (const row of this.d.uploads()) {
      const said = saidOf(row);
      seen.set(row.id, said);
      const was = this.lastUploads.get(row.id);
      if (was?.key === said.key) continue;
      const { id, name, state, bytesDone, bytesTotal, priority } = row;
      // A line going backwards says why: the item's own reason, else its last failed attempt's error (the queue's attempts).
      let reason = row.reason;
      if (reason === undefined && backwards(was, row)) {
        attempts ??= this.d.status()?.queue?.attempts ?? {};
        reason = attempts[id]?.lastError ?? NO_REASON_KNOWN;
      }
      this.publish({ type: 'upload', id, name, state, bytesDone, bytesTotal, priority, ...(reason !== undefined && { reason }) });
    }
    this.lastUploads = seen;
  }

  private snapshot(snap: DaemonSnapshot): void {
    if (snap.state !== this.lastState) {
      const from = this.lastState ?? null;
      this.lastState = snap.state;
      this.publish({ type: 'state', from, to: snap.state, reason: snap.reason });
    }
    const beat = snap.lastHeartbeat;
    if (beat !== undefined && beat.monotonic !== this.lastBeat) {
      this.lastBeat = beat.monotonic;
      this.publish({ type: 'heartbeat', at: beat.at, outcome: beat.result, ...(beat.status !== undefined && { status: beat.status }), ...(beat.error !== undefined && { error: beat.error }) });
    }
  }

  private channels(): void {
    const section = this.d.status()?.channels;
    if (section === undefined) return;
    const text = JSON.stringify(section);
    if (text === this.lastChannels) return;
    this.lastChannels = text;
    this.publish({ type: 'channels', ...section });
  }

  private at(): string {
    return isoTime(this.d.clock.wallNow());
  }
}
