// `c2c-agent prefs [KEY=VALUE...] [--json]`: the running daemon's
// preferences (GET /v1/prefs), or changes to them (PATCH /v1/prefs), in the
// KEY=VALUE form of `sysctl` and `systemctl set-property`:
// `c2c-agent prefs autoUpload=off`. The daemon keeps them on flash, writes
// them only on change, and applies them at once. Needs the daemon: without
// one, exit 69.
import { loadSettings } from '../config/settings.js';
import { EXIT, usageError } from '../lib/errors.js';
import { oneLine, quote } from '../lib/text.js';
import type { CommandContext, CommandOptions } from './command.js';
import { DaemonApi } from './daemon-api.js';
import { fail, printJson, printLine } from './output.js';

export const usage = 'prefs [KEY=VALUE...] [--json]';
export const options = { json: { type: 'boolean' } } satisfies CommandOptions;
export const allowPositionals = true;
export const summary = "Shows the running daemon's preferences, or sets them: c2c-agent prefs autoUpload=off (on/off, true/false, yes/no, 1/0).";
export const optionHelp = { json: { help: 'one JSON object on stdout instead of lines of text' } };
export const help = [
  'autoUpload: off, nothing is taken from the media dir until it is on again; files queued by hand (upload) still go.',
  'Kept on flash by the daemon, written only on change, in effect at once. Exit 64 for an unknown key or value; 69 when no daemon runs.',
];

const TRUE = new Set(['on', 'true', 'yes', '1']);
const FALSE = new Set(['off', 'false', 'no', '0']);

/** One KEY=VALUE as the type the daemon's current value has. */
function parsePair(arg: string, current: Record<string, unknown>): [string, unknown] {
  const eq = arg.indexOf('=');
  if (eq <= 0) throw usageError(`prefs: ${quote(arg)} is not KEY=VALUE (such as autoUpload=off); run c2c-agent prefs --help`);
  const key = arg.slice(0, eq);
  const raw = arg.slice(eq + 1);
  if (!Object.hasOwn(current, key)) throw usageError(`prefs: unknown preference ${quote(key)}; known: ${Object.keys(current).join(', ')}`);
  const was = current[key];
  if (typeof was === 'boolean') {
    const v = raw.toLowerCase();
    if (TRUE.has(v)) return [key, true];
    if (FALSE.has(v)) return [key, false];
    throw usageError(`prefs: ${key}=${quote(raw)} must be on or off`);
  }
  if (typeof was === 'number') {
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(n)) throw usageError(`prefs: ${key}=${quote(raw)} must be a number`);
    return [key, n];
  }
  return [key, raw];
}

function shown(v: unknown): string {
  return typeof v === 'boolean' ? (v ? 'on' : 'off') : oneLine(String(v), 120);
}

export async function run(ctx: CommandContext): Promise<number> {
  try {
    const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: false });
    const daemon = new DaemonApi(settings);
    const current = await daemon.require<Record<string, unknown>>('GET', '/v1/prefs');
    let prefs = current;
    const changed: string[] = [];
    if (ctx.positionals.length > 0) {
      const patch = Object.fromEntries(ctx.positionals.map((a) => parsePair(a, current)));
      for (const [k, v] of Object.entries(patch)) if (current[k] !== v) changed.push(k);
      prefs = await daemon.require<Record<string, unknown>>('PATCH', '/v1/prefs', patch);
    }
    if (ctx.json) printJson({ ok: true, exitCode: EXIT.ok, prefs, changed });
    else printLine(...Object.entries(prefs).map(([k, v]) => `${k}: ${shown(v)}${changed.includes(k) ? ' (changed)' : ''}`));
    return EXIT.ok;
  } catch (err) {
    return fail(err, { json: ctx.json });
  }
}
