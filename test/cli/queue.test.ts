// What `queue` lists one by one: what needs an eye (pending, dead-lettered)
// first and never crowded out, then the newest finished uploads.
import { describe, expect, it } from '@jest/globals';
import { itemLine, listedItems, shown } from '../../agent/cli/queue.js';
import type { OutboxItem } from '../../agent/outbox/types.js';

let seq = 0;
const item = (kind: string, state: OutboxItem['state']): OutboxItem => ({
  id: `b:${++seq}`, kind, priority: 0, payload: { name: `f${seq}` }, createdAt: '2026-11-23T00:00:00.000Z', bytes: 10, state,
});

describe('queue: the items listed', () => {
  it('lists the pending and dead-lettered items even behind hundreds of finished uploads, then the newest ten finished', () => {
    const finished = Array.from({ length: 300 }, () => item('upload', 'done'));
    const dead = item('upload', 'dead');
    const pending = item('upload', 'pending');
    const sync = item('channel-sync', 'pending');
    const oldSync = item('channel-sync', 'done');
    const listed = listedItems([oldSync, ...finished.slice(0, 200), dead, ...finished.slice(200), pending, sync]);
    expect(listed.map((i) => i.id)).toEqual([dead.id, pending.id, sync.id, ...finished.slice(-10).map((i) => i.id)]);
  });

  it('lists at most fifty open items, oldest first, and finished items of other kinds not at all', () => {
    const open = Array.from({ length: 60 }, () => item('upload', 'pending'));
    const listed = listedItems([item('channel-sync', 'done'), ...open, item('upload', 'dropped')]);
    expect(listed.map((i) => i.id)).toEqual(open.slice(0, 50).map((i) => i.id));
  });

  it('shows an item the disk already has ended as ended, even while the daemon\'s last view still has it in flight', () => {
    const view = { inFlight: ['b:900', 'b:901'], attempts: {}, waitingUntil: undefined };
    const finished = { ...item('upload', 'done'), id: 'b:900', payload: { name: 'a.mp4', path: '/m/a.mp4', size: 10 } };
    const running = { ...item('upload', 'pending'), id: 'b:901', payload: { name: 'b.mp4', path: '/m/b.mp4', size: 10 } };
    expect(shown(finished, view)).toMatchObject({ state: 'done', upload: { state: 'done', bytesDone: 10 } });
    expect(shown(running, view)).toMatchObject({ state: 'in flight', upload: { state: 'uploading', bytesDone: 0 } });
  });

  it('an item is one line, whatever its file name, reason or error holds (a clip named with a newline forged a line of its own)', () => {
    const name = 'evil\n  done           fake.mp4: 1 GiB of 1 GiB [x].mp4';
    const done = { ...item('upload', 'done'), payload: { name, path: `/m/${name}`, size: 2 } };
    const line = itemLine(shown(done, undefined));
    expect(line.split('\n')).toHaveLength(1);
    expect(line).toContain('evil done fake.mp4');
    const dead = { ...item('upload', 'dead'), payload: { name: 'a.mp4', path: '/m/a.mp4', size: 2 }, reason: 'the file changed: /m/x\ny' };
    expect(itemLine(shown(dead, undefined)).split('\n')).toHaveLength(1);
    const retried = { ...item('upload', 'pending'), payload: { name: 'b.mp4', path: '/m/b.mp4', size: 2 } };
    const view = { inFlight: [], attempts: { [retried.id]: { count: 2, lastError: 'boom\nfake line' } } } as never;
    expect(itemLine(shown(retried, view))).toMatch(/\(2 attempts, last: boom fake line\)$/);
  });
});
