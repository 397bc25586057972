// pino straight to stdout (journald adds the timestamp and unit); no
// transports, since they spawn workers that do not survive bundling.
import { pino, type Logger } from 'pino';
import { scrub, withoutSecretKeys } from './secrets.js';

export type { Logger };

// Secret keys go by secrets.ts's one rule, as the CLI's --json output does,
// through pino's formatter and error serializer rather than its `redact`
// paths: those are parsed again and the fields cloned for every object in
// every line, about 0.5 ms a line under the unit's --no-opt against 0.03
// (docs/benchmarks.md, "Start-up"). The serializer walks a serialized error's
// own fields as a plain object; an `err` that is not an Error (most lines give
// its text) is left as it is, as pino's serializer leaves it.
const errWithoutSecretKeys = (err: unknown): unknown => {
  const out: unknown = pino.stdSerializers.err(err as Error);
  return out !== null && typeof out === 'object' ? withoutSecretKeys({ ...out }) : out;
};

// Synchronous writes: a CLI that exits right after logging must not lose the line.
export function createLogger(level = 'info', destination: pino.DestinationStream = pino.destination({ dest: 1, sync: true })): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      formatters: { log: (fields) => withoutSecretKeys(fields) },
      serializers: { err: errWithoutSecretKeys },
      hooks: {
        streamWrite: (line: string) => scrub(line),
      },
    },
    destination,
  );
}
