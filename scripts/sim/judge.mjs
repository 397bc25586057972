// The verdict: every invariant the story must keep, checked from the
// service's side (referee, assets, channels) and the agents' (exit codes,
// queues), then drawn as the closing report.
import { CHANNELS, sameBytes } from './device.mjs';
import { bytes, clock, duration, histogram, onlineShare, refereeLine, spacings, timeline, verdict } from './report.mjs';

/** Whether a device has finished its work: online, nothing queued, every clip stored, channels as plugged. */
export async function settled(cloud, monitor, device) {
  const row = monitor.row(device);
  if (row.state !== 'online' || row.queued > 0 || row.clipsStored < row.clips) return false;
  return channelsMatch(await cloud.device(device.deviceId), device);
}

function channelsMatch(record, device) {
  const atService = (record?.channels ?? []).map((c) => c.device_model_id).sort();
  const plugged = [...device.plugged].map((k) => CHANNELS[k].deviceModelId).sort();
  return atService.length === plugged.length && atService.every((m, i) => m === plugged[i]);
}

/** Everything the report needs, read after the agents stopped. */
export async function gather({ cloud, devices, exitCodes }) {
  const assets = await cloud.assets();
  const presses = await cloud.presses();
  const facts = [];
  for (const [i, d] of devices.entries()) {
    const queue = await d.queue();
    facts.push({ device: d, exitCode: exitCodes[i], referee: await cloud.referee(d.deviceId), record: await cloud.device(d.deviceId), queue: queue.json, assets: assets.filter((a) => a.deviceId === d.deviceId), presses: presses.filter((p) => p.deviceId === d.deviceId) });
  }
  return facts;
}

/**
 * The presses as the service has them against those the director made: each
 * once (204, no duplicate, nothing the referee found wrong), on its channel's
 * input, made when it was pressed by its offset (the offset is whole agent
 * seconds; `slackMs` is what the real clock's pace makes of the moment).
 */
function pressCheck(f, origin, slackMs) {
  const problems = [];
  const taken = (f.presses ?? []).filter((p) => p.status === 204 && !p.duplicate);
  for (const p of f.presses ?? []) for (const x of p.problems) problems.push(`a press the service refused: ${x}`);
  const dups = (f.presses ?? []).filter((p) => p.duplicate).length;
  if (dups > 0) problems.push(`${dups} press(es) arrived twice`);
  if (taken.length !== (f.device.presses ?? []).length) problems.push(`${(f.device.presses ?? []).length} pressed, ${taken.length} taken by the service`);
  (f.device.presses ?? []).forEach((made, i) => {
    const p = taken[i];
    if (p === undefined) return;
    if (p.index !== made.index) problems.push(`press ${i + 1} arrived as input ${p.index}, not ${made.index}`);
    const madeAt = p.t - origin - p.body.offset * 1000;
    if (Math.abs(madeAt - made.at) > slackMs) problems.push(`press ${i + 1} made at ${clock(made.at)} arrived as made at ${clock(madeAt)} (offset ${p.body.offset} s)`);
  });
  return problems;
}

/** One line per press: when it was made, when it arrived, its offset and timecode. */
function pressLines(f, origin, outages) {
  const taken = (f.presses ?? []).filter((p) => p.status === 204 && !p.duplicate);
  return (f.device.presses ?? []).map((made, i) => {
    const p = taken[i];
    const offline = outages.some((o) => o.from <= made.at && made.at < o.to) ? ' while the network was down' : '';
    if (p === undefined) return `  ${f.device.label}: "${made.name}" (${made.channel} input ${made.index}) pressed at ${clock(made.at)}${offline}; never arrived`;
    const start = p.body.start;
    const tc = start ? `, timecode ${start.smpte_timecode} at ${start.rate.playback.join('/')}` : '';
    return `  ${f.device.label}: "${made.name}" (${made.channel} input ${made.index}) pressed at ${clock(made.at)}${offline}; arrived at ${clock(p.t - origin)} with offset ${p.body.offset} s${tc}`;
  });
}

function clipCheck(f) {
  const problems = [];
  for (const clip of f.device.clips) {
    const complete = f.assets.filter((a) => a.name === clip.name && a.complete);
    if (complete.length === 0) problems.push(`${clip.name} not stored`);
    else if (complete.length > 1) problems.push(`${clip.name} stored ${complete.length} times`);
    else if (!sameBytes(clip, complete[0])) problems.push(`${clip.name} differs from the file`);
  }
  const strays = f.assets.filter((a) => a.complete && !f.device.clips.some((c) => c.name === a.name));
  for (const a of strays) problems.push(`${a.name} stored but never written`);
  return problems;
}

function queueCheck(q) {
  if (!q) return ['`c2c-agent queue --json` gave no answer'];
  const sum = (state) => Object.values(q.byKind ?? {}).reduce((n, k) => n + (k[state]?.items ?? 0), 0);
  const problems = [];
  if (sum('pending') > 0) problems.push(`${sum('pending')} pending`);
  if (sum('dead') > 0) problems.push(`${sum('dead')} dead-lettered`);
  if (q.quarantined > 0) problems.push(`${q.quarantined} quarantined segments`);
  return problems;
}

/** The checks, one per invariant, each over every device. */
export function checks(facts, { storyMs, origin = 0, slackMs = 2_000 }) {
  const each = (name, problemsOf, okDetail) => {
    const problems = facts.flatMap((f) => problemsOf(f).map((p) => `${f.device.label}: ${p}`));
    return { name, ok: problems.length === 0, detail: problems.length === 0 ? okDetail : problems.join('; ') };
  };
  const hb = facts.reduce((n, f) => n + f.referee.heartbeats, 0);
  const clips = facts.reduce((n, f) => n + f.device.clips.length, 0);
  const clipBytes = facts.reduce((n, f) => n + f.device.clips.reduce((m, c) => m + c.bytes, 0), 0);
  return [
    each(
      'referee',
      (f) => {
        const r = f.referee;
        const bad = [r.tooSoon && `${r.tooSoon} too soon`, r.tooLate && `${r.tooLate} too late`, r.missingVersion && `${r.missingVersion} without x-client-version`];
        if (r.successfulHeartbeats < 2) bad.push(`only ${r.successfulHeartbeats} accepted heartbeats`);
        return bad.filter(Boolean);
      },
      `0 violations in ${hb} heartbeats (none under 60 s apart, no gap over 300 s while the service answered, x-client-version on every call)`,
    ),
    each('back online at the end', (f) => (f.record?.status === 'online' ? [] : [`the service shows it ${f.record?.status ?? 'unknown'}`]), 'the service shows every camera online'),
    each('queue drained', (f) => queueCheck(f.queue), 'no item pending, none dead-lettered, nothing quarantined'),
    each('clips stored byte-identical', clipCheck, `${clips} clips, ${bytes(clipBytes)}: each stored once, every part's sha256 equal to the file's slice`),
    each('channels as plugged', (f) => (channelsMatch(f.record, f.device) ? [] : [`the service lists ${(f.record?.channels ?? []).map((c) => c.device_model_id).join(', ') || 'none'}, plugged: ${[...f.device.plugged].join(', ') || 'none'}`]), 'the service lists exactly the plugged channels'),
    each('presses arrived once', (f) => pressCheck(f, origin, slackMs), `${facts.reduce((n, f) => n + (f.device.presses ?? []).length, 0)} "Good take" press(es): each at the service once, on its input, made when pressed by its offset`),
    each('clean stop', (f) => (f.exitCode === 0 ? [] : [`the agent exited with ${f.exitCode} on SIGTERM`]), 'every agent exited 0 on SIGTERM'),
  ].concat(storyMs > 0 ? [] : [{ name: 'story', ok: false, detail: 'stopped before it began' }]);
}

/** The closing report's lines, and whether every invariant held. */
export function render(facts, monitor, { storyMs, drained, wallMs, stoppedEarly }) {
  const lines = ['', `── report: ${duration(storyMs)} of agent time in ${(wallMs / 1000).toFixed(1)} s ──`, '', 'heartbeat spacing (every camera, from the service\'s side):'];
  lines.push(...histogram(spacings(facts.map((f) => f.referee.heartbeatTimes))));
  lines.push('', 'states (the agents\' own view):');
  lines.push(...timeline({ devices: facts.map((f) => ({ label: f.device.label, states: monitor.live.get(f.device.label).states })), outages: monitor.outages, endMs: storyMs }));
  lines.push('', 'online:');
  const down = monitor.outages.reduce((n, o) => n + (o.to - o.from), 0);
  for (const f of facts) {
    const share = onlineShare(monitor.live.get(f.device.label).states, storyMs);
    const why = [down > 0 && `the network was down for ${duration(down)}`, monitor.revoked.has(f.device.label) && 'its authorization was revoked until it was paired again'].filter(Boolean);
    lines.push(`  ${f.device.label} (${f.device.name}): ${(share * 100).toFixed(1)} % of the story online${why.length > 0 ? ` (${why.join('; ')})` : ''}`);
  }
  lines.push('', 'referee:');
  for (const f of facts) lines.push(`  ${refereeLine(f.device.label, f.referee)}`);
  lines.push('', 'uploads:');
  for (const f of facts) {
    const wire = f.assets.reduce((n, a) => n + a.bytesReceived, 0);
    lines.push(`  ${f.device.label}: ${f.device.clips.length} clips, ${f.assets.length} assets created, ${bytes(wire)} stored`);
  }
  lines.push('', 'presses (real-time logging, from the service\'s side):');
  for (const f of facts) lines.push(...pressLines(f, monitor.origin, monitor.outages));
  // A press keeps its moment to the agent ms; the story's own clock reads it from the real clock at the time scale.
  const c = checks(facts, { storyMs, origin: monitor.origin, slackMs: Math.max(2_000, monitor.timeScale * 500) });
  if (stoppedEarly) c.push({ name: 'story played to the end', ok: false, detail: `${stoppedEarly} at ${clock(storyMs)}` });
  else if (!drained) c.push({ name: 'settled after the story', ok: false, detail: 'the agents had not finished their work within the drain limit' });
  const v = verdict(c);
  lines.push('', 'invariants:', ...v.lines);
  return { ok: v.ok, lines };
}
