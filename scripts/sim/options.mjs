// The simulator's command line: parsed once, checked, and turned into one
// options object. A bad option is one usage line on stderr and exit 64.
import { parseArgs } from 'node:util';

export const EXIT_USAGE = 64;

export const USAGE =
  'usage: npm run simulate -- [--devices N] [--minutes M] [--time-scale N] [--seed S] [--faults light|heavy] [--calm] [--forever] [--keep] [--plain] [--plain-http]' +
  ' | --fleet N --hours H [--seed S] [--faults light|heavy] [--json]';

export const DEFAULTS = Object.freeze({ devices: 1, minutes: 30, timeScale: 30, seed: 1, faults: 'light' });
/** The story needs room for its steps: plug, clips, an outage, a revoke and a re-pairing. */
export const MIN_MINUTES = 10;
export const MAX_DEVICES = 20;
/** Above this, timer jitter on a busy machine is several agent seconds: the story stops being a fair test. */
export const MAX_TIME_SCALE = 600;

const SPEC = {
  devices: { type: 'string' },
  minutes: { type: 'string' },
  'time-scale': { type: 'string' },
  seed: { type: 'string' },
  faults: { type: 'string' },
  calm: { type: 'boolean', default: false },
  forever: { type: 'boolean', default: false },
  keep: { type: 'boolean', default: false },
  plain: { type: 'boolean', default: false },
  'plain-http': { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
};

class UsageError extends Error {}

function number(values, name, fallback, { min, max, integer }) {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  const ok = raw.trim() !== '' && Number.isFinite(n) && n >= min && n <= max && (!integer || Number.isInteger(n));
  if (!ok) throw new UsageError(`--${name} ${JSON.stringify(raw)}: must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
  return n;
}

/**
 * `{ kind: 'story', options }`, `{ kind: 'fleet', args }` (handed to
 * dist/fleet.mjs as they are), `{ kind: 'help' }` or `{ kind: 'usage', message }`.
 */
export function parseOptions(argv) {
  if (argv.some((a) => a === '--fleet' || a.startsWith('--fleet='))) return { kind: 'fleet', args: argv };
  try {
    const { values, positionals } = parseArgs({ args: argv, options: SPEC, strict: true, allowPositionals: true });
    if (values.help) return { kind: 'help' };
    if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
    const faults = values.faults ?? DEFAULTS.faults;
    if (faults !== 'light' && faults !== 'heavy') throw new UsageError(`--faults ${JSON.stringify(faults)}: must be light or heavy`);
    if (values.calm && values.faults !== undefined) throw new UsageError('--calm and --faults: choose one (--calm means no outage and no faults)');
    return {
      kind: 'story',
      options: {
        devices: number(values, 'devices', DEFAULTS.devices, { min: 1, max: MAX_DEVICES, integer: true }),
        minutes: number(values, 'minutes', DEFAULTS.minutes, { min: MIN_MINUTES, max: 24 * 60, integer: false }),
        timeScale: number(values, 'time-scale', DEFAULTS.timeScale, { min: 1, max: MAX_TIME_SCALE, integer: false }),
        seed: number(values, 'seed', DEFAULTS.seed, { min: 0, max: 2 ** 32 - 1, integer: true }),
        faults: values.calm ? 'none' : faults,
        forever: values.forever,
        keep: values.keep,
        plain: values.plain,
        // The fake serves HTTPS with a throwaway CA the agents trust through caFile; this keeps plain HTTP on loopback.
        plainHttp: values['plain-http'],
      },
    };
  } catch (err) {
    // node:util parseArgs throws TypeErrors with a code for unknown or malformed options.
    if (err instanceof UsageError) return { kind: 'usage', message: err.message };
    if (err && typeof err.code === 'string' && err.code.startsWith('ERR_PARSE_ARGS')) return { kind: 'usage', message: firstSentence(err.message) };
    throw err;
  }
}

/** parseArgs explains at length how to pass a positional starting with '-'; the first sentence names the option. */
function firstSentence(message) {
  return message.split(/\.\s/)[0].replace(/\.$/, '').replace(/^Unknown/, 'unknown');
}

/** The story's seeded PRNG: the same seed gives the same story. */
export { seeded as seededRandom } from '../lib/seeded-random.mjs';
