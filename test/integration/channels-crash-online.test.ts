// The channel crash test's other half: the same random plugging and SIGKILLs,
// but with the service answering, so syncs run, connects and disconnects go
// out and the outbox writes puts and ends all the time. While the service
// refuses (channels-crash.test.ts) the daemon keeps one waiting sync and
// writes almost nothing, so kills there cannot land in an outbox write; here
// they are aimed at them: at the moment the queue dir changes, and at the
// moment the service has answered a connect or disconnect (the channel
// record is written right after). The end state must be the same: one
// channel per plugged device, no duplicate, every put ended, nothing left over.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { startFakeCloud, type FakeCloud } from '../fake-cloud/index.js';
import { ensureBuilt, killAll, makeDirs, removeDirs, waitFor, type AgentDirs } from './agent-process.js';
import { sleepReal } from './refresh-harness.js';
import { CONNECT_PATH, KEYS, makeRig, plug, startChannelAgent, unplug, type ChannelKey } from './channels-harness.js';
import { QueueTracker, convergeAndAudit, hardwareChaos, queueShape } from './channels-crash-tracker.js';

const SCALE = 300;
const KILLS = 90;
const BUDGET_MS = 120_000;
const FINAL: ChannelKey[] = ['video', 'timecode'];

let cloud: FakeCloud | undefined;
let dirs: AgentDirs | undefined;

beforeAll(ensureBuilt, 120_000);
afterEach(killAll);
afterAll(async () => {
  await killAll();
  await cloud?.close();
  if (dirs) removeDirs(dirs);
});

describe('channels through SIGKILLs while the service answers', () => {
  it(`converges without duplicates or lost syncs through ${KILLS} kills aimed at outbox writes and channel calls`, async () => {
    const t0 = Date.now();
    cloud = await startFakeCloud({ timeScale: SCALE });
    const c = cloud;
    dirs = makeDirs();
    const rig = makeRig(c, dirs, SCALE);
    const tracker = new QueueTracker(dirs);
    const stats = { random: 0, atQueueWrite: 0, queueWriteHit: 0, atChannelAnswer: 0, channelAnswerHit: 0, toggles: 0 };
    const answeredCalls = (): number => c.journal.filter((e) => e.deviceId === rig.device.id && e.method === 'POST' && e.path.startsWith(CONNECT_PATH) && e.status !== 0).length;

    plug(rig, 'audio');
    const chaos = hardwareChaos(rig);
    try {
      for (let i = 1; i <= KILLS; i++) {
        if (Date.now() - t0 > BUDGET_MS) throw new Error(`only ${tracker.kills} kills in ${BUDGET_MS} ms: ${JSON.stringify(stats)}`);
        const agent = startChannelAgent(rig);
        const alive = (): boolean => agent.child.exitCode !== null;
        const mode = i % 3;
        if (mode === 0) {
          stats.random++;
          await sleepReal(Math.random() * 1_200);
        } else if (mode === 1) {
          stats.atQueueWrite++;
          const shape = queueShape(rig);
          const ok = await waitFor('a queue write', () => queueShape(rig) !== shape || alive(), 1_500, 1).then(() => true, () => false);
          if (ok) stats.queueWriteHit++;
          await sleepReal(Math.random() * 2);
        } else {
          stats.atChannelAnswer++;
          const seen = answeredCalls();
          const ok = await waitFor('a channel call answered', () => answeredCalls() > seen || alive(), 1_500, 1).then(() => true, () => false);
          if (ok) stats.channelAnswerHit++;
          if (Math.random() < 0.5) await sleepReal(Math.random() * 3);
        }
        await tracker.kill9(agent, `kill ${i}`);
      }
    } finally {
      stats.toggles = await chaos.stop();
    }
    const crashPhaseS = (Date.now() - t0) / 1000;

    for (const k of KEYS) (FINAL.includes(k) ? plug : unplug)(rig, k);
    const last = startChannelAgent(rig);
    const audit = await convergeAndAudit(rig, tracker, FINAL, last);
    console.log(JSON.stringify({ kills: tracker.kills, startedBeforeKill: tracker.startedBeforeKill, ...stats, realS: (Date.now() - t0) / 1000, crashPhaseS, ...audit }));
    expect(tracker.kills).toBe(KILLS);
  }, BUDGET_MS + 60_000);
});
