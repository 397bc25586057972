// Channels through the CLI, as processes: the built bundle as a real daemon
// against the fake cloud, with a fake hardware tree under --host-root (the
// multi-av-tc profile), and `status`, `channels` and `queue` as separate
// processes that must agree with what reached the service. A process because
// that is what is judged here: the CLI's output, from another process than the
// daemon's, and SIGTERM's exit code. Outcomes only: the timing of plugs,
// debounce, outages and an hour of heartbeats is judged in agent time, to the
// ms, by the daemon in-process (test/e2e/channels.test.ts).
import { describe, expect, it } from '@jest/globals';
import { waitFor } from './agent-process.js';
import { type RefreshingAgent } from './refresh-harness.js';
import { MODEL, cli, expectedIndexes, indexesAtService, plug, serviceChannels, startChannelAgent, syncCounts, type Rig, useChannelRigs } from './channels-harness.js';

const rigAt = useChannelRigs();

/** Runs `body`; a failure carries the daemon's output. */
async function withAgent<T>(agent: RefreshingAgent, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (err) {
    throw new Error(`${(err as Error).message}\nagent output (tail):\n${agent.all().slice(-6000)}`, { cause: err });
  }
}

async function statusChannels(rig: Rig): Promise<{ detected?: string[]; known?: string[] | null; pendingSyncs?: number } | undefined> {
  const st = await cli(rig, ['status']).catch(() => undefined);
  return st?.json.channels as { detected?: string[]; known?: string[] | null; pendingSyncs?: number } | undefined;
}

describe('channels: the daemon, the service and the CLI', () => {
  it('connects what is plugged in; status, channels and queue, each its own process, agree with the service', async () => {
    const SCALE = 60;
    const rig = await rigAt(SCALE);
    plug(rig, 'video');
    plug(rig, 'audio');
    const agent = startChannelAgent(rig);
    await withAgent(agent, async () => {
      await waitFor('both channels', () => JSON.stringify(indexesAtService(rig)) === JSON.stringify(expectedIndexes(['video', 'audio'])), 10_000);
      const [video, audio] = serviceChannels(rig).sort((a, b) => a.external_index - b.external_index);
      expect([video!.device_model_id, audio!.device_model_id]).toEqual([MODEL.video, MODEL.audio]);

      // status --json carries the channel summary once the sync is done.
      const st = await waitFor('status: no pending sync, both known', async () => {
        const ch = await statusChannels(rig);
        return ch?.pendingSyncs === 0 && JSON.stringify(ch.known) === '["audio","video"]' ? ch : undefined;
      }, 10_000, 100);
      expect(st).toEqual({ detected: ['audio', 'video'], known: ['audio', 'video'], pendingSyncs: 0 });

      // `channels --json`: detected here, recorded, and at the service, consistently. At --time-scale 1:
      // at the rig's 60 its request had 1/60 of its timeout, less than a fresh process's TLS handshake on
      // a loaded machine, and every row read 'unknown' in CI runs on three workers.
      const ch = await cli(rig, ['channels'], 1);
      expect(ch.exitCode).toBe(0);
      const rows = ch.json.channels as Array<{ key: string; detected: boolean; recordedId: string | null; service: { id: string } | null | 'unknown' }>;
      expect(rows.map((r) => [r.key, r.detected, r.recordedId, r.service === null || r.service === 'unknown' ? r.service : r.service.id])).toEqual([
        ['video', true, video!.id, video!.id],
        ['audio', true, audio!.id, audio!.id],
        ['timecode', false, null, null],
      ]);
      expect(ch.json.strays).toEqual([]);
      expect(ch.json.pendingSyncs).toBe(0);
      expect(ch.json.service).toEqual({ reachable: true });

      // queue --json: the start-up sync done, nothing pending, dead or dropped, the daemon seen running.
      const q = await cli(rig, ['queue']);
      expect(q.exitCode).toBe(0);
      expect(syncCounts(q.json)).toMatchObject({ pending: 0, dead: 0, dropped: 0 });
      expect(syncCounts(q.json).done).toBeGreaterThanOrEqual(1);
      expect(q.json.daemonRunning).toBe(true);
      expect(q.json.quarantined).toBe(0);
    });
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toEqual({ code: 0, signal: null });
  }, 60_000);
});
