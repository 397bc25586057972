// The outbox on the real file system, in a temp dir: a round trip, a reopen,
// the modes (0600 files, 0700 dir), and the read-only view the `queue`
// command uses while a daemon is writing: it sees the pending items and
// changes no byte and no mtime of any file.
import { afterAll, describe, expect, it } from '@jest/globals';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FakeClock } from '../support/fake-clock.js';
import { Outbox, readOutbox } from '../../agent/outbox/outbox.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'c2c-outbox-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function outbox(dir: string): Outbox {
  return new Outbox({ dir, clock: new FakeClock(), bootId: 'b00t', segmentBytes: 2_000 });
}

/** Every file under dir with its bytes and mtime, to prove nothing was touched. */
function snapshot(dir: string): Record<string, { bytes: string; mtimeMs: number }> {
  const out: Record<string, { bytes: string; mtimeMs: number }> = {};
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    if (statSync(file).isFile()) out[name] = { bytes: readFileSync(file).toString('base64'), mtimeMs: statSync(file).mtimeMs };
  }
  return out;
}

describe('outbox on the real file system', () => {
  it('round trip: put, progress, done, close, reopen; files 0600 in a 0700 dir', async () => {
    const dir = path.join(tmp, 'a', 'queue');
    const ob = outbox(dir);
    await ob.open();
    const a = ob.put('channel-connect', { camera: 'cam-1' }, { group: 'cam-1', priority: 2 });
    const b = ob.put('upload', { file: 'DCIM/0001.JPG' });
    await ob.flush();
    const [ia, ib] = await Promise.all([a, b]);
    await Promise.all([ob.progress(ib.id, { chunks: 3 }), ob.done(ia.id), ob.flush()]);
    await ob.close();

    expect(statSync(dir).mode & 0o777).toBe(0o700 & ~process.umask());
    const segs = readdirSync(dir);
    expect(segs).toEqual(['seg-000001.log']);
    expect(statSync(path.join(dir, segs[0]!)).mode & 0o777).toBe(0o600);

    const again = outbox(dir);
    await again.open();
    expect(again.pending()).toEqual([expect.objectContaining({ id: ib.id, kind: 'upload', payload: { file: 'DCIM/0001.JPG' }, progress: { chunks: 3 }, state: 'pending' })]);
    expect(again.get(ia.id)).toMatchObject({ state: 'done', group: 'cam-1', priority: 2 });
    const c = again.put('upload', { file: 'DCIM/0002.JPG' });
    await again.close();
    expect((await c).id).not.toBe(ib.id);
    // Each process starts its own segment.
    expect(readdirSync(dir)).toEqual(['seg-000001.log', 'seg-000002.log']);
  });

  it('readOutbox sees what a running outbox wrote, including a half-written tail, and modifies nothing', async () => {
    const dir = path.join(tmp, 'b');
    const ob = outbox(dir);
    await ob.open();
    const puts = Array.from({ length: 30 }, (_, i) => ob.put('channel-connect', { n: i, pad: 'x'.repeat(100) }));
    await ob.flush();
    const items = await Promise.all(puts);
    await Promise.all([ob.done(items[0]!.id), ob.flush()]);
    expect(readdirSync(dir).length).toBeGreaterThan(1);

    const before = snapshot(dir);
    const view = await readOutbox(dir);
    expect(view.items.filter((i) => i.state === 'pending').map((i) => i.id)).toEqual(items.slice(1).map((i) => i.id));
    expect(view.stats.byKind['channel-connect']!.pending.items).toBe(29);
    expect(view.stats.diskBytes).toBe(ob.stats().diskBytes);
    expect(snapshot(dir)).toEqual(before);

    // A record being appended right now: the reader stops before it and leaves it alone.
    const last = readdirSync(dir).sort().at(-1)!;
    appendFileSync(path.join(dir, last), Buffer.from([200, 0, 0, 0, 1, 2, 3]));
    const torn = snapshot(dir);
    const view2 = await readOutbox(dir);
    expect(view2.items.map((i) => i.id)).toEqual(view.items.map((i) => i.id));
    expect(view2.stats.quarantined).toBe(0);
    expect(snapshot(dir)).toEqual(torn);
    await ob.close();
  });

  it('readOutbox while windows are being written: every view is a consistent prefix of what was put', async () => {
    const dir = path.join(tmp, 'c');
    const ob = outbox(dir);
    await ob.open();
    const all: string[] = [];
    let durable = 0;
    for (let round = 0; round < 25; round++) {
      const puts = Array.from({ length: 6 }, (_, i) => ob.put('upload', { round, i, pad: 'y'.repeat(120) }));
      const [view] = await Promise.all([readOutbox(dir), ob.flush()]);
      const seen = view.items.map((i) => i.id);
      // Everything already durable, perhaps some of this window, never anything else, in order.
      expect(seen.length).toBeGreaterThanOrEqual(durable);
      all.push(...(await Promise.all(puts)).map((i) => i.id));
      expect(seen).toEqual(all.slice(0, seen.length));
      durable = all.length;
    }
    await ob.close();
  });

  it('readOutbox on a queue that does not exist is empty and creates nothing', async () => {
    const dir = path.join(tmp, 'never');
    const view = await readOutbox(dir);
    expect(view.items).toEqual([]);
    expect(view.stats).toMatchObject({ diskBytes: 0, liveBytes: 0, oldestPending: null, quarantined: 0 });
    expect(() => statSync(dir)).toThrow();
  });
});
