// The simulator's command line: parsed once, checked, and turned into one
// options object. A bad option is one usage line on stderr and exit 64.
import { parseArgs } from 'node:util';

export const EXIT_USAGE = 64;

export const USAGE =
  'usage: npm run simulate -- [--devices N] [--minutes M] [--time-scale N] [--seed S] [--faults light|heavy] [--calm] [--forever] [--keep] [--plain] [--plain-http] [--web]' +
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
  web: { type: 'boolean', default: false },
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
 * dist/fleet.mjs as they are), `{ kind: 'help' }` or `{ kind: 'usage',
 * message }` (`usageLine: false` when the message alone is the advice).
 * `env` is the process's environment, where npm leaves the options it took.
 */
export function parseOptions(argv, env = {}) {
  const eaten = eatenByNpm(env);
  // The command meant is the whole advice: no usage line after it.
  if (eaten.length > 0) return { kind: 'usage', message: npmAteOptions(eaten, argv), usageLine: false };
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
        // Each camera's web page on loopback (webListen): its address and PIN printed once it serves.
        web: values.web,
      },
    };
  } catch (err) {
    // node:util parseArgs throws TypeErrors with a code for unknown or malformed options.
    if (err instanceof UsageError) return { kind: 'usage', message: err.message };
    if (err && typeof err.code === 'string' && err.code.startsWith('ERR_PARSE_ARGS')) return { kind: 'usage', message: firstSentence(err.message) };
    throw err;
  }
}

/** Every option the simulator and the fleet take, with whether it takes a value. */
const NPM_VISIBLE = { ...Object.fromEntries(Object.entries(SPEC).map(([k, v]) => [k, v.type === 'string'])), fleet: true, hours: true };

/**
 * `npm run simulate --devices 3` (the `--` forgotten): npm takes `--devices`
 * as its own setting, puts npm_config_devices=true in the environment and
 * hands the script only "3" (with `--devices=3`, nothing at all). The
 * options npm took, as [name, value], in the simulator's order; none when
 * the simulator was not started by `npm run simulate`.
 */
function eatenByNpm(env) {
  if (env.npm_lifecycle_event !== 'simulate') return [];
  return Object.keys(NPM_VISIBLE)
    .map((name) => [name, env[`npm_config_${name.replace(/-/g, '_')}`]])
    .filter(([, value]) => value !== undefined && value !== '' && value !== 'false');
}

/**
 * The usage message for options npm took: the command that was meant, when
 * it can be told (each option npm took as a flag given one of the arguments
 * left over: in the order typed, else the first order the simulator
 * accepts), else the rule.
 */
function npmAteOptions(eaten, argv) {
  const names = eaten.map(([n]) => `--${n}`).join(', ');
  const flags = eaten.filter(([name, value]) => NPM_VISIBLE[name] && value === 'true').map(([name]) => `--${name}`);
  const fixed = eaten.filter(([name, value]) => !(NPM_VISIBLE[name] && value === 'true')).map(([name, value]) => (NPM_VISIBLE[name] ? `--${name}=${value}` : `--${name}`));
  const what = argv.length > 0 ? `unexpected argument ${JSON.stringify(argv[0])}` : `npm took ${names} for itself`;
  if (flags.length > argv.length || flags.length > 4) return `${argv.length > 0 ? `${what}: ` : ''}npm took ${names} for itself; put -- before the simulator's options, as in npm run simulate -- --devices 3`;
  const values = argv.slice(0, flags.length);
  const tries = orders(flags).map((order) => [...order.flatMap((f, i) => [f, values[i]]), ...fixed, ...argv.slice(flags.length)]);
  const meant = tries.find((args) => parseOptions(args).kind !== 'usage') ?? tries[0];
  return `${what}: did you mean npm run simulate -- ${meant.join(' ')}?`;
}

/** Every order of a few items, the given one first. */
function orders(items) {
  if (items.length <= 1) return [items];
  return items.flatMap((first, i) => orders([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [first, ...rest]));
}

/** parseArgs explains at length how to pass a positional starting with '-'; the first sentence names the option. */
function firstSentence(message) {
  return message.split(/\.\s/)[0].replace(/\.$/, '').replace(/^Unknown/, 'unknown');
}

/** The story's seeded PRNG: the same seed gives the same story. */
export { seeded as seededRandom } from '../lib/seeded-random.mjs';
