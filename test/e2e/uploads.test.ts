// Uploads end to end in agent time (rig.ts): the daemon in-process with the
// fake cloud's storage over the same wire (agent/api/storage.ts's seam). A
// clip is taken once it held still for the settle time, within the bounds
// its looks and the group commit set, and
// stored once, byte-identical; one written to without pause is never taken
// while it grows. (Uploads through kills, the socket, the CLI: integration/.)
import { createHash } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { WATCH_COALESCE_MS } from '../../agent/lib/dir-watcher.js';
import { OUTBOX_DEFAULTS } from '../../agent/outbox/types.js';
import { MEDIA_RESCAN_MS } from '../../agent/uploads/media-watcher.js';
import type { AssetView } from '../fake-cloud/index.js';
import { MINUTE, Rig, SECOND } from './rig.js';

const PART = 256 * 1024;
const ASSETS = '/v2/devices/assets';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/**
 * From a clip's last write to its asset's create: the look its watch event
 * brings (WATCH_COALESCE_MS), the settle time held, the rescan that finds it
 * held (at most MEDIA_RESCAN_MS later), the group commit before the dispatcher
 * runs it. The bounds of the mechanism, not slack.
 */
const takenAfter = (settleMs: number) => ({
  min: WATCH_COALESCE_MS + settleMs,
  max: WATCH_COALESCE_MS + settleMs + MEDIA_RESCAN_MS + OUTBOX_DEFAULTS.flushMs,
});

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** Problems with an asset against the file's bytes, by the service's split (docs/service-api.md, "Uploads"): empty when complete and identical. */
function problems(a: AssetView | undefined, data: Buffer): string[] {
  if (a === undefined) return ['no asset'];
  const out: string[] = [];
  if (!a.complete) out.push(`incomplete ${a.bytesReceived}/${a.filesize}`);
  if (a.filesize !== data.length) out.push(`filesize ${a.filesize}, file ${data.length}`);
  const chunk = Math.ceil(data.length / a.parts.length);
  a.parts.forEach((p, i) => {
    const bytes = data.subarray(i * chunk, Math.min(data.length, (i + 1) * chunk));
    if (p.receivedBytes !== bytes.length || p.sha256 !== sha256(bytes)) out.push(`part ${p.key} differs`);
  });
  return out;
}

describe('uploads in agent time', () => {
  it('a clip is taken once it held still for the settle time, and stored once, byte-identical', async () => {
    const r = (rig = await Rig.up({ cloud: { uploadPartBytes: PART } }));
    r.start({ ...r.mediaEnv(10) });
    await r.until('online', () => r.state() === 'online', MINUTE);
    const writtenAt = r.now();
    const data = r.writeMedia('take-001.mp4', 3 * PART + 1000);
    const stored = await r.until('the clip stored', () => r.cloud.assets().some((a) => a.name === 'take-001.mp4' && a.complete), 5 * MINUTE);
    const created = r.entries('POST', ASSETS);
    expect(created).toHaveLength(1);
    // Seen by the look its watch event brings, ready at the first look once it held still for the settle
    // time (10 s), put in the queue with the next group commit.
    expect(created[0]!.t - writtenAt).toBeGreaterThanOrEqual(takenAfter(10 * SECOND).min);
    expect(created[0]!.t - writtenAt).toBeLessThanOrEqual(takenAfter(10 * SECOND).max);
    const [asset] = r.cloud.assets();
    expect(problems(asset, data)).toEqual([]);
    expect(stored).toBeGreaterThanOrEqual(created[0]!.t);
    expect(asset!.parts).toHaveLength(4);
    // Each part went once.
    expect(r.entries('PUT').filter((e) => e.path.startsWith('/_storage/')).map((e) => e.status)).toEqual([200, 200, 200, 200]);
    await r.advance(5 * MINUTE);
    expect(r.cloud.assets()).toHaveLength(1);
    expect(r.status()?.queue?.byKind.upload?.done?.items).toBe(1);
  });

  it('a clip written to every 2.4 s with a settle time of 60 s is never taken while it grows, then once', async () => {
    const r = (rig = await Rig.up({ cloud: { uploadPartBytes: PART } }));
    r.start({ ...r.mediaEnv(60) });
    await r.until('online', () => r.state() === 'online', MINUTE);
    const file = join(r.media, 'growing.mp4');
    const parts = [r.writeMedia('growing.mp4', 64 * 1024)];
    for (let i = 0; i < 100; i++) {
      await r.advance(2_400);
      const more = Buffer.alloc(32 * 1024, i);
      appendFileSync(file, more);
      parts.push(more);
    }
    const lastWrite = r.now();
    expect(r.entries('POST', ASSETS)).toEqual([]);
    await r.until('the clip stored', () => r.cloud.assets().some((a) => a.complete), 5 * MINUTE);
    const created = r.entries('POST', ASSETS);
    expect(created).toHaveLength(1);
    expect(created[0]!.t - lastWrite).toBeGreaterThanOrEqual(takenAfter(60 * SECOND).min);
    expect(created[0]!.t - lastWrite).toBeLessThanOrEqual(takenAfter(60 * SECOND).max);
    expect(problems(r.cloud.assets()[0], Buffer.concat(parts))).toEqual([]);
  });
});
