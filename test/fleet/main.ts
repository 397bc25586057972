// node dist/fleet.mjs --fleet N --hours H [--seed S] [--faults light|heavy] [--json]
// A fleet of agents in virtual time (see fleet.ts). Exit 0 only when the
// invariants held (no violation at the referee, every unit still paired),
// which the last line says (OK or FAILED);
// the herd figure is reported, not judged. Bad options: one line, exit 64.
import { parseArgs } from 'node:util';
import { EXIT } from '../../agent/lib/errors.js';
import { runFleet } from './fleet.js';
import { buildReport, formatReport } from './report.js';

const USAGE = 'usage: fleet --fleet N --hours H [--seed S] [--faults light|heavy] [--json]';

function usage(message: string): never {
  process.stderr.write(`fleet: ${message}; ${USAGE}\n`);
  process.exit(EXIT.usage);
}

function number(name: string, value: string | undefined, ok: (n: number) => boolean, fallback?: number): number {
  if (value === undefined) {
    if (fallback === undefined) usage(`--${name} is required`);
    return fallback;
  }
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || !ok(n)) usage(`--${name} ${JSON.stringify(value)} is not valid`);
  return n;
}

let values: Record<string, string | boolean | undefined>;
try {
  ({ values } = parseArgs({
    options: { fleet: { type: 'string' }, hours: { type: 'string' }, seed: { type: 'string' }, faults: { type: 'string' }, json: { type: 'boolean' } },
    strict: true,
    allowPositionals: false,
  }));
} catch (err) {
  // parseArgs explains at length; its first sentence names the option.
  usage(err instanceof Error ? (err.message.split(/\.\s/)[0] ?? 'bad option') : 'bad option');
}
const units = number('fleet', values.fleet as string | undefined, (n) => Number.isInteger(n) && n >= 1 && n <= 100_000);
const hours = number('hours', values.hours as string | undefined, (n) => n > 0 && n <= 24 * 14);
const seed = number('seed', values.seed as string | undefined, (n) => Number.isInteger(n) && n >= 0 && n < 2 ** 32, 1);
const faults = (values.faults as string | undefined) ?? 'light';
if (faults !== 'light' && faults !== 'heavy') usage(`--faults ${JSON.stringify(faults)} is not light or heavy`);

// A thousand units' timeouts, refusals and 429s are values here, never
// printed with a stack (the agent's logger is silent in the fleet): capturing
// one for each would cost about a tenth of the run. A crash still says what.
Error.stackTraceLimit = 0;

try {
  const report = buildReport(await runFleet({ units, hours, seed, faults }));
  process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : `${formatReport(report)}\n`);
  // The verdict (report.ts): the last line printed, and the exit code.
  process.exitCode = report.ok ? 0 : 1;
} catch (err) {
  process.stderr.write(`fleet: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  // A crash is a verdict too, and still the last line a person sees.
  if (!values.json) process.stdout.write(`FAILED: the fleet run crashed (${err instanceof Error ? err.message : String(err)})\n`);
  process.exitCode = EXIT.internal;
}
