// Write amplification, for the notes: bytes and flash pages written per
// queued channel-op-sized item (a ~150-byte payload), put and then done.
// Measured through the simulated file system, counting what the outbox
// hands it; pages are the 4 KiB pages each fsync has to write (the bytes
// appended to a file since its previous fsync, rounded out to page
// boundaries) plus one page per directory fsync. The journal is not
// modelled. Only the byte count is asserted; the figures are printed.
import { describe, expect, it } from '@jest/globals';
import type { OutboxFs } from '../../agent/outbox/types.js';
import { Harness } from './harness.js';

const PAGE = 4096;
const ITEMS = 1_000;

/** A channel operation as the channels unit will put it: about 150 bytes of JSON. */
function channelOp(i: number): Record<string, unknown> {
  const op = { channel: `cam-${String(i % 16).padStart(2, '0')}/stream1`, event: i % 2 ? 'disconnect' : 'connect', detectedAt: '2026-01-01T12:34:56.789Z', key: '' };
  op.key = 'k'.repeat(150 - JSON.stringify(op).length);
  return op;
}

class Meter {
  bytes = 0;
  pages = 0;
  fsyncs = 0;
  dirFsyncs = 0;
  private readonly dirty = new Map<string, { from: number; to: number }>();
  private readonly size = new Map<string, number>();

  wrap(fs: OutboxFs): OutboxFs {
    return {
      ...fs,
      append: async (file, data) => {
        await fs.append(file, data);
        const from = this.size.get(file) ?? 0;
        this.size.set(file, from + data.length);
        const d = this.dirty.get(file);
        this.dirty.set(file, { from: d?.from ?? from, to: from + data.length });
        this.bytes += data.length;
      },
      fsync: async (file) => {
        await fs.fsync(file);
        const d = this.dirty.get(file);
        if (d !== undefined) this.pages += Math.floor((d.to - 1) / PAGE) - Math.floor(d.from / PAGE) + 1;
        this.dirty.delete(file);
        this.fsyncs++;
      },
      fsyncDir: async (dir) => {
        await fs.fsyncDir(dir);
        this.pages++;
        this.dirFsyncs++;
      },
    };
  }
}

async function measure(putsPerWindow: number, donesPerWindow: number): Promise<Meter & { payloadBytes: number }> {
  const meter = new Meter();
  const h = new Harness();
  const mount = h.sim.mount.bind(h.sim);
  h.sim.mount = () => meter.wrap(mount());
  const ob = await h.open();
  const ids: string[] = [];
  for (let i = 0; i < ITEMS; i += putsPerWindow) {
    const puts = Array.from({ length: Math.min(putsPerWindow, ITEMS - i) }, (_, j) => ob.put('channel-connect', channelOp(i + j)));
    await h.window();
    ids.push(...(await Promise.all(puts)).map((it) => it.id));
  }
  for (let i = 0; i < ids.length; i += donesPerWindow) {
    const dones = ids.slice(i, i + donesPerWindow).map((id) => ob.done(id));
    await h.window();
    await Promise.all(dones);
  }
  await ob.close();
  expect(ob.stats().liveBytes).toBe(0);
  return Object.assign(meter, { payloadBytes: JSON.stringify(channelOp(0)).length });
}

describe('outbox write amplification (figures for the notes)', () => {
  it.each([
    ['a burst: 1,000 puts in one window, then 1,000 dones in one window', ITEMS, ITEMS],
    ['a trickle: one put per window, then one done per window', 1, 1],
    ['offline: one put per window, then all dones at once when the network returns', 1, ITEMS],
  ])('%s', async (label, putsPerWindow, donesPerWindow) => {
    const m = await measure(putsPerWindow, donesPerWindow);
    const perItem = m.bytes / ITEMS;
    console.log(
      `${label}: ${perItem.toFixed(0)} bytes/item (${(perItem / m.payloadBytes).toFixed(2)}x the ${m.payloadBytes}-byte payload), ` +
        `${(m.pages / ITEMS).toFixed(2)} pages/item (${((m.pages * PAGE) / (ITEMS * m.payloadBytes)).toFixed(1)}x at page level), ` +
        `${m.fsyncs} file fsyncs + ${m.dirFsyncs} dir fsyncs`,
    );
    // A put record (header, keys, id, time, payload) and a done record: nothing copied, nothing rewritten.
    expect(perItem).toBeLessThan(m.payloadBytes + 200);
  });
});
