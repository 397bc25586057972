// How the agent puts values into one-line messages and reports. Values read
// from files, the environment or a server may hold newlines, control
// characters or secrets; durations are agent time.
import { scrub } from './secrets.js';

const MAX_TEXT = 200;
const DAY_MS = 24 * 3600 * 1000;

/** One line of printable text, bounded, registered secrets cut out. */
export function oneLine(text: string, max = MAX_TEXT): string {
  // eslint-disable-next-line no-control-regex
  const flat = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').replace(/\s+/g, ' ').trim();
  const cut = flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
  return scrub(cut);
}

const MAX_QUOTED = 80;

/**
 * A value shown JSON-escaped in quotes, so a newline or control character in
 * it cannot break the one-line rule, and cut to a readable length (a 5 MiB
 * profile name must not make a 10 MiB message): 'abc…' (5242880 chars).
 */
export function quote(value: string, max = MAX_QUOTED): string {
  if (value.length <= max) return `'${JSON.stringify(value).slice(1, -1)}'`;
  return `'${JSON.stringify(value.slice(0, max)).slice(1, -1)}…' (${value.length} chars)`;
}

const MAX_PATH_SHOWN = 160;
const PATH_HEAD = 40;

/**
 * A path, quoted like quote(); a very long one keeps its start and its end,
 * where the file's own name is: '/var/lib/…/queue/seg-000001.log' (5000 chars).
 */
export function quotePath(p: string): string {
  if (p.length <= MAX_PATH_SHOWN) return quote(p, MAX_PATH_SHOWN);
  const esc = (s: string): string => JSON.stringify(s).slice(1, -1);
  return `'${esc(p.slice(0, PATH_HEAD))}…${esc(p.slice(p.length - (MAX_PATH_SHOWN - PATH_HEAD)))}' (${p.length} chars)`;
}

/** Compact, for status lines and tables: "45s", "2m13s", "1h02m". */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** Rounded, for sentences: "45 s", "12 min", "23 h", "9 days" (sign ignored). */
export function describeDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 90_000) return `${Math.round(abs / 1000)} s`;
  if (abs < 90 * 60_000) return `${Math.round(abs / 60_000)} min`;
  if (abs < 2 * DAY_MS) return `${Math.round(abs / 3_600_000)} h`;
  return `${Math.round(abs / DAY_MS)} days`;
}

/** A count and its noun, singular for 1: "1 attempt", "2 attempts", "3 entries" (with the plural given). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** Sizes and rates: binary (IEC) units, the convention of the agent and the simulator alike (byte-size.js says why). */
export { formatBytes, formatRate } from './byte-size.js';

/**
 * Words wrapped to `width` columns, every line after the first indented by
 * `indent` spaces; a word longer than a line stands alone on its own. Words
 * joined by U+00A0 stay together (the caller turns it back into a space).
 */
export function wrap(text: string, width: number, indent = 0): string[] {
  const lines: string[] = [];
  let line = '';
  // Only plain spaces break: a no-break space (U+00A0) keeps "--media-dir DIR" on one line.
  for (const word of text.split(/[ \t\n]+/).filter((w) => w !== '')) {
    const pad = lines.length === 0 ? '' : ' '.repeat(indent);
    if (line === '') line = `${pad}${word}`;
    else if (line.length + 1 + word.length <= width) line += ` ${word}`;
    else {
      lines.push(line);
      line = `${' '.repeat(indent)}${word}`;
    }
  }
  if (line !== '') lines.push(line);
  return lines;
}

/**
 * A JSON.parse error in a person's terms: node gives a character position
 * ("... in JSON at position 42"; newer ones add their own line and column),
 * an editor shows lines and columns. Returns "line 3, column 5: Unexpected
 * number", or the message as it is when it names no position.
 */
export function jsonErrorWhere(text: string, err: unknown): string {
  const message = oneLine(err instanceof Error ? err.message : String(err));
  const m = / in JSON at position (\d+)(?: \(line \d+ column \d+\))?/.exec(message);
  if (m === null) return message;
  const pos = Math.min(Number(m[1]), text.length);
  const before = text.slice(0, pos);
  const line = before.split('\n').length;
  const column = pos - (before.lastIndexOf('\n') + 1) + 1;
  return `line ${line}, column ${column}: ${message.replace(m[0], '')}`;
}
