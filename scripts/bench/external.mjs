// Figures other tools measure, run as child processes and read from their
// --json output: RSS while uploading a 2 GiB sparse file (bench-upload.mjs,
// whose own idle RSS of the same agent is the baseline) and the fleet
// simulation's thundering-herd figure (dist/fleet.mjs: peak over mean
// heartbeat arrivals after a mass power cut, already a ratio to the mean).
// A tool that is missing, fails or prints something unreadable gives a row
// saying so, never a number.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fmt, lastJson, missingRow, row } from './figures.mjs';
import { root, runNode } from './procs.mjs';

export const UPLOAD_GROWTH_GOAL_MIB = 8;
/** Issue 21: the clip complete at least ten times sooner after the stop than a whole-file upload of it. */
export const REALTIME_RATIO_GOAL = 10;
export const HERD_GOAL = 2;

const why = (r, tool, timeoutMs) => (r.timedOut ? `${tool} did not finish within ${timeoutMs / 60_000} min` : r.signal ? `${tool} killed by ${r.signal}` : `${tool} exited ${r.code}: ${r.stderr.trim().split('\n').pop()?.slice(0, 160) ?? ''}`);

/** { rows, notes }: RSS of the agent uploading a sparse file, peak minus its own idle. */
export async function uploadRss({ quick = false } = {}) {
  const measure = `RSS while uploading a ${quick ? '512 MiB' : '2 GiB'} sparse file (peak - idle, HTTPS, the unit's node flags and environment)`;
  const goal = `<= ${UPLOAD_GROWTH_GOAL_MIB} MiB`;
  const script = path.join(root, 'scripts/bench-upload.mjs');
  if (!existsSync(script)) return { rows: [missingRow(measure, goal, 'scripts/bench-upload.mjs is missing')], notes: [] };
  const args = [script, '--skip-throughput', '--json', ...(quick ? ['--sparse-size', '512M', '--settle', '3', '--camera-mbps', '100'] : [])];
  const timeoutMs = 15 * 60_000;
  const r = await runNode(args, { timeoutMs });
  const out = r.code === 0 ? lastJson(r.stdout) : undefined;
  if (!out) return { rows: [missingRow(measure, goal, r.code === 0 ? 'bench-upload printed no JSON' : why(r, 'bench-upload', timeoutMs))], notes: [] };
  const all = Object.entries(out.memory ?? {}).filter(([, m]) => m && Number.isFinite(m.growthMiB));
  // The agent as the systemd unit runs it (its node flags) is the figure; the bare-node runs are notes.
  const runs = all.filter(([n]) => !n.startsWith('bare '));
  if (runs.length === 0) return { rows: [missingRow(measure, goal, `bench-upload measured no memory run${out.memory?.skipped ? `: ${out.memory.skipped}` : ''}`)], notes: [] };
  // The worse of its runs (loopback speed, and a camera's uplink through a throttle) is the figure.
  const [name, worst] = runs.reduce((a, b) => (b[1].growthMiB > a[1].growthMiB ? b : a));
  return {
    rows: [row(measure, {
      agent: `+${fmt(worst.growthMiB, 1)} MiB (peak ${fmt(worst.peakRssMiB.total, 1)})`, baseline: `${fmt(worst.idleRssMiB.total, 1)} MiB idle agent`,
      ratio: worst.peakRssMiB.total / worst.idleRssMiB.total, goal, pass: worst.growthMiB <= UPLOAD_GROWTH_GOAL_MIB,
    })],
    notes: [`upload RSS (bench-upload.mjs --skip-throughput, a fresh agent per run over HTTPS, node ${out.nodeOptions || 'without flags'} and the rest of the unit's Environment= lines, the bare runs with neither (their daemon's V8 flags set by run itself), VmRSS every 100 ms): ${all.map(([n, m]) => `${n} ${fmt(m.MBps, 1)} MB/s: idle ${fmt(m.idleRssMiB.total, 1)}, peak ${fmt(m.peakRssMiB.total, 1)}, +${fmt(m.growthMiB, 1)} MiB`).join('; ')}; the row shows the worse (${name}).`],
  };
}

/** { rows, notes }: the fleet simulation's herd figure after its power cuts (the worst of them). */
export async function fleetHerd({ fleet = 1000, hours = 24, seed = 1, timeoutMs = 12 * 60_000 } = {}) {
  const measure = `thundering herd after a mass restart (fleet ${fleet}, ${hours} h)`;
  const goal = `<= ${HERD_GOAL}`;
  const tool = path.join(root, 'dist/fleet.mjs');
  if (!existsSync(tool)) return { rows: [missingRow(measure, goal, 'dist/fleet.mjs is not built')], notes: [] };
  const r = await runNode([tool, '--fleet', String(fleet), '--hours', String(hours), '--seed', String(seed), '--json'], { timeoutMs });
  // A nonzero exit may still carry the report (e.g. a referee violation): the figure is read either way, the exit is noted.
  const out = lastJson(r.stdout);
  if (!out) return { rows: [missingRow(measure, goal, why(r, 'fleet', timeoutMs))], notes: [] };
  const herd = (out.herd ?? []).filter((h) => Number.isFinite(h.peakOverMean));
  if (herd.length === 0) return { rows: [missingRow(measure, goal, 'the fleet run had no power cut to measure')], notes: [] };
  const worst = herd.reduce((a, b) => (b.peakOverMean > a.peakOverMean ? b : a));
  return {
    rows: [row(measure, { agent: `${fmt(worst.peakPerS, 1)} heartbeats/s peak`, baseline: `${fmt(out.meanHeartbeatsPerS, 1)}/s mean`, ratio: worst.peakOverMean, goal, pass: worst.peakOverMean <= HERD_GOAL })],
    notes: [
      `herd: ${out.herdDefinition ?? 'peak over mean heartbeat arrivals after a power cut'}; seed ${out.seed ?? seed}, ${herd.length} power cut(s): ` +
        `${herd.map((h) => `${fmt(h.peakOverMean)} (1 s window ${h.byWindow?.['1s'] ?? 'n/a'}, 60 s window ${h.byWindow?.['60s'] ?? 'n/a'}, quiet-time peak ${h.quietPeakOverMean ?? 'n/a'})`).join('; ')}; ` +
        `referee violations ${out.violations?.total ?? 'n/a'}${r.code === 0 ? '' : `; fleet exited ${r.code ?? r.signal}`}.`,
    ],
  };
}

/** { rows, notes }: real-time uploads (bench-realtime.mjs): stop to complete against whole-file mode, and the RSS while a recording uploads. */
export async function realtimeUploads({ quick = false } = {}) {
  const size = quick ? '256M' : '1G';
  const tail = `stop to complete, ${quick ? '256 MiB' : '1 GiB'} recorded at 20 MB/s over a 40 MB/s link`;
  const mem = 'RSS while a recording uploads in real time (peak - idle, HTTPS, the unit\'s node flags and environment)';
  const tailGoal = `>= ${REALTIME_RATIO_GOAL}x`;
  const memGoal = `<= ${UPLOAD_GROWTH_GOAL_MIB} MiB`;
  const script = path.join(root, 'scripts/bench-realtime.mjs');
  if (!existsSync(script)) return { rows: [missingRow(tail, tailGoal, 'scripts/bench-realtime.mjs is missing'), missingRow(mem, memGoal, 'scripts/bench-realtime.mjs is missing')], notes: [] };
  const timeoutMs = 15 * 60_000;
  const r = await runNode([script, '--json', '--size', size], { timeoutMs });
  const out = r.code === 0 ? lastJson(r.stdout) : undefined;
  if (!out?.realtime || !out?.whole) {
    const reason = r.code === 0 ? 'bench-realtime printed no JSON' : why(r, 'bench-realtime', timeoutMs);
    return { rows: [missingRow(tail, tailGoal, reason), missingRow(mem, memGoal, reason)], notes: [] };
  }
  const rt = out.realtime;
  return {
    rows: [
      row(tail, { agent: `${fmt(rt.tailS)} s real-time`, baseline: `${fmt(out.whole.tailS)} s whole-file`, ratio: `${fmt(out.ratio, 1)}x faster`, goal: tailGoal, pass: out.ratio >= REALTIME_RATIO_GOAL }),
      row(mem, { agent: `+${fmt(rt.growthMiB, 1)} MiB (peak ${fmt(rt.peakRssMiB, 1)})`, baseline: `${fmt(rt.idleRssMiB, 1)} MiB idle agent`, ratio: rt.peakRssMiB / rt.idleRssMiB, goal: memGoal, pass: rt.growthMiB <= UPLOAD_GROWTH_GOAL_MIB }),
    ],
    notes: [
      `real-time (bench-realtime.mjs --size ${size}): a recorder writes take.mov.part into the agent's media dir on tmpfs at ${out.recordMBps} MB/s, rewrites its first 4 KiB at stop and renames it; ` +
        `the time from the rename to the asset complete at the fake, through a proxy letting ${out.linkMBps} MB/s out of the agent; real-time ${rt.parts} parts of 8 MiB, ` +
        `whole-file with --media-settle-seconds 0 (its figure is the transfer alone); a fresh agent each over HTTPS (node ${out.nodeOptions || 'without flags'}, the unit's other Environment= lines); the whole-file agent's RSS peak - idle: +${fmt(out.whole.growthMiB, 1)} MiB.`,
    ],
  };
}
