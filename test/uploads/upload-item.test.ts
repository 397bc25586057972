// The upload item's progress record: finished parts written as runs (and
// read back, with records of the older plain-list form), and the view
// `queue` and `status` take from it: bytes done, total and the state.
import { describe, expect, it } from '@jest/globals';
import { PAUSED_REFUSED, UPLOAD_KIND, bytesDone, decodeParts, encodeParts, uploadView, type UploadPayload, type UploadProgress } from '../../agent/uploads/upload-item.js';
import type { OutboxItem } from '../../agent/outbox/types.js';
import { REALTIME_KIND, type RealtimePayload } from '../../agent/uploads/realtime-item.js';

const payload = (size: number): UploadPayload => ({ path: '/media/clip.mp4', name: 'clip.mp4', filetype: 'video/mp4', size, mtimeMs: 1, ino: 7, dev: 1 });
const item = (size: number, progress: unknown, state: OutboxItem['state'] = 'pending', reason?: string): OutboxItem => ({
  id: 'b:1', kind: UPLOAD_KIND, priority: 0, payload: payload(size), createdAt: '2026-11-23T00:00:00.000Z', bytes: 100, state, ...(progress !== undefined && { progress }), ...(reason !== undefined && { reason }),
});

describe('finished parts as runs', () => {
  it('writes runs and single parts in order, and reads them back', () => {
    expect(encodeParts([])).toEqual([]);
    expect(encodeParts([5, 0, 1, 2, 7, 8, 3])).toEqual([[0, 3], 5, [7, 8]]);
    const parts = new Set([...Array(1640).keys()].filter((i) => i !== 900));
    const runs = encodeParts(parts);
    expect(runs).toEqual([[0, 899], [901, 1639]]);
    expect(decodeParts(runs, 1640)).toEqual(parts);
    // A record stays a few bytes however long the file: what made every progress record longer than the last.
    expect(JSON.stringify(runs).length).toBeLessThan(30);
  });

  it('reads the plain list older records hold, and ignores what is not a part number or a run', () => {
    expect([...decodeParts([0, 1, 2, 4], 10)]).toEqual([0, 1, 2, 4]);
    expect([...decodeParts([1, 'x', [3], [5, 6, 7], [2.5, 3], null, [8, 9]], 10)].sort((a, b) => a - b)).toEqual([1, 8, 9]);
    expect(decodeParts(undefined, 10).size).toBe(0);
    expect(decodeParts({ 0: 1 }, 10).size).toBe(0);
    // Only the asset's parts: a run reaching far past them is cut, not walked.
    expect([...decodeParts([-5, [-3, 1], [8, 1e15], 12], 10)].sort((a, b) => a - b)).toEqual([0, 1, 8, 9]);
    expect(decodeParts([[0, 3]], Number.NaN).size).toBe(0);
    expect(decodeParts([[0, 1e15]], 1e15).size).toBe(0); // no asset has that many parts
    // Overlapping runs are merged before they are walked: thousands of copies of one long run cost one walk.
    const copies = Array.from({ length: 6000 }, () => [0, 9998]);
    expect(decodeParts(copies, 10_000).size).toBe(9999);
    expect(bytesDone(item(10_000, { assetId: 'a', parts: 10_000, createdAt: 0, done: copies }))).toBe(9999);
  });
});

describe('the upload as queue and status show it', () => {
  it('counts the bytes of the finished parts, the last one short', () => {
    // 10 bytes in 3 parts: 4, 4, 2.
    const prog = (done: unknown): UploadProgress => ({ assetId: 'a', parts: 3, createdAt: 0, done: done as UploadProgress['done'] });
    expect(bytesDone(item(10, undefined))).toBe(0);
    expect(bytesDone(item(10, null))).toBe(0);
    expect(bytesDone(item(10, prog([2])))).toBe(2);
    expect(bytesDone(item(10, prog([[0, 1]])))).toBe(8);
    expect(bytesDone(item(10, prog([[0, 2]])))).toBe(10);
    expect(bytesDone(item(10, prog([0, 1, 2])))).toBe(10);
    // Part numbers beyond the asset's are not bytes of it.
    expect(bytesDone(item(10, prog([[0, 9]])))).toBe(10);
    expect(bytesDone(item(10, { assetId: 'a', parts: 0, done: [0] }))).toBe(0);
    expect(bytesDone(item(10, prog([]), 'done'))).toBe(10);
  });

  it('names each state the local API has: queued, uploading, done, paused-refused, dead-lettered (a dropped item too)', () => {
    const prog: UploadProgress = { assetId: 'a', parts: 2, createdAt: 0, done: [0] };
    expect(uploadView(item(10, prog), false)).toEqual({ name: 'clip.mp4', path: '/media/clip.mp4', bytesDone: 5, bytesTotal: 10, state: 'queued' });
    expect(uploadView(item(10, prog), true)?.state).toBe('uploading');
    expect(uploadView(item(10, prog, 'done'), false)).toMatchObject({ bytesDone: 10, state: 'done' });
    expect(uploadView(item(10, undefined, 'dead', `${PAUSED_REFUSED}: HTTP 409 Channel Paused`), false)?.state).toBe('paused-refused');
    expect(uploadView(item(10, undefined, 'dead', 'the file is gone (ENOENT)'), false)?.state).toBe('dead-lettered');
    // The contract's list has no 'dropped': an item the queue's cap dropped is dead-lettered (its reason says why).
    expect(uploadView(item(10, undefined, 'dropped'), false)?.state).toBe('dead-lettered');
    expect(uploadView({ ...item(10, undefined), kind: 'channel-sync' }, false)).toBeUndefined();
  });

  it('a recording is listed where the recorder writes it, and at its finished name once finished', () => {
    const payload: RealtimePayload = { path: '/media/take.mov.part', finalPath: '/media/take.mov', name: 'take.mov', filetype: 'video/quicktime', ino: 7, dev: 1, mtimeMs: 1 };
    const rec = (state: OutboxItem['state']): OutboxItem => ({ id: 'b:1', kind: REALTIME_KIND, priority: 0, payload, createdAt: '', bytes: 1, state });
    expect(uploadView(rec('pending'), true)).toMatchObject({ path: '/media/take.mov.part', realtime: 'recording' });
    expect(uploadView(rec('done'), false)).toMatchObject({ path: '/media/take.mov', realtime: 'finished', state: 'done' });
  });
});
