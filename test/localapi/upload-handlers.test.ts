// The upload endpoints' own rules, before UploadsUnit is asked: the body's
// shape, the batch cap, the priority words, every path checked before any is
// queued, and the statuses of a cancel or a priority change that cannot be.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApiError, HandlerMap, type Answer } from '../../agent/localapi/handlers.js';
import { MAX_BATCH, registerUploadHandlers } from '../../agent/uploads/upload-handlers.js';
import { AgentError } from '../../agent/lib/errors.js';
import type { UploadPayload } from '../../agent/uploads/upload-item.js';

describe('upload handlers', () => {
  let media: string;
  let queued: Array<{ files: UploadPayload[]; urgent: boolean }>;
  let routes: HandlerMap;
  let fail: unknown;
  beforeEach(() => {
    media = mkdtempSync(path.join(os.tmpdir(), 'upload-handlers-'));
    writeFileSync(path.join(media, 'a.mp4'), 'a');
    writeFileSync(path.join(media, 'b.mp4'), 'bb');
    queued = [];
    fail = undefined;
    routes = new HandlerMap();
    registerUploadHandlers(routes, {
      uploads: {
        queueByHand: async (files, urgent) => {
          if (fail) throw fail;
          queued.push({ files, urgent });
          return files.map((f, i) => ({ path: f.path, id: `id${i}`, duplicate: false }));
        },
        cancel: async (id) => (id === 'done' ? 'done' : id === 'gone' ? 'not-found' : id === 'failed' || id === 'was-cancelled' ? 'ended' : 'cancelled'),
        cancelAll: async () => ['x'],
        setPriority: async (id) => (id === 'gone' ? 'not-found' : id === 'done' ? 'ended' : 'ok'),
      },
      rows: () => [
        { id: 'failed', name: 'f.mp4', path: '/m/f.mp4', state: 'dead-lettered', bytesDone: 0, bytesTotal: 1, priority: 'normal', reason: 'the recording is gone' },
        { id: 'was-cancelled', name: 'c.mp4', path: '/m/c.mp4', state: 'cancelled', bytesDone: 0, bytesTotal: 1, priority: 'normal', reason: 'cancelled: through the local API' },
      ],
      roots: { roots: [media] },
    });
  });
  afterEach(() => rmSync(media, { recursive: true, force: true }));

  async function call(method: string, p: string, body?: unknown): Promise<Answer | ApiError> {
    const m = routes.match(method, p);
    if (m.kind !== 'found') throw new Error(`no route ${method} ${p}`);
    try {
      return await m.handler({ method, path: p, params: m.params, query: new URLSearchParams(), body });
    } catch (err) {
      if (err instanceof ApiError) return err;
      throw err;
    }
  }
  const statusOf = (a: Answer | ApiError): number => ('status' in a ? a.status : 200);

  it('queues a batch with its priority; relative paths are the media dir\'s', async () => {
    const a = await call('POST', '/v1/uploads', { paths: ['a.mp4', path.join(media, 'b.mp4')], priority: 'high' });
    // Each answer carries the path as given; `file` where it led when that differs.
    expect(a).toEqual({ status: 202, body: { uploads: [{ path: 'a.mp4', file: path.join(media, 'a.mp4'), id: 'id0', duplicate: false }, { path: path.join(media, 'b.mp4'), id: 'id1', duplicate: false }] } });
    expect(queued[0]!.urgent).toBe(true);
    expect(queued[0]!.files.map((f) => f.size)).toEqual([1, 2]);
  });

  it('refuses a bad body, a bad priority, too many paths; one refused path and nothing of the batch is queued', async () => {
    for (const body of [undefined, [], { paths: [] }, { paths: 'a.mp4' }, { paths: [1] }]) expect(await call('POST', '/v1/uploads', body)).toMatchObject({ status: 400, kind: 'bad-request' });
    expect(await call('POST', '/v1/uploads', { paths: ['a.mp4'], priority: 'urgent' })).toMatchObject({ status: 400, message: expect.stringContaining('"urgent"') });
    expect(await call('POST', '/v1/uploads', { paths: Array(MAX_BATCH + 1).fill('a.mp4') })).toMatchObject({ status: 413 });
    expect(await call('POST', '/v1/uploads', { paths: ['a.mp4', '/etc/passwd'] })).toMatchObject({ status: 403, kind: 'forbidden', message: expect.stringContaining('nothing was queued') });
    expect(await call('POST', '/v1/uploads', { paths: ['a.mp4', 'missing.mp4'] })).toMatchObject({ status: 404 });
    expect(queued).toEqual([]);
  });

  it('a queue that could not be opened is 503 with its kind, not a bug', async () => {
    fail = new AgentError('unavailable', 'the upload queue could not be opened');
    expect(await call('POST', '/v1/uploads', { paths: ['a.mp4'] })).toMatchObject({ status: 503, kind: 'unavailable' });
  });

  it('cancel and priority: 404 for an unknown upload, 409 for one done or ended, 400 for a missing priority', async () => {
    expect(statusOf(await call('DELETE', '/v1/uploads/x1'))).toBe(200);
    expect(await call('DELETE', '/v1/uploads/gone')).toMatchObject({ status: 404 });
    expect(await call('DELETE', '/v1/uploads/done')).toMatchObject({ status: 409, kind: 'conflict' });
    expect(await call('DELETE', '/v1/uploads')).toEqual({ status: 200, body: { cancelled: ['x'] } });
    expect(statusOf(await call('PATCH', '/v1/uploads/x1', { priority: 'normal' }))).toBe(200);
    expect(await call('PATCH', '/v1/uploads/x1', {})).toMatchObject({ status: 400 });
    expect(await call('PATCH', '/v1/uploads/gone', { priority: 'high' })).toMatchObject({ status: 404 });
    expect(await call('PATCH', '/v1/uploads/done', { priority: 'high' })).toMatchObject({ status: 409 });
  });

  it('an empty id is no upload, never every upload: DELETE /v1/uploads/ (a UI that sent /v1/uploads/${id} with id "") matches no route', () => {
    // The empty segment was dropped, so the path read as DELETE /v1/uploads and cancelled everything not yet done.
    for (const p of ['/v1/uploads/', '/v1//uploads', '//v1/uploads', '/v1/uploads//']) {
      expect(routes.match('DELETE', p)).toEqual({ kind: 'no-path' });
      expect(routes.match('GET', p)).toEqual({ kind: 'no-path' });
    }
    expect(routes.match('DELETE', '/v1/uploads//x1')).toEqual({ kind: 'no-path' });
    expect(routes.match('DELETE', '/v1/uploads')).toMatchObject({ kind: 'found' });
    expect(routes.match('DELETE', '/v1/uploads/x1')).toMatchObject({ kind: 'found', params: { id: 'x1' } });
  });

  it('cancel of an upload that already ended: 409 naming its state when it failed (it was not cancelled), 200 when it was cancelled already', async () => {
    // Before: 200 with the row still dead-lettered, and `c2c-agent cancel` said "cancelled" for an upload that had failed.
    expect(await call('DELETE', '/v1/uploads/failed')).toMatchObject({ status: 409, kind: 'conflict', message: expect.stringContaining('dead-lettered') });
    expect(await call('DELETE', '/v1/uploads/was-cancelled')).toMatchObject({ status: 200, body: { upload: { id: 'was-cancelled', state: 'cancelled' } } });
  });
});
