// Channels through kill -9s, in agent time (rig.ts; the multi-av-tc profile).
// Channels plugged and unplugged at random under the host root (every 0.9 to
// 18 agent s), the daemon killed at moments drawn from the soak's seed and
// started again at once with the same dirs (test/support/soak.ts: 20 and 12
// kills in `npm test`, 200 and 90 in `npm run test:soak`). Then the service
// answers, the hardware holds still, and the last daemon must bring the
// service to exactly one channel per plugged device, with every channel-sync
// the daemon ever put on flash ended (done or superseded), none lost, nothing
// quarantined, a bounded queue dir and no temp file (channels-tracker.ts).
//
// First while the service refuses connections: the daemon holds one waiting
// sync (a waiting sync reads the hardware when it runs, so one is enough) and
// writes little; then with the service answering, the kills aimed at the
// moment the queue dir changed and at the moment the service answered a
// connect or disconnect (the channel record is written right after). The same
// seed replays a run to the agent ms. (A kill inside the channel record's
// write, and the temp file it leaves: integration/kill9.test.ts.)
import { afterEach, describe, expect, it } from '@jest/globals';
import { soak } from '../support/soak.js';
import { syncsEnded } from '../support/state-files.js';
import { CONNECT_PATH, FIRMWARE, KEYS, QueueTracker, channelCalls, convergeAndAudit, hardwareChaos, indexesAtService, plug, queueShape, serviceChannels, unplug, type ChannelKey } from './channels-tracker.js';
import { MINUTE, Rig, SECOND } from './rig.js';

const env = { C2C_FIRMWARE_VERSION: FIRMWARE };

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('channels through kill -9s in agent time', () => {
  const refusing = soak('channels through kills, service refusing', ['channelKills']);
  const KILLS = refusing.figure('channelKills');

  it(`converges to one channel per plugged device, losing no acknowledged sync, through ${KILLS}+ kills while the service refuses`, async () => {
    const random = refusing.random;
    const r = (rig = await Rig.up({ seed: refusing.seed }));
    const tracker = new QueueTracker(r);
    const stats = { early: 0, mid: 0, aimed: 0, aimedHit: 0, toggles: 0 };
    const FINAL: ChannelKey[] = ['audio', 'timecode'];

    // The service first holds channels for video and timecode, connected by a daemon that then dies.
    plug(r, 'video');
    plug(r, 'timecode');
    r.start(env);
    await r.until('the first channels', () => JSON.stringify(indexesAtService(r)) === JSON.stringify([0, 2]), 5 * MINUTE);
    await r.until('the first sync ended on flash', () => syncsEnded(r.stateDir), MINUTE);
    tracker.kill9(r, 'kill 0 (service answering)');
    const before = serviceChannels(r);
    const callsBefore = channelCalls(r);

    // Offline: the service refuses every connection; the hardware changes at random throughout.
    r.cloud.control.refuseConnections();
    const chaos = hardwareChaos(r, random, 900, 18 * SECOND);
    for (let i = 1; i <= KILLS; i++) {
      r.start(env);
      const mode = i % 3;
      if (mode === 0) {
        // While the daemon starts and opens its queue.
        stats.early++;
        await r.advance(Math.round(random() * 2 * SECOND));
      } else if (mode === 1) {
        // Anywhere in its first minutes, with the detector reporting changes.
        stats.mid++;
        await r.advance(Math.round(2 * SECOND + random() * 200 * SECOND));
      } else {
        // Aimed: as soon as the queue dir changes (a put or an end going to flash), plus 0-0.6 agent s.
        stats.aimed++;
        const shape = queueShape(r);
        if (await r.vc.advanceUntil('a queue write', () => queueShape(r) !== shape, 210 * SECOND).then(() => true, () => false)) stats.aimedHit++;
        await r.advance(Math.round(random() * 600));
      }
      tracker.kill9(r, `kill ${i}`);
    }
    stats.toggles = chaos.stop();
    // Nothing reached the service while it refused.
    expect(serviceChannels(r)).toEqual(before);
    expect(channelCalls(r)).toEqual(callsBefore);

    // The service is back and the hardware holds still: the last daemon converges.
    for (const k of KEYS) (FINAL.includes(k) ? plug : unplug)(r, k);
    await r.cloud.control.acceptConnections();
    r.start(env);
    const audit = await convergeAndAudit(r, tracker, FINAL);
    console.log(JSON.stringify({ seed: refusing.seed, kills: tracker.kills, startedBeforeKill: tracker.startedBeforeKill, ...stats, agentS: Math.round(r.now() / 1000), ...audit }));
    expect(tracker.kills).toBe(KILLS + 1);
  });

  const answering = soak('channels through kills, service answering', ['channelOnlineKills']);
  const ONLINE_KILLS = answering.figure('channelOnlineKills');

  it(`converges without duplicates or lost syncs through ${ONLINE_KILLS} kills aimed at outbox writes and channel calls while the service answers`, async () => {
    const random = answering.random;
    const r = (rig = await Rig.up({ seed: answering.seed }));
    const tracker = new QueueTracker(r);
    const stats = { random: 0, atQueueWrite: 0, queueWriteHit: 0, atChannelAnswer: 0, channelAnswerHit: 0, toggles: 0 };
    const FINAL: ChannelKey[] = ['video', 'timecode'];
    const answeredCalls = (): number => r.cloud.journal.filter((e) => e.deviceId === r.device.id && e.method === 'POST' && e.path.startsWith(CONNECT_PATH) && e.status !== 0).length;

    plug(r, 'audio');
    const chaos = hardwareChaos(r, random, 900, 18 * SECOND);
    for (let i = 1; i <= ONLINE_KILLS; i++) {
      r.start(env);
      const mode = i % 3;
      if (mode === 0) {
        stats.random++;
        await r.advance(Math.round(random() * 360 * SECOND));
      } else if (mode === 1) {
        stats.atQueueWrite++;
        const shape = queueShape(r);
        if (await r.vc.advanceUntil('a queue write', () => queueShape(r) !== shape, 450 * SECOND).then(() => true, () => false)) stats.queueWriteHit++;
        await r.advance(Math.round(random() * 600));
      } else {
        stats.atChannelAnswer++;
        const seen = answeredCalls();
        if (await r.vc.advanceUntil('a channel call answered', () => answeredCalls() > seen, 450 * SECOND).then(() => true, () => false)) stats.channelAnswerHit++;
        if (random() < 0.5) await r.advance(Math.round(random() * 900));
      }
      tracker.kill9(r, `kill ${i}`);
    }
    stats.toggles = chaos.stop();

    for (const k of KEYS) (FINAL.includes(k) ? plug : unplug)(r, k);
    r.start(env);
    const audit = await convergeAndAudit(r, tracker, FINAL);
    console.log(JSON.stringify({ seed: answering.seed, kills: tracker.kills, startedBeforeKill: tracker.startedBeforeKill, ...stats, agentS: Math.round(r.now() / 1000), ...audit }));
    expect(tracker.kills).toBe(ONLINE_KILLS);
  });
});
