// Issue 29 on GET /v1/events: an `upload` line that goes backwards (from
// uploading to queued after a failed attempt, or fewer bytes done) carries
// its reason: the item's own, else the last failed attempt's error from the
// queue section of the status document; a line going forwards adds none.
import { describe, expect, it } from '@jest/globals';
import { EventBus } from '../../agent/core/event-bus.js';
import type { DaemonSnapshot } from '../../agent/core/state.js';
import { statusDocument } from '../../agent/core/status-document.js';
import type { QueueSection } from '../../agent/outbox/queue-section.js';
import { EventsHub } from '../../agent/localapi/events.js';
import type { StreamSink } from '../../agent/localapi/handlers.js';
import type { UploadRow } from '../../agent/uploads/upload-rows.js';
import { FakeClock } from '../support/fake-clock.js';

const moment = { at: '2026-01-01T00:00:00.000Z', monotonic: 1 };
const snap: DaemonSnapshot = { state: 'online', reason: 'ok', since: moment, pid: 1, started: moment, consecutiveFailures: 0, firmwareVersion: '1.0.0', agentVersion: '0.0.0', timeScale: 1, updated: moment };

describe('events: an upload line going backwards says why', () => {
  it('uploading -> queued after a failure: the attempt\'s error; fewer bytes: the same; no error known: a reason all the same; forwards: none', async () => {
    const bus = new EventBus();
    const clock = new FakeClock();
    let rows: UploadRow[] = [];
    let attempts: QueueSection['attempts'] = {};
    const queue: QueueSection = { byKind: {}, oldestPending: null, dropped: {}, quarantined: 0, diskBytes: 0, unwritten: 0, liveBytes: 0, inFlight: [], attempts: {} };
    const hub = new EventsHub({ bus, clock, status: () => statusDocument(snap, { queue: { ...queue, attempts } }), uploads: () => rows });
    hub.start();
    const lines: Array<Record<string, unknown>> = [];
    const sink: StreamSink = { send: (o) => (lines.push(o as Record<string, unknown>), true), end: () => undefined, buffered: 0, onClose: () => undefined };
    const row = (state: UploadRow['state'], bytesDone: number, reason?: string): UploadRow => ({ id: 'b:1', name: 'a.mp4', path: '/m/a.mp4', state, bytesDone, bytesTotal: 10, priority: 'normal', ...(reason !== undefined && { reason }) });
    const next = async (r: UploadRow): Promise<Record<string, unknown>> => {
      rows = [r];
      bus.emit('outboxSettled', {});
      await clock.advance(1_000);
      return lines.at(-1)!;
    };
    rows = [row('queued', 0)];
    hub.attach(sink);
    expect(await next(row('uploading', 4))).not.toHaveProperty('reason');
    attempts = { 'b:1': { count: 1, lastError: 'storage answered 503 to part 2' } };
    expect(await next(row('queued', 4))).toMatchObject({ type: 'upload', state: 'queued', reason: 'storage answered 503 to part 2' });
    expect(await next(row('uploading', 6))).not.toHaveProperty('reason');
    attempts = { 'b:1': { count: 2, lastError: 'the asset expired; begun again' } };
    expect(await next(row('uploading', 0))).toMatchObject({ state: 'uploading', bytesDone: 0, reason: 'the asset expired; begun again' });
    expect(await next(row('uploading', 3))).not.toHaveProperty('reason');
    attempts = {};
    expect(await next(row('queued', 3))).toMatchObject({ state: 'queued', reason: expect.any(String) });
    // An ended item's own reason, as before.
    expect(await next(row('dead-lettered', 3, 'gave up after 50 attempts: 503'))).toMatchObject({ reason: 'gave up after 50 attempts: 503' });
    await hub.stop();
  });
});
