// The bundle's size against its budget (with the per-package breakdown from
// the esbuild metafile scripts/build.mjs writes), and the bytes the built
// daemon writes to its state dir (flash) per healthy heartbeat, seen by
// strace (the method of bench-outbox-strace.mjs, reused as is).
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { idleHour, straceMissing } from '../bench-outbox-strace.mjs';
import { bytesByPackage, fmt, missingRow, row } from './figures.mjs';
import { bundle, killAll, root, tmp } from './procs.mjs';
import { BUNDLE_BUDGET_BYTES } from '../build-config.mjs';

const KiB = (n) => `${fmt(n / 1024, 1)} KiB`;

/** { rows, notes } for the bundle's size. */
export function bundleSize() {
  if (!existsSync(bundle)) return { rows: [missingRow('bundle dist/c2c-agent.mjs', `<= ${KiB(BUNDLE_BUDGET_BYTES)}`, 'not built: npm run build')], notes: [] };
  const size = statSync(bundle).size;
  const notes = [];
  const metaFile = path.join(root, 'dist/c2c-agent.meta.json');
  if (existsSync(metaFile)) {
    const meta = JSON.parse(readFileSync(metaFile, 'utf8'));
    const out = meta.outputs?.['dist/c2c-agent.mjs'] ?? Object.values(meta.outputs ?? {})[0];
    if (out) {
      const top = bytesByPackage(out).slice(0, 5).map((p) => `${p.name} ${KiB(p.bytes)}`);
      notes.push(`bundle by package (bytes in the output, top 5): ${top.join(', ')}.`);
    }
  } else notes.push('bundle by package: n/a (no dist/c2c-agent.meta.json).');
  return {
    rows: [row('bundle dist/c2c-agent.mjs', { agent: KiB(size), baseline: `${KiB(BUNDLE_BUDGET_BYTES)} budget`, ratio: size / BUNDLE_BUDGET_BYTES, goal: '<= 1.00x', pass: size <= BUNDLE_BUDGET_BYTES })],
    notes,
  };
}

/** { rows, notes }: state-dir bytes per healthy heartbeat over `hours` agent hours (strace). */
export async function stateDirWrites({ scale = 600, hours = 1 } = {}) {
  const measure = 'bytes written to the state dir per healthy heartbeat';
  if (straceMissing()) return { rows: [missingRow(measure, '0', 'strace is not installed')], notes: [] };
  const children = [];
  let r;
  try {
    // idleHour counts one agent hour; more hours = a lower scale, the same window of real time per hour.
    r = await idleHour({ root, tmp, scale: scale / hours, children });
  } finally {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    killAll();
  }
  const perHeartbeat = r.heartbeats > 0 ? r.state.bytes / r.heartbeats : NaN;
  // A rename or an fsync wears flash too, even with no bytes: the goal is no writing at all.
  const clean = r.state.bytes === 0 && r.state.ops === 0 && r.state.fsyncs === 0;
  return {
    rows: [row(measure, {
      agent: perHeartbeat === 0 ? `0 B${clean ? '' : `, ${r.state.ops} file ops, ${r.state.fsyncs} fsyncs`}` : `${fmt(perHeartbeat, 1)} B`,
      baseline: '0 B', ratio: r.state.bytes === 0 ? '-' : 'n/a (baseline 0)', goal: '0 B, no file ops', pass: r.heartbeats > 0 && clean,
    })],
    notes: [
      `state dir (strace -f of writes, opens for writing, renames, unlinks, fsyncs under it): ${r.state.bytes} bytes, ${r.state.writes} writes, ${r.state.ops} file ops, ${r.state.fsyncs} fsyncs ` +
        `in ${fmt(r.agentHours, 2)} agent hours (${fmt(r.realSeconds, 1)} s at scale ${fmt(r.scale, 0)}, ${r.heartbeats} heartbeats, after start-up and the first channel sync had settled); ` +
        `for scale, the runtime dir (status.json; a tmpfs as deployed, RuntimeDirectory=, here in the bench's temp dir) took ${r.runtime.bytes} bytes; files written: state ${r.state.files.join(', ') || 'none'}.`,
    ],
  };
}
