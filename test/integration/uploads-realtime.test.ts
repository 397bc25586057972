// Real-time uploads end to end (issue 21): the daemon runs with
// --realtime-uploads true against the fake cloud; a recorder in the test
// writes take.mov.part at camera rate on tmpfs, patches its first 4 KiB (and
// a block in the middle) when it stops, and renames it to take.mov. The
// fake must then hold one complete real-time asset whose parts, joined in
// number order, are the finished file byte for byte, every part but the
// last at least 5 MiB; counted at the fake, every part went once, except a
// part the recorder rewrote after it went, which went once more. Then the
// same through two kill -9s of the daemon while it records and an outage of
// the service across the stop. Then: a .part that disappears, a paused
// device, and a clip written in place.
import { describe, expect, it } from '@jest/globals';
import { statSync } from 'node:fs';
import { waitFor } from './agent-process.js';
import { cli } from './channels-harness.js';
import { sleepReal, type RefreshingAgent } from './refresh-harness.js';
import { MiB, putsPerPart, realtimeProblems, record, tmpfsMedia } from './realtime-harness.js';
import { agentWarnings, assetCreates, assetsNamed, describeAssets, startUploadAgent, storagePuts, useUploadRigs, type UploadRig } from './uploads-harness.js';

const SCALE = 10;
const { rigUp, online } = useUploadRigs(SCALE);
const RATE = 30e6;
const PART = 8 * MiB;

function startRealtime(rig: UploadRig, media: string): RefreshingAgent {
  return startUploadAgent(rig, { env: { C2C_MEDIA_DIR: media, C2C_REALTIME_UPLOADS: 'true' } });
}

async function kill9(a: RefreshingAgent): Promise<void> {
  a.child.kill('SIGKILL');
  await a.exited;
}

const deadLettered = (a: RefreshingAgent): string[] => a.lines().filter((l) => /dead-lettered/.test(String(l.msg))).map((l) => String(l.msg));

async function storedOnce(rig: UploadRig, agent: () => RefreshingAgent, file: string, timeoutMs: number): Promise<void> {
  await waitFor('take.mov complete at the fake', () => assetsNamed(rig.cloud, 'take.mov').some((a) => a.complete), timeoutMs, 50).catch((err: Error) => {
    throw new Error(`${err.message}\n${describeAssets(rig.cloud)}\n${agentWarnings(agent())}`);
  });
  const size = statSync(file).size;
  const assets = assetsNamed(rig.cloud, 'take.mov');
  expect(assets).toHaveLength(1);
  expect(realtimeProblems(assets[0]!, file, size)).toEqual([]);
}

describe('real-time uploads', () => {
  it('uploads take.mov while it records: the stored object is the finished file, each part sent once but the one rewritten after it went', async () => {
    const rig = await rigUp();
    const media = tmpfsMedia();
    try {
      const agent = startRealtime(rig, media.dir);
      await online(rig, agent);
      const bytes = 200 * MiB + 12_345;
      let during: { status?: Record<string, unknown>; queue?: Record<string, unknown> } = {};
      // The recorder also rewrites 4 KiB inside part 3 when it stops (an index written back): that part goes twice.
      const rec = record(media.dir, 'take.mov', {
        bytes,
        rate: RATE,
        patchAlso: [2 * PART + 100],
        at: [{ fraction: 0.5, run: async () => void (during = { status: (await cli(rig, ['status'])).json, queue: (await cli(rig, ['queue'])).json }) }],
      });
      await rec.done;
      const stoppedAt = Date.now();
      await storedOnce(rig, () => agent, rec.file, 60_000);
      const tailMs = Date.now() - stoppedAt;

      const asset = assetsNamed(rig.cloud, 'take.mov')[0]!;
      const puts = putsPerPart(rig.cloud, asset.id);
      const parts = Math.ceil(bytes / PART);
      expect(asset.parts).toHaveLength(parts);
      const twice = [...puts].filter(([, n]) => n !== 1);
      expect(twice).toEqual([['rt-3', 2]]);
      expect(assetCreates(rig.cloud)).toHaveLength(1);
      // Halfway through, the upload was under way, shown as a recording in status and queue.
      const recording = ((during.status?.uploads as { recording?: Array<Record<string, unknown>> } | undefined)?.recording ?? [])[0];
      expect(recording).toMatchObject({ name: 'take.mov' });
      expect(recording!.bytesSent as number).toBeGreaterThan(0);
      const item = ((during.queue?.items as Array<Record<string, unknown>> | undefined) ?? []).find((i) => i.kind === 'realtime-upload');
      expect(item?.upload).toMatchObject({ name: 'take.mov', realtime: 'recording' });
      // The queue ends empty; the finished file is not uploaded a second time as a whole.
      await waitFor('the queue empty', async () => {
        const q = (await cli(rig, ['queue'])).json as { byKind?: Record<string, { pending?: { items: number } }> };
        return Object.values(q.byKind ?? {}).every((k) => (k.pending?.items ?? 0) === 0);
      }, 20_000, 100);
      await sleepReal(500);
      expect(assetsNamed(rig.cloud, 'take.mov')).toHaveLength(1);
      expect(deadLettered(agent)).toEqual([]);
      // The presigned part URLs are secrets: in no log line, status or queue output.
      expect(JSON.stringify([agent.lines(), during])).not.toMatch(/X-Amz-Signature/);
      console.info(`realtime: ${bytes} bytes at ${RATE / 1e6} MB/s, ${parts} parts, stop to complete ${tailMs} real ms`);
    } finally {
      media.remove();
    }
  }, 120_000);

  it('loses and duplicates nothing through two kill -9s while it records and an outage across the stop', async () => {
    const rig = await rigUp();
    const media = tmpfsMedia();
    try {
      let agent = startRealtime(rig, media.dir);
      await online(rig, agent);
      const dead: string[] = [];
      const putsAtKill: number[] = [];
      const stored = (): number => storagePuts(rig.cloud).filter((e) => e.status === 200).length;
      const restart = async (): Promise<void> => {
        // The kill comes while parts go: once a part reached storage since the last start (a loaded machine may be slow to start).
        const before = putsAtKill.at(-1) ?? 0;
        await waitFor('a part stored since the last start', () => stored() > before, 20_000, 5);
        putsAtKill.push(stored());
        await kill9(agent);
        dead.push(...deadLettered(agent));
        agent = startRealtime(rig, media.dir);
      };
      let outage: { remove(): void } | undefined;
      const bytes = 160 * MiB + 777;
      const rec = record(media.dir, 'take.mov', {
        bytes,
        rate: RATE,
        at: [
          { fraction: 0.3, run: restart },
          { fraction: 0.6, run: restart },
          // The service unreachable from before the stop (every connection reset) until a while after it.
          { fraction: 0.9, run: () => void (outage = rig.cloud.control.addFault({ kind: 'reset', path: '/*' })) },
        ],
      });
      await rec.done;
      await sleepReal(1500);
      const refused = rig.cloud.control.listFaults().find((f) => f.kind === 'reset')?.hits ?? 0;
      outage?.remove();
      await storedOnce(rig, () => agent, rec.file, 90_000);
      const asset = assetsNamed(rig.cloud, 'take.mov')[0]!;
      const puts = putsPerPart(rig.cloud, asset.id);
      // A kill can cost at most the part in flight (at storage, not yet recorded): one per kill.
      const extra = [...puts.values()].reduce((n, c) => n + c - 1, 0);
      expect(extra).toBeLessThanOrEqual(2);
      // The kills came while parts were going, and the outage refused the agent's calls.
      expect(putsAtKill[0]).toBeGreaterThan(0);
      expect(putsAtKill[1]).toBeGreaterThan(putsAtKill[0]!);
      expect(refused).toBeGreaterThan(0);
      expect(assetCreates(rig.cloud).filter((e) => e.status === 200)).toHaveLength(1);
      expect(rig.cloud.assets()).toHaveLength(1);
      dead.push(...deadLettered(agent));
      expect(dead).toEqual([]);
      console.info(`realtime through kills: ${Math.ceil(bytes / PART)} parts, ${extra} sent again, PUTs at the kills ${putsAtKill.join(', ')}, ${refused} requests refused by the outage`);
    } finally {
      media.remove();
    }
  }, 180_000);

  it('a .part that disappears ends its item with the reason and blocks nothing; a paused device refuses a recording once, never again', async () => {
    const rig = await rigUp();
    const media = tmpfsMedia();
    try {
      const agent = startRealtime(rig, media.dir);
      await online(rig, agent);
      const lost = record(media.dir, 'lost.mov', { bytes: 40 * MiB, rate: RATE, vanish: true });
      await lost.done;
      const next = record(media.dir, 'next.mov', { bytes: 30 * MiB + 5, rate: RATE });
      await next.done;
      await waitFor('next.mov complete', () => assetsNamed(rig.cloud, 'next.mov').some((a) => a.complete), 30_000, 50);
      expect(realtimeProblems(assetsNamed(rig.cloud, 'next.mov')[0]!, next.file, 30 * MiB + 5)).toEqual([]);
      const items = async (): Promise<Array<Record<string, unknown>>> => ((await cli(rig, ['queue'])).json.items as Array<Record<string, unknown>>) ?? [];
      const gone = await waitFor('lost.mov ended', async () => (await items()).find((i) => (i.upload as { name?: string } | undefined)?.name === 'lost.mov' && i.state === 'dead'), 20_000, 100);
      expect(gone.reason).toMatch(/^the recording is gone: .*lost\.mov\.part disappeared without becoming .*lost\.mov/);
      expect(assetsNamed(rig.cloud, 'lost.mov').filter((a) => a.complete)).toEqual([]);

      rig.cloud.control.pause(rig.device.id);
      const before = assetCreates(rig.cloud).length;
      const paused = record(media.dir, 'paused.mov', { bytes: 12 * MiB, rate: RATE });
      await paused.done;
      const refused = await waitFor('paused.mov refused', async () => (await items()).find((i) => (i.upload as { name?: string } | undefined)?.name === 'paused.mov' && i.state === 'dead'), 20_000, 100);
      expect(refused.upload).toMatchObject({ state: 'paused-refused' });
      // The finished file settles and is seen again: still the one create, answered 409.
      await sleepReal(3000);
      expect(assetCreates(rig.cloud).slice(before).map((e) => e.status)).toEqual([409]);
      expect(deadLettered(agent).filter((m) => !/lost\.mov|paused\.mov/.test(m))).toEqual([]);
    } finally {
      media.remove();
    }
  }, 120_000);

  it('a clip written in place goes while it grows and is finished once it holds still: one asset, the file byte for byte', async () => {
    const rig = await rigUp();
    const media = tmpfsMedia();
    try {
      const agent = startRealtime(rig, media.dir);
      await online(rig, agent);
      const bytes = 60 * MiB + 99;
      const rec = record(media.dir, 'inplace.wav', { bytes, rate: RATE, inPlace: true });
      await rec.done;
      const stoppedAt = rig.cloud.now();
      await waitFor('inplace.wav complete', () => assetsNamed(rig.cloud, 'inplace.wav').some((a) => a.complete), 30_000, 50).catch((err: Error) => {
        throw new Error(`${err.message}\n${describeAssets(rig.cloud)}\n${agentWarnings(agent)}`);
      });
      const assets = assetsNamed(rig.cloud, 'inplace.wav');
      expect(assets).toHaveLength(1);
      expect(realtimeProblems(assets[0]!, rec.file, bytes)).toEqual([]);
      // Parts went while it was written, not only after it stopped.
      expect(assets[0]!.parts.length).toBe(Math.ceil(bytes / PART));
      expect(storagePuts(rig.cloud, assets[0]!.id).filter((e) => e.status === 200 && e.t < stoppedAt).length).toBeGreaterThan(2);
      await sleepReal(1500);
      expect(assetsNamed(rig.cloud, 'inplace.wav')).toHaveLength(1);
      expect(assetCreates(rig.cloud)).toHaveLength(1);
    } finally {
      media.remove();
    }
  }, 60_000);
});
