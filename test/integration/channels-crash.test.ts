// The channel crash test: channels plugged and unplugged at random under the
// host root while the service refuses connections, and the daemon SIGKILLed
// at random moments, restarted at once with the same dirs each time (a soak,
// test/support/soak.ts: 45 kills in `npm test`, 200 in `npm run test:soak`).
// Then the service comes back, the hardware holds still, and the last daemon
// must bring the service to exactly one channel per plugged device,
// with every channel-sync the daemon ever put on flash ended (done or
// superseded), none lost, no quarantine without real corruption, a bounded
// queue dir and no temp files left behind.
//
// While the service refuses, the daemon holds one waiting sync (a waiting sync
// reads the hardware when it runs, so one is enough) and writes nothing more:
// few kills here can land in an outbox write. channels-crash-online.test.ts
// aims its kills at outbox writes and channel calls with the service answering.
import { describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import { waitFor, type AgentDirs } from './agent-process.js';
import { useCrashSuite } from './crash-suite.js';
import { soak } from '../support/soak.js';
import { sleepReal } from './refresh-harness.js';
import { notHung } from '../support/until.js';
import { KEYS, channelCalls, indexesAtService, makeRig, plug, scanQueueDir, serviceChannels, startChannelAgent, unplug, type ChannelKey } from './channels-harness.js';
import { QueueTracker, convergeAndAudit, hardwareChaos, queueShape } from './channels-crash-tracker.js';

const SCALE = 300; // the debounce (5 agent s) is 17 real ms, a group-commit window 0.5 real s
const { figure, random } = soak('channels through kills, service refusing', ['channelKills']);
const KILLS = figure('channelKills');
/** About 0.6 real s a kill on a quiet machine: a kill's step still going after a minute hung (a bound against a hang, not a speed test). */
const STEP_HANG_MS = 60_000;
// The test's own timeout, 20 real s a kill on average and the last phase's bounds: a hang's last resort.
const FINAL: ChannelKey[] = ['audio', 'timecode'];

const suite = useCrashSuite();

/** Every channel sync put in the queue files has its end record there. */
function syncsEnded(dirs: AgentDirs): boolean {
  const records = scanQueueDir(join(dirs.stateDir, 'queue')).flatMap((s) => s.records);
  const ended = new Set(records.filter((r) => r.t === 'done' || r.t === 'dead' || r.t === 'drop').map((r) => r.id));
  const puts = records.filter((r) => r.t === 'put');
  return puts.length > 0 && puts.every((r) => ended.has(r.id));
}

describe('channels through SIGKILLs while the service refuses connections', () => {
  it(`converges to one channel per plugged device, losing no acknowledged sync, through ${KILLS}+ kills`, async () => {
    const t0 = Date.now();
    const cloud = await suite.cloud({ timeScale: SCALE });
    const dirs = suite.dirs();
    const rig = makeRig(cloud, dirs, SCALE);
    const tracker = new QueueTracker(dirs);
    const stats = { early: 0, mid: 0, aimed: 0, aimedHit: 0, toggles: 0 };

    // The service first holds channels for video and timecode, connected by a daemon that then dies.
    plug(rig, 'video');
    plug(rig, 'timecode');
    const first = startChannelAgent(rig);
    await waitFor('the first channels', () => JSON.stringify(indexesAtService(rig)) === JSON.stringify([0, 2]), 10_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${first.all()}`);
    });
    // The sync's end record on flash (in the file: a SIGKILL keeps what write() handed the kernel).
    await waitFor('the first sync ended on flash', () => syncsEnded(dirs), 10_000, 10);
    await tracker.kill9(first, 'kill 0 (service answering)');
    const before = serviceChannels(rig);
    const callsBefore = channelCalls(rig);

    // Offline: the service refuses every connection; the hardware changes at random throughout.
    cloud.control.refuseConnections();
    const chaos = hardwareChaos(rig, random);
    try {
      for (let i = 1; i <= KILLS; i++) await notHung(`kill ${i}`, STEP_HANG_MS, async () => {
        const agent = startChannelAgent(rig);
        const mode = i % 3;
        if (mode === 0) {
          // While node starts and the daemon opens its queue.
          stats.early++;
          await sleepReal(random() * 250);
        } else if (mode === 1) {
          // Anywhere in the first group-commit windows, with the detector reporting changes.
          stats.mid++;
          await sleepReal(250 + random() * 650);
        } else {
          // Aimed: as soon as the queue dir changes (a put or an end going to flash), plus 0-2 ms.
          stats.aimed++;
          const shape = queueShape(rig);
          const hit = await waitFor('a queue write', () => queueShape(rig) !== shape || agent.child.exitCode !== null, 700, 1).then(
            () => true,
            () => false,
          );
          if (hit) stats.aimedHit++;
          await sleepReal(random() * 2);
        }
        await tracker.kill9(agent, `kill ${i}`);
      }, () => JSON.stringify({ kills: tracker.kills, ...stats }));
    } finally {
      stats.toggles = await chaos.stop();
    }
    const crashPhaseS = (Date.now() - t0) / 1000;
    // Nothing reached the service while it refused.
    expect(serviceChannels(rig)).toEqual(before);
    expect(channelCalls(rig)).toEqual(callsBefore);

    // The service is back and the hardware holds still: the last daemon converges.
    for (const k of KEYS) (FINAL.includes(k) ? plug : unplug)(rig, k);
    await cloud.control.acceptConnections();
    const last = startChannelAgent(rig);
    const audit = await convergeAndAudit(rig, tracker, FINAL, last);
    console.log(JSON.stringify({ kills: tracker.kills, startedBeforeKill: tracker.startedBeforeKill, ...stats, realS: (Date.now() - t0) / 1000, crashPhaseS, ...audit }));
    expect(tracker.kills).toBeGreaterThanOrEqual(KILLS + 1);
  }, KILLS * 20_000 + 180_000);
});
