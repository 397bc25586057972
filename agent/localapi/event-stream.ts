// The writer of one events stream (GET /v1/events, and the web page's live
// lines): what a handler's StreamSink is on the wire. One JSON line per send,
// never awaited, so a reader can never hold the daemon up. A reader too far
// behind gets one last line and is dropped. So is one whose socket took
// nothing for eventsStallMs while lines waited; a reader sent nothing for
// eventsKeepAliveMs gets a keep-alive line, so that on a quiet daemon too a
// reader that takes nothing fills its socket and is found out. A stream that
// ended is given eventsGoodbyeMs to take its last line, then its socket goes.
import type { ServerResponse } from 'node:http';
import type { StreamSink } from '../core/routes.js';
import { formatBytes } from '../lib/byte-size.js';
import type { Clock, Timer } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { LOCAL_API } from '../lib/timing.js';
import { wireJson } from './wire-json.js';

export interface EventStreamOptions {
  clock: Clock;
  /** The server's limits (lib/timing.ts LOCAL_API, a test's own over them); the times in agent ms. */
  limits: Pick<Record<keyof typeof LOCAL_API, number>, 'eventsBufferBytes' | 'eventsStallMs' | 'eventsKeepAliveMs' | 'eventsGoodbyeMs'>;
  /** The wall time of a line the stream writes itself (keep-alive, overflow). */
  wallIso: () => string;
  /** The server's open streams: the stream is in it from now until it closes. */
  open: Set<StreamSink>;
  logger?: Logger;
}

/** The sink of the stream answered on `res`, whose head is already sent. */
export function openEventStream(res: ServerResponse, o: EventStreamOptions): StreamSink {
  const { clock, limits: l } = o;
  const closers: Array<() => void> = [];
  let open = true;
  let lastSent = clock.now();
  let lastTaken = clock.now();
  let ticker: Timer | undefined;
  let goodbye: Timer | undefined;
  const write = (obj: unknown): void => {
    lastSent = clock.now();
    // Called once the line was handed to the kernel: the reader took what was before it.
    res.write(`${wireJson(obj)}\n`, () => (lastTaken = clock.now()));
  };
  const close = (): void => {
    if (!open) return;
    open = false;
    ticker?.cancel();
    o.open.delete(sink);
    for (const fn of closers.splice(0)) fn();
  };
  const tick = (): void => {
    ticker = undefined;
    if (!open) return;
    const now = clock.now();
    if (res.writableLength > 0 && now - lastTaken >= l.eventsStallMs * clock.scale) {
      o.logger?.info({ waitingBytes: res.writableLength }, 'local API: dropped an events reader that took nothing');
      close();
      res.destroy();
      return;
    }
    if (now - lastSent >= l.eventsKeepAliveMs * clock.scale) write({ type: 'keepalive', at: o.wallIso() });
    ticker = clock.setTimer(tick, l.eventsKeepAliveMs * clock.scale);
  };
  const sink: StreamSink = {
    send: (obj) => {
      if (!open) return false;
      if (res.writableLength > l.eventsBufferBytes) {
        sink.end({ type: 'overflow', at: o.wallIso(), message: `this reader fell more than ${formatBytes(l.eventsBufferBytes)} behind; reconnect and read GET /v1/status first` });
        return false;
      }
      write(obj);
      return true;
    },
    end: (last) => {
      if (!open) return;
      close();
      res.end(last === undefined ? undefined : `${wireJson(last)}\n`);
      // A reader that takes nothing more would keep the line and the socket forever.
      goodbye = clock.setTimer(() => res.destroy(), l.eventsGoodbyeMs * clock.scale);
    },
    get buffered() {
      return res.writableLength;
    },
    onClose: (fn) => {
      if (open) closers.push(fn);
      else fn();
    },
  };
  o.open.add(sink);
  res.on('close', () => {
    goodbye?.cancel();
    close();
  });
  ticker = clock.setTimer(tick, l.eventsKeepAliveMs * clock.scale);
  return sink;
}
