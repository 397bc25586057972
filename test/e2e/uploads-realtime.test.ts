// Real-time uploads end to end in agent time (issue 21; rig.ts): the daemon
// in-process with realtime uploads on; a recorder (recorder.ts) writes
// take.mov.part at camera rate on the rig's clock, patches its first 4 KiB
// (and a block in the middle) when it stops, and renames it to take.mov. The
// fake must then hold one complete real-time asset whose parts, joined in
// number order, are the finished file byte for byte, every part but the last
// at least 5 MiB; counted at the fake, every part went once, except a part the
// recorder rewrote after it went, which went once more. Then the same through
// two kill -9s of the daemon while it records and an outage of the service
// across the stop. Then: a .part that disappears, a paused device, and a clip
// written in place. The waits that were real seconds at scale 10 ("nothing
// more happens") are agent seconds here, with nothing left to the machine's pace.
import { afterEach, describe, expect, it } from '@jest/globals';
import { statSync } from 'node:fs';
import { assetCreates, assetsNamed, describeAssets, storagePuts } from '../support/assets.js';
import { MiB, putsPerPart, realtimeProblems, record } from './recorder.js';
import { MINUTE, Rig, SECOND } from './rig.js';

/** Bytes per agent second the camera records at. */
const RATE = 30e6;
const PART = 8 * MiB;

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const env = (r: Rig): Record<string, string> => ({ ...r.mediaEnv(), C2C_FIRMWARE_VERSION: '1.6.0', C2C_REALTIME_UPLOADS: 'true' });

async function up(): Promise<Rig> {
  const r = (rig = await Rig.up({ cloud: { uploadPartBytes: 256 * 1024 } }));
  r.start(env(r));
  await r.until('online', () => r.state() === 'online', MINUTE);
  return r;
}

const deadLettered = (r: Rig): string[] => r.lines.filter((l) => /dead-lettered/.test(l.msg)).map((l) => l.msg);
const warnings = (r: Rig): string =>
  r.lines
    .filter((l) => l.level >= 40)
    .slice(-20)
    .map((l) => `${l.at} [${l.gen}] ${l.msg}`)
    .join('\n');

async function storedOnce(r: Rig, file: string, limitMs: number): Promise<void> {
  await r.until('take.mov complete at the fake', () => assetsNamed(r.cloud, 'take.mov').some((a) => a.complete), limitMs).catch((err: Error) => {
    throw new Error(`${err.message}\n${describeAssets(r.cloud)}\n${warnings(r)}`);
  });
  const size = statSync(file).size;
  const assets = assetsNamed(r.cloud, 'take.mov');
  expect(assets).toHaveLength(1);
  expect(realtimeProblems(assets[0]!, file, size)).toEqual([]);
}

const rowNamed = async (r: Rig, name: string) => (await r.uploads()).find((u) => u.name === name);

describe('real-time uploads in agent time', () => {
  it('uploads take.mov while it records: the stored object is the finished file, each part sent once but the one rewritten after it went', async () => {
    const r = await up();
    const bytes = 200 * MiB + 12_345;
    let during: { status?: Record<string, unknown>; row?: Record<string, unknown> } = {};
    // The recorder also rewrites 4 KiB inside part 3 when it stops (an index written back): that part goes twice.
    const rec = record(r, 'take.mov', {
      bytes,
      rate: RATE,
      patchAlso: [2 * PART + 100],
      at: [{ fraction: 0.5, run: async () => void (during = { status: (await r.api<Record<string, unknown>>('GET', '/v1/status')).body, row: (await rowNamed(r, 'take.mov')) as unknown as Record<string, unknown> }) }],
    });
    await rec.done;
    const stoppedAt = r.now();
    await storedOnce(r, rec.file, 5 * MINUTE);
    const tailMs = r.now() - stoppedAt;

    const asset = assetsNamed(r.cloud, 'take.mov')[0]!;
    const puts = putsPerPart(r.cloud, asset.id);
    const parts = Math.ceil(bytes / PART);
    expect(asset.parts).toHaveLength(parts);
    const twice = [...puts].filter(([, n]) => n !== 1);
    expect(twice).toEqual([['rt-3', 2]]);
    expect(assetCreates(r.cloud)).toHaveLength(1);
    // Halfway through, the upload was under way, shown as a recording in status and in the uploads' list.
    const recording = ((during.status?.uploads as { recording?: Array<Record<string, unknown>> } | undefined)?.recording ?? [])[0];
    expect(recording).toMatchObject({ name: 'take.mov' });
    expect(recording!.bytesSent as number).toBeGreaterThan(0);
    expect(during.row).toMatchObject({ name: 'take.mov', realtime: 'recording' });
    // The queue ends empty; the finished file is not uploaded a second time as a whole.
    await r.until('the queue empty', () => Object.values(r.status()?.queue?.byKind ?? {}).every((k) => (k.pending?.items ?? 0) === 0), MINUTE);
    await r.advance(5 * SECOND);
    expect(assetsNamed(r.cloud, 'take.mov')).toHaveLength(1);
    expect(deadLettered(r)).toEqual([]);
    // The presigned part URLs are secrets: in no log line, status or uploads' list.
    expect(JSON.stringify([r.lines, during])).not.toMatch(/X-Amz-Signature/);
    console.info(`realtime: ${bytes} bytes at ${RATE / 1e6} MB/s, ${parts} parts, stop to complete ${tailMs} agent ms`);
  });

  it('loses and duplicates nothing through two kill -9s while it records and an outage across the stop', async () => {
    const r = await up();
    const putsAtKill: number[] = [];
    const stored = (): number => storagePuts(r.cloud).filter((e) => e.status === 200).length;
    const restart = async (): Promise<void> => {
      // The kill comes while parts go: once a part reached storage since the last start.
      const before = putsAtKill.at(-1) ?? 0;
      await r.until('a part stored since the last start', () => stored() > before, MINUTE);
      putsAtKill.push(stored());
      r.kill();
      r.start(env(r));
    };
    let outage: { remove(): void } | undefined;
    const bytes = 160 * MiB + 777;
    const rec = record(r, 'take.mov', {
      bytes,
      rate: RATE,
      at: [
        { fraction: 0.3, run: restart },
        { fraction: 0.6, run: restart },
        // The service unreachable from before the stop (every connection reset) until a while after it.
        { fraction: 0.9, run: () => void (outage = r.cloud.control.addFault({ kind: 'reset', path: '/*' })) },
      ],
    });
    await rec.done;
    await r.advance(15 * SECOND);
    const refused = r.cloud.control.listFaults().find((f) => f.kind === 'reset')?.hits ?? 0;
    outage?.remove();
    await storedOnce(r, rec.file, 10 * MINUTE);
    const asset = assetsNamed(r.cloud, 'take.mov')[0]!;
    const puts = putsPerPart(r.cloud, asset.id);
    // A kill can cost at most the part in flight (at storage, not yet recorded): one per kill.
    const extra = [...puts.values()].reduce((n, c) => n + c - 1, 0);
    expect(extra).toBeLessThanOrEqual(2);
    // The kills came while parts were going, and the outage refused the agent's calls.
    expect(putsAtKill[0]).toBeGreaterThan(0);
    expect(putsAtKill[1]).toBeGreaterThan(putsAtKill[0]!);
    expect(refused).toBeGreaterThan(0);
    expect(assetCreates(r.cloud).filter((e) => e.status === 200)).toHaveLength(1);
    expect(r.cloud.assets()).toHaveLength(1);
    expect(deadLettered(r)).toEqual([]);
    console.info(`realtime through kills: ${Math.ceil(bytes / PART)} parts, ${extra} sent again, PUTs at the kills ${putsAtKill.join(', ')}, ${refused} requests refused by the outage`);
  });

  it('a .part that disappears ends its item with the reason and blocks nothing; a paused device refuses a recording once, never again', async () => {
    const r = await up();
    const lost = record(r, 'lost.mov', { bytes: 40 * MiB, rate: RATE, vanish: true });
    await lost.done;
    const next = record(r, 'next.mov', { bytes: 30 * MiB + 5, rate: RATE });
    await next.done;
    await r.until('next.mov complete', () => assetsNamed(r.cloud, 'next.mov').some((a) => a.complete), 5 * MINUTE);
    expect(realtimeProblems(assetsNamed(r.cloud, 'next.mov')[0]!, next.file, 30 * MiB + 5)).toEqual([]);
    // Looked at once an agent second (the list is a local API call), for ten agent minutes at most.
    const deadRow = async (name: string) => {
      let row: Awaited<ReturnType<typeof rowNamed>>;
      for (let i = 0; i < 600; i++) {
        row = await rowNamed(r, name);
        if (row !== undefined && ['dead-lettered', 'paused-refused'].includes(row.state)) return row;
        await r.advance(SECOND);
      }
      throw new Error(`${name} never ended: ${JSON.stringify(row)}\n${r.tail()}`);
    };
    const gone = await deadRow('lost.mov');
    expect(gone.reason).toMatch(/^the recording is gone: .*lost\.mov\.part disappeared without becoming .*lost\.mov/);
    expect(assetsNamed(r.cloud, 'lost.mov').filter((a) => a.complete)).toEqual([]);

    r.cloud.control.pause(r.device.id);
    const before = assetCreates(r.cloud).length;
    const paused = record(r, 'paused.mov', { bytes: 12 * MiB, rate: RATE });
    await paused.done;
    const refused = await deadRow('paused.mov');
    expect(refused.state).toBe('paused-refused');
    // The finished file settles and is seen again: still the one create, answered 409.
    await r.advance(30 * SECOND);
    expect(assetCreates(r.cloud).slice(before).map((e) => e.status)).toEqual([409]);
    expect(deadLettered(r).filter((m) => !/lost\.mov|paused\.mov/.test(m))).toEqual([]);
  });

  it('a clip written in place goes while it grows and is finished once it holds still: one asset, the file byte for byte', async () => {
    const r = await up();
    const bytes = 60 * MiB + 99;
    const rec = record(r, 'inplace.wav', { bytes, rate: RATE, inPlace: true });
    await rec.done;
    const stoppedAt = r.cloud.now();
    await r.until('inplace.wav complete', () => assetsNamed(r.cloud, 'inplace.wav').some((a) => a.complete), 5 * MINUTE).catch((err: Error) => {
      throw new Error(`${err.message}\n${describeAssets(r.cloud)}\n${warnings(r)}`);
    });
    const assets = assetsNamed(r.cloud, 'inplace.wav');
    expect(assets).toHaveLength(1);
    expect(realtimeProblems(assets[0]!, rec.file, bytes)).toEqual([]);
    // Parts went while it was written, not only after it stopped.
    expect(assets[0]!.parts.length).toBe(Math.ceil(bytes / PART));
    expect(storagePuts(r.cloud, assets[0]!.id).filter((e) => e.status === 200 && e.t < stoppedAt).length).toBeGreaterThan(2);
    await r.advance(15 * SECOND);
    expect(assetsNamed(r.cloud, 'inplace.wav')).toHaveLength(1);
    expect(assetCreates(r.cloud)).toHaveLength(1);
  });
});
