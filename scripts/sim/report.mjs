// The closing report, as pure functions of plain data (so it can be tested
// on fixed input): the heartbeat spacing histogram, the timeline of states,
// online percentages and the list of invariants, each held or not.

/** The service's rules, as the referee applies them. */
export const MIN_SPACING_S = 60;
export const MAX_SPACING_S = 300;
const BIN_S = 15;
const BAR_WIDTH = 40;
/** "105–120 s" */
const LABEL_WIDTH = 9;

/** "1m05s", "45s", "2h03m" from agent ms. */
export function duration(ms) {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** "mm:ss" of agent time since the story began. */
export function clock(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

/** Sizes in the agent's one convention (binary units), from the agent's own formatter. */
export { formatBytes as bytes } from '../../agent/lib/byte-size.js';

/** Gaps in seconds between consecutive heartbeat attempts of each device (times in ms). */
export function spacings(timesByDevice) {
  const out = [];
  for (const times of timesByDevice) for (let i = 1; i < times.length; i++) out.push((times[i] - times[i - 1]) / 1000);
  return out;
}

/**
 * Horizontal histogram of heartbeat spacings in 15 s bins, from the first
 * to the last bin that holds anything, with the rules marked: a bar under
 * 60 s breaks the minimum, over 300 s the maximum (which the referee
 * excuses only while the service was not serving normally).
 */
export function histogram(gapsS, { width = BAR_WIDTH } = {}) {
  if (gapsS.length === 0) return ['  (fewer than two heartbeats: no spacing to show)'];
  const over = gapsS.filter((g) => g >= MAX_SPACING_S).length;
  const bins = new Array(MAX_SPACING_S / BIN_S).fill(0);
  for (const g of gapsS) if (g < MAX_SPACING_S) bins[Math.floor(g / BIN_S)]++;
  const used = bins.map((n, i) => (n > 0 ? i : -1)).filter((i) => i >= 0);
  const first = used.length > 0 ? Math.min(used[0], MIN_SPACING_S / BIN_S) : MIN_SPACING_S / BIN_S;
  const last = used.length > 0 ? used.at(-1) : first;
  const peak = Math.max(over, ...bins);
  const bar = (n) => (n === 0 ? '' : '█'.repeat(Math.max(1, Math.round((n / peak) * width))));
  const lines = [];
  for (let i = first; i <= last; i++) {
    const from = i * BIN_S;
    // A long run of empty bins (the gap from the usual spacings to a lone long one) is one row.
    let run = 0;
    while (i + run <= last && bins[i + run] === 0 && i + run !== MIN_SPACING_S / BIN_S) run++;
    if (run >= 3) {
      lines.push(`  ${'⋮'.padStart(5).padEnd(LABEL_WIDTH)} │`);
      i += run - 1;
      continue;
    }
    const label = `${String(from).padStart(3)}–${String(from + BIN_S).padEnd(3)} s`;
    const note = from < MIN_SPACING_S && bins[i] > 0 ? '  ✗ under the 60 s minimum' : '';
    if (from === MIN_SPACING_S) lines.push(`  ${' '.repeat(label.length)} ┼── 60 s: the minimum spacing`);
    lines.push(`  ${label} │${bar(bins[i])}${bins[i] > 0 ? ` ${bins[i]}` : ''}${note}`);
  }
  if (over > 0) {
    lines.push(`  ${' '.repeat(LABEL_WIDTH)} ┼── 300 s: the longest allowed while the service answers`);
    lines.push(`  ${'≥ 300 s'.padEnd(LABEL_WIDTH)} │${bar(over)} ${over}  (an outage or a revoked token: see the referee)`);
  }
  const sorted = [...gapsS].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  lines.push(`  ${gapsS.length} gaps; shortest ${sorted[0].toFixed(1)} s, median ${median.toFixed(1)} s, longest ${sorted.at(-1).toFixed(1)} s`);
  return lines;
}

const STATE_MARK = { online: '█', offline: '░', 'rate-limited': '▒', paused: '│', 'needs-pairing': '?', starting: '·', stopping: ' ', stopped: ' ' };
export const TIMELINE_LEGEND = '█ online  ░ offline  ▒ rate-limited  ? needs pairing  · starting  ╳ network down';

/** Which state a slice shows when it held several: the one a person must not miss. */
const SHOWN_FIRST = ['needs-pairing', 'offline', 'rate-limited', 'paused', 'starting', 'online', 'stopping', 'stopped'];

/** The states held during [from, to) in a list of { t, state } sorted by t (before the first: starting). */
function statesWithin(states, from, to) {
  let current = 'starting';
  const held = new Set();
  for (const e of states) {
    if (e.t <= from) current = e.state;
    else if (e.t < to) held.add(e.state);
  }
  held.add(current);
  return SHOWN_FIRST.find((s) => held.has(s)) ?? current;
}

/**
 * One row per device, one character per slice of the story (a short
 * needs-pairing or offline spell shows even when it filled only part of its
 * slice), under a row of the network's outages and a ruler in agent minutes.
 */
export function timeline({ devices, outages, endMs, width = 60 }) {
  const slice = endMs / width;
  const labelWidth = Math.max(7, ...devices.map((d) => d.label.length));
  const pad = (s) => s.padEnd(labelWidth);
  const mid = (i) => (i + 0.5) * slice;
  const network = Array.from({ length: width }, (_, i) => (outages.some((o) => o.from <= mid(i) && mid(i) < o.to) ? '╳' : '─')).join('');
  const lines = [`  ${pad('network')} ${network}`];
  for (const d of devices) lines.push(`  ${pad(d.label)} ${Array.from({ length: width }, (_, i) => STATE_MARK[statesWithin(d.states, i * slice, (i + 1) * slice)] ?? '?').join('')}`);
  const ruler = new Array(width).fill(' ');
  const every = Math.max(1, Math.ceil(endMs / 60_000 / 6));
  const marks = [];
  for (let m = 0; m * 60_000 <= endMs; m += every) {
    const col = Math.min(width - 1, Math.floor((m * 60_000) / slice));
    ruler[col] = '╵';
    marks.push({ col, text: `${m}m` });
  }
  const labels = new Array(width + 8).fill(' ');
  for (const { col, text } of marks) for (let k = 0; k < text.length; k++) labels[col + k] = text[k];
  lines.push(`  ${pad('')} ${ruler.join('').trimEnd()}`, `  ${pad('')} ${labels.join('').trimEnd()}`, `  ${TIMELINE_LEGEND}`);
  return lines;
}

/** Share of [0, endMs) each device spent online, from its state changes. */
export function onlineShare(states, endMs) {
  let online = 0;
  for (let i = 0; i < states.length; i++) {
    if (states[i].state !== 'online') continue;
    const to = Math.min(endMs, states[i + 1]?.t ?? endMs);
    online += Math.max(0, to - states[i].t);
  }
  return endMs > 0 ? online / endMs : 0;
}

/** `{ name, ok, detail }` per invariant → lines, and whether all held. */
export function verdict(checks) {
  const lines = checks.map((c) => `  ${c.ok ? '✓' : '✗'} ${c.name}: ${c.detail}`);
  const ok = checks.every((c) => c.ok);
  lines.push('', ok ? 'OK: every invariant held' : `FAILED: ${checks.filter((c) => !c.ok).length} of ${checks.length} invariants broken (✗ above)`);
  return { ok, lines };
}

/** The referee's counts for one device as a sentence a person reads (no JSON, no float ms). */
export function refereeLine(label, r) {
  const failed = r.heartbeats - r.successfulHeartbeats;
  return `${label}: ${r.heartbeats} heartbeats (${r.successfulHeartbeats} accepted${failed > 0 ? `, ${failed} failed or refused` : ''}); ${r.tooSoon} too soon, ${r.tooLate} too late, ${r.missingVersion} without x-client-version`;
}
