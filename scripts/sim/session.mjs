// One run of the simulator, start to finish: the fake cloud and the cameras
// set up, each camera paired and its agent started, the story played, the
// agents given time to finish their work, stopped, and judged. Returns the
// exit code (0 only when every invariant held).
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { seededRandom } from './options.mjs';
import { SimCloud } from './cloud.mjs';
import { SimDevice } from './device.mjs';
import { Monitor } from './monitor.mjs';
import { Progress } from './progress.mjs';
import { Story, DRAIN_LIMIT_MS, drain } from './story.mjs';
import { gather, render, settled } from './judge.mjs';

/** How often (real ms) the service's side is read and the display redrawn. */
const POLL_MS = 250;
/** Pairing codes are approved after this many agent seconds; on a terminal, long enough to see the screen (codes live 120 s). */
const AUTO_APPROVE_S = 10;
const AUTO_APPROVE_TTY_MAX_S = 90;
const PAIRING_SCREEN_REAL_S = 3;

export async function runSession(o, { bundles }) {
  const wallStart = performance.now();
  const progress = new Progress({ plain: o.plain, totalMs: o.minutes * 60_000 });
  const say = (text) => progress.line(undefined, text);
  const work = mkdtempSync(path.join(tmpdir(), 'c2c-sim-'));
  const autoApproveSeconds = progress.tty ? Math.min(AUTO_APPROVE_TTY_MAX_S, Math.max(AUTO_APPROVE_S, Math.round(PAIRING_SCREEN_REAL_S * o.timeScale))) : AUTO_APPROVE_S;
  const cloud = new SimCloud({ bundle: bundles.fakeCloud, timeScale: o.timeScale, autoApproveSeconds, plainHttp: o.plainHttp === true, caDir: work });
  const webPorts = o.web ? await freePorts(o.devices) : [];
  const devices = Array.from({ length: o.devices }, (_, index) => new SimDevice({ index, work, bundle: bundles.agent, cloud, timeScale: o.timeScale, webPort: webPorts[index] }));
  const monitor = new Monitor({ cloud, devices, timeScale: o.timeScale });
  const cancel = cancellation();
  const s = { o, progress, say, cloud, devices, monitor, cancel: cancel.signal };
  try {
    await cloud.start();
    say(`c2c-agent simulator: ${o.devices} camera${o.devices === 1 ? '' : 's'}, ${o.minutes} agent minutes at --time-scale ${o.timeScale} (${((o.minutes * 60) / o.timeScale).toFixed(0)} s), faults ${o.faults}, seed ${o.seed}`);
    // Off a terminal the fake approves before anyone could open a link: only on one is there time to press Approve first.
    const approveHint = progress.tty ? `; to approve one sooner, open the link \`pair\` prints (${cloud.pairUrl}) and press Approve` : ` (its approval page: ${cloud.pairUrl})`;
    say(`fake cloud at ${cloud.url} (admin ${cloud.adminUrl}): it approves pairing codes after ${autoApproveSeconds} agent s${approveHint}`);
    say(`work dir ${work}: each camera's state, runtime and media dirs, hardware tree and agent.log (removed after a clean run unless --keep)`);
    await pairAll(s);
    await startAgents(s);
    if (o.web) await showWebPages(s);
    const poller = startPolling(s);
    const { storyMs, stoppedEarly } = await play(s);
    const drained = stoppedEarly ? false : await settle(s, storyMs);
    await poller.stop();
    // From here on only plain lines: nothing redraws the block or moves the cursor over the report.
    progress.close();
    const exitCodes = await Promise.all(devices.map((d) => d.stop()));
    const facts = await gather({ cloud, devices, exitCodes });
    const report = render(facts, monitor, { storyMs, drained, stoppedEarly, wallMs: performance.now() - wallStart });
    // Said before the report, so that its verdict is the last line on the screen.
    if (o.keep || !report.ok) say(`kept ${work}: each camera's agent.log, state, runtime and media dirs (cam1/, cam2/, ...)`);
    else rmSync(work, { recursive: true, force: true });
    process.stdout.write(`${report.lines.join('\n')}\n`);
    return report.ok ? 0 : 1;
  } catch (err) {
    progress.close();
    say(`kept ${work} for a look (each camera's agent.log)`);
    process.stderr.write(`simulate: ${err.message}\n`);
    // The verdict, last: the run could not be judged.
    process.stdout.write(`\nFAILED: ${err.message}\n`);
    return 1;
  } finally {
    cancel.dispose();
    for (const d of devices) d.kill();
    await cloud.close();
  }
}

/** The signals that end the story, and the exit code a second one quits with at once (128 + its number). */
const ENDING_SIGNALS = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 };

/**
 * Ctrl-C, SIGTERM or SIGHUP (the terminal closed) ends the story: the agents
 * are stopped and the cloud closed as after a full story, and the report
 * still comes; a second one quits at once (children.mjs kills what is left).
 */
function cancellation() {
  const ac = new AbortController();
  const onSignal = (sig) => {
    if (ac.signal.aborted) process.exit(ENDING_SIGNALS[sig]);
    ac.abort(new Error(`stopped by ${sig}`));
  };
  // A reader that went away (`| head`, a closed terminal): end the story as if stopped, and write nothing more there.
  const onOutputError = () => ac.abort(new Error('stopped: output closed'));
  for (const sig of Object.keys(ENDING_SIGNALS)) process.on(sig, onSignal);
  process.stdout.on('error', onOutputError);
  process.stderr.on('error', onOutputError);
  return {
    signal: ac.signal,
    dispose() {
      for (const sig of Object.keys(ENDING_SIGNALS)) process.off(sig, onSignal);
    },
  };
}

/** `c2c-agent pair` for one camera; once paired, `check --json` names its device. The exit code. */
async function pair(s, d, inherit) {
  const code = await d.pair({ inherit, onLine: (l) => s.progress.line(s.monitor.origin ? s.monitor.now() : undefined, `${d.label} pair | ${l}`) });
  if (code === 0) {
    await d.check();
    s.monitor.know(d);
  }
  return code;
}

/** Every camera paired, the sensor already plugged in; on a terminal the first shows its pairing screen. */
async function pairAll(s) {
  for (const d of s.devices) {
    d.prepare();
    d.plug('sensor');
  }
  s.say('pairing: `c2c-agent pair` on each camera (device-code flow; the sensor channel is plugged in already)');
  const codes = [];
  if (s.progress.tty) codes.push(await pair(s, s.devices[0], true));
  codes.push(...(await Promise.all(s.devices.slice(codes.length).map((d) => pair(s, d, false)))));
  const unpaired = s.devices.filter((d, i) => codes[i] !== 0 || !d.deviceId);
  if (unpaired.length > 0) throw new Error(`pairing failed for ${unpaired.map((d) => d.label).join(', ')} (pair exited ${codes.join(', ')})`);
  s.say(`paired: ${s.devices.map((d) => `${d.label} = ${d.name} (${d.deviceId})`).join(', ')}`);
}

async function startAgents(s) {
  await s.monitor.begin();
  for (const d of s.devices) {
    const pid = d.start((t) => {
      s.monitor.transition(d, t);
      s.progress.line(s.monitor.now(), `${d.label} state ${t.from} -> ${t.to}${t.reason ? `: ${t.reason}` : ''}`);
    });
    s.progress.line(0, `${d.label} agent pid ${pid}: \`c2c-agent run\` (state ${d.dirs.state}, media ${d.dirs.media}, hardware under ${d.dirs.host})`);
  }
}

/**
 * --web: each camera's page and PIN, once its daemon serves it. The person
 * opens the address in a browser on this machine and watches the story
 * there: state, heartbeats, uploads with their progress, live.
 */
async function showWebPages(s) {
  for (const d of s.devices) {
    const page = await d.webPage();
    s.progress.line(s.monitor.now(), `${d.label} web page: ${page.url} PIN ${page.pin ?? `not made (${page.why})`}${s.o.forever ? '' : ' (add --forever to keep it after the story)'}`);
  }
}

/** `n` ports free on loopback now (each asked of the kernel, then let go). */
async function freePorts(n) {
  const ports = [];
  const servers = [];
  for (let i = 0; i < n; i++) {
    const srv = createServer();
    await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
    servers.push(srv);
    ports.push(srv.address().port);
  }
  await Promise.all(servers.map((srv) => new Promise((resolve) => srv.close(resolve))));
  return ports;
}

/** The story; with --forever the agents then run until Ctrl-C. A cancelled story (without --forever) is reported as stopped early. */
async function play(s) {
  const story = new Story({ options: s.o, cloud: s.cloud, devices: s.devices, monitor: s.monitor, progress: s.progress, random: seededRandom(s.o.seed), pairAgain: (d) => pair(s, d, false), signal: s.cancel });
  let stoppedEarly;
  try {
    await story.run();
    if (s.o.forever) {
      s.progress.line(s.monitor.now(), 'the story is over; the agents keep running (--forever): Ctrl-C for the report');
      await new Promise((resolve) => s.cancel.addEventListener('abort', resolve, { once: true }));
    }
  } catch (err) {
    if (!s.cancel.aborted) throw err;
    if (!s.o.forever) stoppedEarly = err.message;
  }
  const storyMs = s.monitor.now();
  if (stoppedEarly) s.progress.line(storyMs, stoppedEarly);
  return { storyMs, stoppedEarly };
}

/** The network back and faults gone; then until every camera settled or DRAIN_LIMIT_MS. True when settled. */
async function settle(s, storyMs) {
  await s.cloud.acceptConnections();
  s.monitor.networkUp();
  await s.cloud.clearFaults();
  s.progress.line(storyMs, `story over; waiting (at most ${DRAIN_LIMIT_MS / 60_000} agent minutes) for every camera to be online with an empty queue`);
  const drained = await drain(s.monitor, s.o.timeScale, async () => (await Promise.all(s.devices.map((d) => settled(s.cloud, s.monitor, d)))).every(Boolean));
  s.progress.line(s.monitor.now(), drained ? 'every camera settled: online, queue empty, clips stored, channels as plugged' : 'not settled within the limit');
  return drained;
}

/** The service's side read and the display redrawn every POLL_MS real ms; in plain mode a status line per camera every few agent minutes. */
function startPolling(s) {
  const statusEveryMs = Math.max(60_000, Math.round(s.o.minutes / 6) * 60_000);
  let nextStatus = statusEveryMs;
  let running = true;
  let busy = Promise.resolve();
  // Heartbeats come from the journal a poll late: plain lines wait until a poll has read past their time (progress.mjs).
  s.progress.hold();
  const tick = async () => {
    const mark = s.monitor.now();
    try {
      await s.monitor.poll((d, attempt) => {
        const hb = s.monitor.live.get(d.label).heartbeats;
        s.progress.heartbeat(attempt.t, d, attempt, hb.length >= 2 ? attempt.t - hb.at(-2).t : undefined);
      });
      const t = s.monitor.now();
      const plainStatus = t >= nextStatus;
      if (plainStatus) nextStatus += statusEveryMs;
      s.progress.update(t, s.monitor.network.up ? 'up' : 'DOWN', s.devices.map((d) => s.monitor.row(d)), { plainStatus });
    } finally {
      s.progress.release(mark);
    }
  };
  const timer = setInterval(() => {
    if (running) busy = busy.then(tick).catch(() => {});
  }, POLL_MS);
  return {
    async stop() {
      running = false;
      clearInterval(timer);
      await busy;
      await tick().catch(() => {});
      s.progress.release(Infinity);
    },
  };
}
