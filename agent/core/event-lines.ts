// The lines of the local API's GET /v1/events (docs/local-api.md), typed
// once for the daemon that writes them and the clients that read them (the
// CLI, tests). Core declares the lines every daemon writes (`status`,
// `state`, `heartbeat`); a feature adds its own from its own folder by
// declaration merging, beside its bus events:
//
//   declare module '../core/event-lines.js' {
//     interface EventLines { upload: UploadLine }
//   }
//
// Every line carries `type` (its key here) and `at` (wall ISO time).
import type { StatusDocument } from './status-document.js';
import type { DaemonState } from './state.js';

export interface EventLines {
  /** The first line each reader gets: the status document now (null before the controller's first snapshot). */
  status: { status: StatusDocument | null };
  /** The daemon's state changed. */
  state: { from: DaemonState | null; to: DaemonState; reason: string };
  /** A heartbeat ended: its outcome, the HTTP status and error when it failed. */
  heartbeat: { outcome: string; status?: number; error?: string };
}

export type EventLineType = keyof EventLines;

/** One line as it goes on the wire. Distributes over a union payload (a `pairing` line is one of its phases). */
export type EventLineOf<K extends EventLineType> = K extends unknown ? (EventLines[K] extends infer P ? (P extends unknown ? { type: K; at: string } & P : never) : never) : never;

/** Any line of the stream. */
export type EventLine = EventLineOf<EventLineType>;

/** Writes a line to every reader of GET /v1/events (none: nothing is done). `at` defaults to now. */
export interface EventLinePublisher {
  publish<K extends EventLineType>(type: K, line: EventLines[K] & { at?: string }): void;
}
