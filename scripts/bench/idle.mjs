// The idle daemon against a bare `node -e "setInterval(()=>{},1000)"` started
// at the same moment on the same machine (absolute figures mean little across
// a Pi Zero and a laptop; ratios travel): RSS after 10 heartbeats, RSS over
// 24 agent hours and its growth, a leak check, and CPU per agent hour.
//
// What is measured, and why this is an honest comparison:
// - RSS: VmRSS of the agent right after its 10th heartbeat at the referee,
//   vs the bare process's VmRSS at the same moment. The agents measured at
//   their 10th heartbeat run at --time-scale 60 (TEN_BEATS_SCALE): their 10th
//   comes 10 to 50 s after start, a camera's 10 to 50 minutes after its
//   start. V8 returns the memory of the start-up (young generation grown to
//   its 1 MiB semi-spaces, the start's garbage) in its memory reducer's
//   first pass, about 8 s after start in real time, whatever the agent's
//   clock says; at --time-scale 600 the 10th heartbeat came some 3 s after
//   start, before that pass, and measured a start-up no camera still has at
//   its 10th heartbeat. That figure stays, as a row for comparison (the
//   24-hour agent, at 600). Both run
//   with the systemd unit's environment (NODE_OPTIONS, glibc's malloc
//   tuning), as a camera runs the agent (beside
//   them, an agent and a bare process without those flags, for comparison). Over
//   HTTPS, as the service is (the fake's CA through NODE_EXTRA_CA_CERTS, the
//   store a unit talking to a public certificate uses); beside it the same
//   figure for an agent over plain HTTP and one trusting the CA with caFile,
//   started with it against fakes of their own. Then both
//   are sampled every second for 24 agent hours (144 s at scale 600): "after
//   24 agent hours" is the median of the last third of the samples, growth is
//   that minus the median of the first third (medians: one GC does not decide).
// - Leak or not: RSS growth alone cannot tell a leak from garbage V8 has not
//   collected yet. A separate DIAGNOSTIC agent (same bundle, same scale, but
//   started with --expose-gc and a --import preload: benchmark-only flags,
//   never in its figures above) forces a full GC every 2 s and records
//   heapUsed after it: the live heap. Live heap flat while RSS grows = no
//   leak, memory not yet returned; live heap growing = something is kept.
// - Under systemd every STATUS= and WATCHDOG=1 is a systemd-notify child:
//   the scale-N agent talks to a stand-in notify socket, so its figure
//   includes STATUS= runs; an agent at scale 1 with a 1 s watchdog prices one
//   ping, added at the unit's rate (3600 / (WatchdogSec / 2) pings an hour).
// - CPU per agent-hour: an agent at --time-scale N does N agent-hours of
//   heartbeat work per real hour, but its fixed idle cost (timers, GC) is
//   paid per REAL second and is divided by N. So two agents run at once:
//   one at scale N (heartbeat work, a window of many heartbeats) and one at
//   scale 1 (idle cost between heartbeats; a heartbeat of its own in the
//   window is priced at the per-heartbeat cost both share and taken out). The
//   estimate for a real camera is idle(scale 1) per real hour + per-heartbeat
//   work x heartbeats per hour (+ the watchdog's pings). The bare process's
//   CPU per real hour over the same window is the baseline (a real hour IS an
//   agent-hour at scale 1). Start-up work (JIT, V8's memory reducer, which
//   runs GCs for some 20 s after allocation calms down) must not count as
//   idle: the CPU window opens --settle s after launch.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { eventsClient, freePort, webPage } from './clients.mjs';
import { agent, bareNode, codeCacheDir, end as endChild, cpuSeconds, cpuWithChildren, fakeCloud, killAll, notifySocket, referee, root, rssKiB, runtimeDirOf, sleep, tmp, waitHeartbeats, HZ } from './procs.mjs';
import { MiB, fmt, growthOfThirds, lastThird, row, signed } from './figures.mjs';
import { unitEnvironment } from '../bench-upload-helpers.mjs';

export const RSS_RATIO_GOAL = 1.3;
/** The time scale of the agents measured at their 10th heartbeat (see above): past V8's first memory-reducer pass, as a camera is. */
export const TEN_BEATS_SCALE = 60;
/** Real seconds after launch before which those agents are not read: V8's first memory-reducer pass comes about 8 s after start. */
export const REDUCER_PASS_S = 12;
export const GROWTH_GOAL_MIB = 2;
/** What a UI attached to the local API may cost the idle daemon. */
export const API_CLIENT_GOAL_MIB = 1;
/** What the web page may cost an idle daemon with webListen set and no page open (issue 32). */
export const WEB_PAGE_GOAL_MIB = 1.5;
// Live-heap growth below this over the window is noise (a cache entry, a JIT tier), not a leak.
const LEAK_NOISE_MIB = 0.5;

function watchdogSec() {
  const sec = Number.parseInt(/^WatchdogSec=(\d+)/m.exec(readFileSync(path.join(root, 'systemd/c2c-agent.service'), 'utf8'))?.[1] ?? '', 10);
  if (!(sec > 0)) throw new Error('bench: no WatchdogSec= in systemd/c2c-agent.service');
  return sec;
}

const GC_PROBE = `
import { appendFileSync } from 'node:fs';
const out = process.env.BENCH_GC_OUT;
setInterval(() => {
  globalThis.gc();
  const m = process.memoryUsage();
  appendFileSync(out, JSON.stringify({ heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers, rss: m.rss }) + '\\n');
}, 2000).unref();
`;

/** { rows, notes } for the idle part; `hours` agent hours of RSS sampling at `scale`. */
export async function idle({ scale = 600, hours = 24, settleS = 30 } = {}) {
  const WATCHDOG_SEC = watchdogSec();
  const probe = path.join(tmp, 'gc-probe.mjs');
  const gcOut = path.join(tmp, 'gc-probe.jsonl');
  writeFileSync(probe, GC_PROBE);
  writeFileSync(gcOut, '');

  const [fast, ten, slow, plain, nFast, nSd] = await Promise.all([fakeCloud(scale, 2), fakeCloud(TEN_BEATS_SCALE, 8), fakeCloud(1, 2), fakeCloud(TEN_BEATS_SCALE, 1, { plainHttp: true }), notifySocket('fast'), notifySocket('sd')]);
  // As the unit runs it: its node flags for every agent and for the bare baseline.
  const unitEnv = unitEnvironment(root);
  const bare = bareNode(unitEnv);
  // And its cache directory (CacheDirectory=) with the code cache a first start wrote, as on a camera from then on.
  const unit = { ...unitEnv, CACHE_DIRECTORY: await codeCacheDir(ten, TEN_BEATS_SCALE, 7, unitEnv) };
  const launchedAt = Date.now();
  // As under systemd (STATUS= lines on every state change), no watchdog.
  const aTen = agent(ten, TEN_BEATS_SCALE, 'ten', { env: { ...unit, NOTIFY_SOCKET: nFast.sock } });
  // The same at --time-scale `scale`: its 10th heartbeat before V8's first memory-reducer pass (a row for comparison), then the 24 agent hours and the CPU figures.
  const aFast = agent(fast, scale, 'fast', { env: { ...unit, NOTIFY_SOCKET: nFast.sock } });
  const aGc = agent(fast, scale, 'gc-diagnostic', { deviceIndex: 1, nodeArgs: ['--expose-gc', '--import', probe], env: { ...unit, BENCH_GC_OUT: gcOut } });
  const aSlow = agent(slow, 1, 'slow', { env: unit });
  // The same daemon over plain HTTP on loopback, and trusting the CA with caFile: what TLS and caFile cost.
  // Under the same notify socket as the first: STATUS= lines run systemd-notify children, and differ in nothing else.
  const aPlain = agent(plain, TEN_BEATS_SCALE, 'plain-http', { env: { ...unit, NOTIFY_SOCKET: nFast.sock } });
  const aCaFile = agent(ten, TEN_BEATS_SCALE, 'ca-file', { deviceIndex: 3, trust: 'caFile', env: { ...unit, NOTIFY_SOCKET: nFast.sock } });
  // Without the unit's node flags (node's defaults), beside a bare process without them: what the flags do.
  const bareDefault = bareNode();
  const aDefault = agent(ten, TEN_BEATS_SCALE, 'no-flags', { deviceIndex: 4, env: { NOTIFY_SOCKET: nFast.sock } });
  // Scale 1 with a 1 s watchdog: the price of one WATCHDOG=1 ping.
  const aSd = agent(slow, 1, 'sd', { env: { ...unit, NOTIFY_SOCKET: nSd.sock, WATCHDOG_USEC: '1000000' }, deviceIndex: 1 });
  // The same as aFast, with a UI attached to its local API: one events reader for the whole run.
  const aApi = agent(ten, TEN_BEATS_SCALE, 'api-client', { deviceIndex: 2, env: { ...unit, NOTIFY_SOCKET: nFast.sock } });
  const reader = await eventsClient(path.join(runtimeDirOf('api-client'), 'api.sock'));
  // The web page on (webListen), nobody on it; and on with one phone signed in and reading its live updates.
  const [webPort, webOpenPort] = [await freePort(), await freePort()];
  const aWeb = agent(ten, TEN_BEATS_SCALE, 'web-on', { deviceIndex: 5, env: { ...unit, NOTIFY_SOCKET: nFast.sock, C2C_WEB_LISTEN: `127.0.0.1:${webPort}` } });
  const aWebOpen = agent(ten, TEN_BEATS_SCALE, 'web-open', { deviceIndex: 6, env: { ...unit, NOTIFY_SOCKET: nFast.sock, C2C_WEB_LISTEN: `127.0.0.1:${webOpenPort}` } });
  const phone = await webPage(webOpenPort, path.join(tmp, 'web-open', 'state'));

  await waitHeartbeats(slow, 1, 20_000);
  // Each read at its own 10th heartbeat (a wait of 0.1 s past the referee's count at most), the
  // agents at TEN_BEATS_SCALE also not before REDUCER_PASS_S; beside each, the bare process it is compared with.
  const tenth = async (cloud, deviceIndex, pid, timeoutMs, { notBeforeS = 0, base = bare } = {}) => {
    const r = await waitHeartbeats(cloud, 10, timeoutMs, deviceIndex);
    await sleep(Math.max(0, notBeforeS * 1000 - (Date.now() - launchedAt)));
    return { kib: rssKiB(pid), bare: rssKiB(base.pid), s: (Date.now() - launchedAt) / 1000, heartbeats: r.heartbeats };
  };
  const fastAt10 = await tenth(fast, 0, aFast.pid, (10 * 300 * 1000) / scale + 20_000);
  const gcSkip = readFileSync(gcOut, 'utf8').split('\n').filter(Boolean).length;

  // The 24 agent hours from the scale-`scale` agent's 10th heartbeat, sampled every real second
  // while the others reach their 10th; the CPU window opens once start-up has settled.
  const windowMs = (hours * 3600 * 1000) / scale;
  const samples = { agent: [], bare: [], gcAgent: [] };
  const t0 = Date.now();
  const hb0 = (await referee(fast)).heartbeats;
  let before;
  const snapshot = async () => ({ fast: cpuWithChildren(aFast.pid), slow: cpuSeconds(aSlow.pid), sd: cpuWithChildren(aSd.pid), pings: nSd.counts.watchdog, bare: cpuSeconds(bare.pid), fastRef: await referee(fast), slowRef: await referee(slow), sdRef: await referee(slow, 1), at: process.hrtime.bigint() });
  const sampling = (async () => {
    for (let i = 0; Date.now() - t0 < windowMs; i++) {
      samples.agent.push(rssKiB(aFast.pid) / 1024);
      samples.bare.push(rssKiB(bare.pid) / 1024);
      samples.gcAgent.push(rssKiB(aGc.pid) / 1024);
      if (before === undefined && Date.now() - launchedAt >= settleS * 1000) before = await snapshot();
      await sleep(Math.max(0, t0 + (i + 1) * 1000 - Date.now()));
    }
  })();

  const tenBeats = (10 * 300 * 1000) / TEN_BEATS_SCALE + 20_000;
  const settled = { notBeforeS: REDUCER_PASS_S };
  const [main, plainAt, caAt, noFlagsAt, webAt, webOpenAt, apiAt] = await Promise.all([
    tenth(ten, 0, aTen.pid, tenBeats, settled), tenth(plain, 0, aPlain.pid, tenBeats, settled), tenth(ten, 3, aCaFile.pid, tenBeats, settled),
    tenth(ten, 4, aDefault.pid, tenBeats, { ...settled, base: bareDefault }),
    tenth(ten, 5, aWeb.pid, tenBeats, settled), tenth(ten, 6, aWebOpen.pid, tenBeats, settled), tenth(ten, 2, aApi.pid, tenBeats, settled),
  ]);
  const at10 = { agent: main.kib, bare: main.bare, fast: fastAt10.kib, bareFast: fastAt10.bare, plain: plainAt.kib, barePlain: plainAt.bare, caFile: caAt.kib, bareCaFile: caAt.bare, noFlags: noFlagsAt.kib, bareNoFlags: noFlagsAt.bare, web: webAt.kib, webOpen: webOpenAt.kib, api: apiAt.kib };
  phone.close();
  reader.close();
  // Only the HTTPS agents with the unit's flags at `scale` run on: the 24-hour window and the CPU figures are theirs.
  for (const c of [aTen, aPlain, aCaFile, aDefault, bareDefault, aWeb, aWebOpen, aApi]) endChild(c);
  await sampling;
  before ??= await snapshot();
  await sleep(Math.max(0, 1000 - Number(process.hrtime.bigint() - before.at) / 1e6));
  const after = await snapshot();
  const hbWindow = (await referee(fast)).heartbeats - hb0;
  const gcSamples = readFileSync(gcOut, 'utf8').split('\n').filter(Boolean).slice(gcSkip).map((l) => JSON.parse(l));
  killAll();

  const realS = Number(after.at - before.at) / 1e9;
  const hb = after.fastRef.heartbeats - before.fastRef.heartbeats;
  const agentHours = (realS * scale) / 3600;
  const fastCpu = after.fast - before.fast;
  // Both agents pay the idle rate per real second and the same CPU per
  // heartbeat; the scale-1 agent may still send one in the window (the
  // spacing after start-up), so the two unknowns come from the two agents:
  //   fast = idle x realS + perHeartbeat x hb,  slow = idle x realS + perHeartbeat x slowHb
  const slowCpu = after.slow - before.slow;
  const slowHb = after.slowRef.heartbeats - before.slowRef.heartbeats;
  const perHeartbeat = hb > slowHb ? Math.max(0, fastCpu - slowCpu) / (hb - slowHb) : NaN;
  const idleRate = Math.max(0, slowCpu - (slowHb > 0 ? perHeartbeat * slowHb : 0)) / realS; // CPU s per real s, between heartbeats
  const hbPerHour = hb / agentHours;
  const estimate = idleRate * 3600 + perHeartbeat * hbPerHour;
  const barePerHour = ((after.bare - before.bare) / realS) * 3600;
  const pings = after.pings - before.pings;
  const sdHb = after.sdRef.heartbeats - before.sdRef.heartbeats;
  const perPing = pings > 0 ? Math.max(0, after.sd - before.sd - idleRate * realS - (sdHb > 0 ? perHeartbeat * sdHb : 0)) / pings : NaN;
  const underSystemd = estimate + perPing * (3600 / (WATCHDOG_SEC / 2));

  const end = { agent: lastThird(samples.agent), bare: lastThird(samples.bare) };
  const growth = { agent: growthOfThirds(samples.agent), bare: growthOfThirds(samples.bare), gcAgent: growthOfThirds(samples.gcAgent) };
  const live = (k) => growthOfThirds(gcSamples.map((s) => s[k] / MiB));
  const liveGrowth = live('heapUsed');
  const liveEnd = lastThird(gcSamples.map((s) => s.heapUsed / MiB));
  const span = `${hours} agent hours`;
  const rows = [
    row("idle RSS after 10 heartbeats (HTTPS, the unit's node flags)", { agent: `${fmt(at10.agent / 1024, 1)} MiB`, baseline: `${fmt(at10.bare / 1024, 1)} MiB bare node`, ratio: at10.agent / at10.bare, goal: `<= ${RSS_RATIO_GOAL}x`, pass: at10.agent / at10.bare <= RSS_RATIO_GOAL }),
    row(`idle RSS after 10 heartbeats at --time-scale ${scale} (${fmt(fastAt10.s, 1)} s after start: the start-up's memory not yet returned)`, { agent: `${fmt(at10.fast / 1024, 1)} MiB`, baseline: `${fmt(at10.bareFast / 1024, 1)} MiB bare node`, ratio: at10.fast / at10.bareFast, goal: 'none (for comparison)' }),
    row('idle RSS after 10 heartbeats, plain HTTP (loopback)', { agent: `${fmt(at10.plain / 1024, 1)} MiB`, baseline: `${fmt(at10.barePlain / 1024, 1)} MiB bare node`, ratio: at10.plain / at10.barePlain, goal: 'none (for comparison)' }),
    row('idle RSS after 10 heartbeats, HTTPS trusting caFile', { agent: `${fmt(at10.caFile / 1024, 1)} MiB`, baseline: `${fmt(at10.bareCaFile / 1024, 1)} MiB bare node`, ratio: at10.caFile / at10.bareCaFile, goal: 'none (for comparison)' }),
    row("idle RSS after 10 heartbeats (HTTPS), without the unit's environment (node flags, malloc tuning)", { agent: `${fmt(at10.noFlags / 1024, 1)} MiB`, baseline: `${fmt(at10.bareNoFlags / 1024, 1)} MiB bare node without them`, ratio: at10.noFlags / at10.bareNoFlags, goal: 'none (for comparison)' }),
    row('idle RSS after 10 heartbeats (HTTPS), local API with an events reader attached', { agent: `${fmt(at10.api / 1024, 1)} MiB`, baseline: `${fmt(at10.agent / 1024, 1)} MiB the HTTPS row (socket served, no client)`, ratio: `${signed((at10.api - at10.agent) / 1024)} MiB`, goal: `<= +${API_CLIENT_GOAL_MIB} MiB`, pass: (at10.api - at10.agent) / 1024 <= API_CLIENT_GOAL_MIB }),
    row('idle RSS after 10 heartbeats (HTTPS), web page on, no page open', { agent: `${fmt(at10.web / 1024, 1)} MiB`, baseline: `${fmt(at10.agent / 1024, 1)} MiB the HTTPS row (webListen off)`, ratio: `${signed((at10.web - at10.agent) / 1024)} MiB`, goal: `<= +${WEB_PAGE_GOAL_MIB} MiB`, pass: (at10.web - at10.agent) / 1024 <= WEB_PAGE_GOAL_MIB }),
    row('idle RSS after 10 heartbeats (HTTPS), web page on, one page open', { agent: `${fmt(at10.webOpen / 1024, 1)} MiB`, baseline: `${fmt(at10.agent / 1024, 1)} MiB the HTTPS row (webListen off)`, ratio: `${signed((at10.webOpen - at10.agent) / 1024)} MiB`, goal: 'none (for comparison)' }),
    row(`idle RSS after ${span}`, { agent: `${fmt(end.agent, 1)} MiB`, baseline: `${fmt(end.bare, 1)} MiB bare node`, ratio: end.agent / end.bare, goal: `<= ${RSS_RATIO_GOAL}x`, pass: end.agent / end.bare <= RSS_RATIO_GOAL }),
    row(`RSS growth over ${span}`, { agent: `${signed(growth.agent)} MiB`, baseline: `${signed(growth.bare)} MiB bare node`, ratio: `${signed(growth.agent - growth.bare)} MiB`, goal: `< ${GROWTH_GOAL_MIB} MiB`, pass: growth.agent < GROWTH_GOAL_MIB }),
    row('CPU s per agent hour (camera, scale 1, with watchdog pings)', { agent: `${fmt(underSystemd, 3)} s`, baseline: `${fmt(barePerHour, 3)} s bare node per hour`, ratio: underSystemd / barePerHour, goal: 'none set' }),
  ];
  const verdict = !(gcSamples.length >= 3)
    ? `leak check: n/a (the diagnostic agent recorded ${gcSamples.length} forced-GC samples)`
    : liveGrowth < LEAK_NOISE_MIB
      ? `no leak: the live heap after a forced GC stays flat (${signed(liveGrowth)} MiB, ${fmt(liveEnd, 1)} MiB at the end), so RSS growth is garbage not yet collected or memory V8 and malloc keep, not objects kept alive`
      : `live heap grows ${signed(liveGrowth)} MiB (to ${fmt(liveEnd, 1)} MiB) even right after a forced GC: objects are kept alive (a leak, or a cache still filling)`;
  const notes = [
    `Web page: two more agents like the first with webListen set, measured at their own 10th heartbeat: one that nobody opened (its page's code never loaded), one with a phone signed in from its start and reading the page's live updates (${phone.seen.lines} lines). webListen off is the first row.`,
    `Local API: an agent like the first, with one GET /v1/events reader attached from its start (it read ${reader.seen.lines} lines, ${reader.seen.heartbeats} of them heartbeats), measured at its own 10th heartbeat.`,
    `10 heartbeats: the agents at --time-scale ${TEN_BEATS_SCALE}, each read at its own 10th heartbeat and not before ${REDUCER_PASS_S} s after start (the HTTPS one ${fmt(main.s, 1)} s after start, past V8's first memory-reducer pass some 8 s after start; a camera's 10th heartbeat comes 10 to 50 minutes after its start); the --time-scale ${scale} agent read at its own 10th, ${fmt(fastAt10.s, 1)} s after start.`,
    `RSS: VmRSS every second for ${fmt(windowMs / 1000, 0)} s real (${span} at --time-scale ${scale}, ${hbWindow} heartbeats), from the --time-scale ${scale} agent's 10th heartbeat; growth = median of the last third - median of the first third (its ratio column is the difference agent - bare node: a ratio of two growths near 0 means nothing).`,
    `${verdict}. [diagnostic agent with --expose-gc and a preload, benchmark only: its RSS grew ${signed(growth.gcAgent)} MiB; external ${signed(live('external'))} MiB, arrayBuffers ${signed(live('arrayBuffers'))} MiB; ${gcSamples.length} samples]`,
    `CPU: window ${fmt(realS, 1)} s real from ${settleS} s after launch = ${fmt(agentHours, 2)} agent hours at scale ${scale}: ${hb} heartbeats (${fmt(hbPerHour, 1)}/agent hour), ` +
      `${fmt(perHeartbeat * 1000, 1)} ms CPU each; idle at scale 1 ${fmt(idleRate * 3600, 3)} s per hour (its ${slowHb} heartbeat(s) in the window priced at the scale-${scale} agent's cost and taken out); ` +
      `without the watchdog ${fmt(estimate, 3)} s; one WATCHDOG=1 ping every ${WATCHDOG_SEC / 2} s costs ${fmt(perPing * 1000, 1)} ms with its systemd-notify child (${pings} pings, tick ${1000 / HZ} ms); ` +
      `at scale ${scale} itself ${fmt(fastCpu / agentHours, 3)} s per agent hour; referee: tooSoon ${after.fastRef.tooSoon}, tooLate ${after.fastRef.tooLate}, missingVersion ${after.fastRef.missingVersion}.`,
  ];
  return { rows, notes };
}
