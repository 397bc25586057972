// pino straight to stdout (journald adds the timestamp and unit); no
// transports, since they spawn workers that do not survive bundling.
import { pino, type Logger } from 'pino';
import { SECRET_KEYS, scrub, REDACTED } from './secrets.js';

export type { Logger };

const redactPaths = SECRET_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`]).concat([
  'req.headers.authorization',
  'headers.authorization',
]);

// Synchronous writes: a CLI that exits right after logging must not lose the line.
export function createLogger(level = 'info', destination: pino.DestinationStream = pino.destination({ dest: 1, sync: true })): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      redact: { paths: redactPaths, censor: REDACTED },
      hooks: {
        streamWrite: (line: string) => scrub(line),
      },
    },
    destination,
  );
}
