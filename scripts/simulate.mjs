#!/usr/bin/env node
// The simulator: a short story played by real agent processes from the
// bundle against the fake cloud, with no camera and no service account.
// The parts live in scripts/sim/: options, cloud, device, monitor, story,
// progress, judge and report. With --fleet it hands over to dist/fleet.mjs.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT_USAGE, USAGE, parseOptions, seededRandom } from './sim/options.mjs';
import { SimCloud } from './sim/cloud.mjs';
import { SimDevice } from './sim/device.mjs';
import { Monitor } from './sim/monitor.mjs';
import { Progress } from './sim/progress.mjs';
import { Story, DRAIN_LIMIT_MS, drain } from './sim/story.mjs';
import { gather, render, settled } from './sim/judge.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = (f) => path.join(root, 'dist', f);
const EXIT_UNAVAILABLE = 69;
const POLL_MS = 250;

const parsed = parseOptions(process.argv.slice(2));
if (parsed.kind === 'usage') {
  process.stderr.write(`simulate: ${parsed.message}; ${USAGE}\n`);
  process.exit(EXIT_USAGE);
}
if (parsed.kind === 'help') {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (parsed.kind === 'fleet') {
  if (!existsSync(dist('fleet.mjs'))) {
    process.stderr.write(`simulate: ${dist('fleet.mjs')} is missing; run \`npm run build\` (the fleet simulator is built with the bundle)\n`);
    process.exit(EXIT_UNAVAILABLE);
  }
  const child = spawn(process.execPath, [dist('fleet.mjs'), ...parsed.args], { stdio: 'inherit' });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  child.once('exit', (code, signal) => process.exit(code ?? (signal === 'SIGINT' ? 130 : 143)));
} else {
  for (const f of ['c2c-agent.mjs', 'fake-cloud.mjs']) {
    if (!existsSync(dist(f))) {
      process.stderr.write(`simulate: ${dist(f)} is missing; run \`npm run build\` first (npm run simulate does)\n`);
      process.exit(EXIT_UNAVAILABLE);
    }
  }
  process.exit(await story(parsed.options));
}

async function story(o) {
  const wallStart = performance.now();
  const progress = new Progress({ plain: o.plain, totalMs: o.minutes * 60_000 });
  const say = (text) => progress.line(undefined, text);
  const work = mkdtempSync(path.join(tmpdir(), 'c2c-sim-'));
  // On a terminal the pairing screen stays up a few real seconds before the fake approves it.
  const autoApproveSeconds = progress.tty ? Math.min(90, Math.max(10, Math.round(3 * o.timeScale))) : 10;
  const cloud = new SimCloud({ bundle: dist('fake-cloud.mjs'), timeScale: o.timeScale, autoApproveSeconds });
  const devices = [];
  const cancel = new AbortController();
  const onSignal = (sig) => {
    // A second Ctrl-C does not wait for the report (the agents are killed on exit).
    if (cancel.signal.aborted) process.exit(sig === 'SIGINT' ? 130 : 143);
    cancel.abort(new Error(`stopped by ${sig}`));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // A reader that went away (`| head`): end the story as if stopped, and write nothing more there.
  process.stdout.on('error', () => cancel.abort(new Error('stopped: stdout closed')));
  try {
    await cloud.start();
    say(`c2c-agent simulator: ${o.devices} camera${o.devices === 1 ? '' : 's'}, ${o.minutes} agent minutes at --time-scale ${o.timeScale} (${((o.minutes * 60) / o.timeScale).toFixed(0)} s), faults ${o.faults}, seed ${o.seed}`);
    say(`fake cloud at ${cloud.url} (admin ${cloud.adminUrl}), approving pairing codes after ${autoApproveSeconds} agent s`);
    say(`work dir ${work}: each camera's state, runtime and media dirs, hardware tree and agent.log (removed after a clean run unless --keep)`);
    for (let i = 0; i < o.devices; i++) {
      const d = new SimDevice({ index: i, work, bundle: dist('c2c-agent.mjs'), cloud, timeScale: o.timeScale });
      d.prepare();
      d.plug('sensor');
      devices.push(d);
    }
    const monitor = new Monitor({ cloud, devices, timeScale: o.timeScale });
    const pair = async (d, inherit) => {
      const code = await d.pair({ inherit, onLine: (l) => progress.line(monitor.origin ? monitor.now() : undefined, `${d.label} pair | ${l}`) });
      if (code === 0) {
        await d.check();
        monitor.know(d);
      }
      return code;
    };
    say(`pairing: \`c2c-agent pair\` on each camera (device-code flow; the sensor channel is plugged in already)`);
    const codes = [];
    if (progress.tty) codes.push(await pair(devices[0], true));
    codes.push(...(await Promise.all(devices.slice(codes.length).map((d) => pair(d, false)))));
    const unpaired = devices.filter((d, i) => codes[i] !== 0 || !d.deviceId);
    if (unpaired.length > 0) throw new Error(`pairing failed for ${unpaired.map((d) => d.label).join(', ')} (exit ${codes.join(', ')})`);
    say(`paired: ${devices.map((d) => `${d.label} = ${d.name} (${d.deviceId})`).join(', ')}`);

    await monitor.begin();
    for (const d of devices) {
      const pid = d.start((t) => {
        monitor.transition(d, t);
        progress.line(monitor.now(), `${d.label} state ${t.from} -> ${t.to}${t.reason ? `: ${t.reason}` : ''}`);
      });
      progress.line(0, `${d.label} agent pid ${pid}: \`c2c-agent run\` (state ${d.dirs.state}, media ${d.dirs.media}, hardware under ${d.dirs.host})`);
    }
    const poller = startPolling(monitor, progress, devices, o);
    const story = new Story({ options: o, cloud, devices, monitor, progress, random: seededRandom(o.seed), pairAgain: (d) => pair(d, false), signal: cancel.signal });

    let stoppedEarly;
    try {
      await story.run();
      if (o.forever) {
        progress.line(monitor.now(), 'the story is over; the agents keep running (--forever): Ctrl-C for the report');
        await new Promise((resolve) => cancel.signal.addEventListener('abort', resolve, { once: true }));
      }
    } catch (err) {
      if (!cancel.signal.aborted) throw err;
      stoppedEarly = err.message;
    }
    const storyMs = monitor.now();
    let drained = false;
    if (!stoppedEarly || o.forever) {
      await cloud.acceptConnections();
      monitor.networkUp();
      await cloud.clearFaults();
      progress.line(storyMs, `story over; waiting (at most ${DRAIN_LIMIT_MS / 60_000} agent minutes) for every camera to be online with an empty queue`);
      drained = await drain(monitor, o.timeScale, async () => (await Promise.all(devices.map((d) => settled(cloud, monitor, d)))).every(Boolean));
      progress.line(monitor.now(), drained ? 'every camera settled: online, queue empty, clips stored, channels as plugged' : 'not settled within the limit');
    } else {
      progress.line(storyMs, stoppedEarly);
    }
    await poller.stop();
    progress.close();
    const exitCodes = await Promise.all(devices.map((d) => d.stop()));
    const facts = await gather({ cloud, devices, exitCodes });
    const report = render(facts, monitor, { storyMs, drained, stoppedEarly: o.forever ? undefined : stoppedEarly, wallMs: performance.now() - wallStart });
    process.stdout.write(`${report.lines.join('\n')}\n`);
    const keep = o.keep || !report.ok;
    if (keep) say(`kept ${work}: each camera's agent.log, state, runtime and media dirs (cam1/, cam2/, ...)`);
    else rmSync(work, { recursive: true, force: true });
    return report.ok ? 0 : 1;
  } catch (err) {
    process.stderr.write(`simulate: ${err.message}\n`);
    say(`kept ${work} for a look (each camera's agent.log)`);
    return 1;
  } finally {
    for (const d of devices) d.kill();
    await cloud.close();
  }
}

/** The monitor's poll and the display's refresh, every POLL_MS real ms; a status line per device every few agent minutes in plain mode. */
function startPolling(monitor, progress, devices, o) {
  const statusEveryMs = Math.max(60_000, Math.round((o.minutes * 60_000) / 6 / 60_000) * 60_000);
  let nextStatus = statusEveryMs;
  let running = true;
  let busy = Promise.resolve();
  const tick = async () => {
    await monitor.poll((d, attempt) => {
      const hb = monitor.live.get(d.label).heartbeats;
      progress.heartbeat(attempt.t, d, attempt, hb.length >= 2 ? attempt.t - hb.at(-2).t : undefined);
    });
    const t = monitor.now();
    const plainStatus = t >= nextStatus;
    if (plainStatus) nextStatus += statusEveryMs;
    progress.update(t, monitor.network.up ? 'up' : 'DOWN', devices.map((d) => monitor.row(d)), { plainStatus });
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
    },
  };
}
