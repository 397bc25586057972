// Pure helpers of the benchmark: statistics, the table's rows and its two
// renderings (the terminal and dist/bench.md). No I/O here, so they are tested.

export const MiB = 1024 * 1024;

export function median(xs) {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Growth of a series sampled at a steady rate: the median of its last third
 * minus the median of its first third (medians, so one GC or one burst of
 * start-up work does not decide the figure).
 */
export function growthOfThirds(samples) {
  if (samples.length < 3) return NaN;
  const third = Math.floor(samples.length / 3);
  return median(samples.slice(-third)) - median(samples.slice(0, third));
}

/** The median of the last third of a series: "the level at the end". */
export function lastThird(samples) {
  return median(samples.slice(-Math.max(1, Math.floor(samples.length / 3))));
}

export const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
export const signed = (x, d = 2) => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${x.toFixed(d)}` : 'n/a');

/**
 * One row of the table. `agent` and `baseline` are shown as given (strings
 * with units); `ratio` is a number (shown as 1.23x) or a string; `pass` is
 * true, false, or undefined when the row could not be judged.
 */
export function row(measure, { agent = '', baseline = '', ratio = '', goal = '', pass } = {}) {
  return { measure, agent, baseline, ratio: typeof ratio === 'number' ? (Number.isFinite(ratio) ? `${ratio.toFixed(2)}x` : 'n/a') : ratio, goal, pass };
}

/** A row that could not be measured: says why, never shows a number. */
export function missingRow(measure, goal, reason) {
  return row(measure, { agent: `n/a (${reason})`, goal });
}

export const mark = (pass) => (pass === true ? 'pass' : pass === false ? 'MISS' : '-');

const COLUMNS = ['measure', 'agent', 'baseline', 'ratio', 'goal', ''];
const cells = (r) => [r.measure, r.agent, r.baseline, r.ratio, r.goal, mark(r.pass)];

/** The table for a terminal: padded columns; a cell too wide for its column widens it. */
export function textTable(rows) {
  const all = [COLUMNS, ...rows.map(cells)];
  const widths = COLUMNS.map((_, i) => Math.max(...all.map((r) => String(r[i]).length)));
  const line = (r) => r.map((c, i) => String(c).padEnd(widths[i])).join('  ').trimEnd();
  return [line(COLUMNS), '-'.repeat(widths.reduce((a, b) => a + b + 2, -2)), ...rows.map((r) => line(cells(r)))].join('\n');
}

const mdCell = (c) => String(c).replace(/\|/g, '\\|');

/** The same table as GitHub Markdown. */
export function markdownTable(rows) {
  const head = ['measure', 'agent', 'baseline', 'ratio', 'goal', 'met'];
  return [
    `| ${head.join(' | ')} |`,
    `|${head.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`,
    ...rows.map((r) => `| ${cells(r).map(mdCell).join(' | ')} |`),
  ].join('\n');
}

/**
 * Bytes in the bundle per package, from an esbuild metafile's output entry:
 * node_modules paths by package (the last node_modules segment, scoped names
 * kept whole), the agent's own sources as `agent/`, everything else by its
 * first path segment, a build plugin's module by its last name and its
 * plugin's namespace. Largest first.
 */
export function bytesByPackage(output) {
  const sums = new Map();
  for (const [file, { bytesInOutput }] of Object.entries(output.inputs)) {
    const nm = file.lastIndexOf('node_modules/');
    let key;
    if (nm >= 0) {
      const parts = file.slice(nm + 'node_modules/'.length).split('/');
      key = parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
    } else if (file.startsWith('<')) key = 'build-time data';
    else if (/^[\w-]+:/.test(file)) {
      // A build plugin's module (a stub, a packed cold module): named by what it stands for, and by the plugin.
      const parts = file.split(':');
      key = `${parts[parts.length - 1]} (${parts[0]})`;
    } else key = `${file.split('/')[0]}/`;
    sums.set(key, (sums.get(key) ?? 0) + bytesInOutput);
  }
  return [...sums].map(([name, bytes]) => ({ name, bytes })).sort((a, b) => b.bytes - a.bytes);
}

/** The last line of `stdout` that parses as a JSON object, or undefined. */
export function lastJson(stdout) {
  for (const line of stdout.trim().split('\n').reverse()) {
    if (!line.startsWith('{')) continue;
    try {
      return JSON.parse(line);
    } catch {
      // not this line
    }
  }
  return undefined;
}

/** The part names `--only` accepts, checked; undefined = all. */
export function parseOnly(value, known) {
  if (value === undefined) return [...known];
  const wanted = value.split(',').map((s) => s.trim()).filter(Boolean);
  const bad = wanted.filter((w) => !known.includes(w));
  if (bad.length > 0 || wanted.length === 0) {
    throw new Error(`--only: unknown part ${JSON.stringify(bad.join(',') || value)}; known: ${known.join(',')}`);
  }
  return known.filter((k) => wanted.includes(k));
}
