// Issue 29: what keeps a camera from uploading is never hidden. The
// dispatcher's row of failed attempts per kind (storage or the service
// refusing), the blocks the daemon reports (no media dir, auto-upload off
// with the clips waiting, the window closed until its next opening, uploads
// refused since when and why), each logged once as a warning when it begins,
// and the words `status` and STATUS= say: "1 file waiting", never
// "uploading", while nothing goes.
import { afterEach, describe, expect, it } from '@jest/globals';
import { EventBus } from '../../agent/core/event-bus.js';
import type { KindFailing } from '../../agent/outbox/dispatcher.js';
import type { UploadBlock } from '../../agent/uploads/section.js';
import { createLogger } from '../../agent/lib/logger.js';
import { UploadBlocks, type UploadBlocksDeps } from '../../agent/uploads/upload-blocks.js';
import { blockText, uploadFigures, uploadProgress } from '../../agent/uploads/upload-summary.js';
import { UploadWindow } from '../../agent/uploads/upload-window.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';
import { Rig, err, ok } from '../outbox/dispatcher-fakes.js';

describe('the dispatcher: a kind whose attempts keep failing', () => {
  it('shown from the second failure in a row, since the first, with the last error; ended by a success', async () => {
    let failing = true;
    const r = new Rig();
    r.worker('upload', () => (failing ? { result: 'retry', error: err('server', `storage answered 503 (${r.t})`) } : ok));
    r.worker('channel-sync', () => ok);
    r.outbox.put('upload');
    r.outbox.put('channel-sync');
    const d = await r.running();
    const first = r.clock.now();
    expect(d.view().failing).toBeUndefined();
    await r.clock.advance(5 * 60_000);
    const row = d.view().failing?.upload as KindFailing;
    expect(row).toMatchObject({ since: { monotonic: first, at: new Date(r.clock.wallNow() - (r.clock.now() - first)).toISOString() }, lastError: expect.stringMatching(/^storage answered 503/) });
    expect(row.attempts).toBeGreaterThanOrEqual(2);
    expect(row.lastError).not.toBe('storage answered 503 (0)');
    expect(Object.keys(d.view().failing ?? {})).toEqual(['upload']);
    failing = false;
    await r.clock.advance(10 * 60_000);
    expect(d.view().failing).toBeUndefined();
  });

  it('an attempt that moved its work forward starts the row again', async () => {
    let n = 0;
    const r = new Rig();
    r.worker('upload', () => (++n === 3 ? { result: 'retry', error: err('server', 'moved, then 503'), progressed: true } : { result: 'retry', error: err('server', '503') }));
    r.outbox.put('upload');
    const d = await r.running();
    await r.clock.advance(5_000);
    while (n < 3) await r.clock.advance(5_000);
    expect(d.view().failing).toBeUndefined();
    while (n < 4) await r.clock.advance(5_000);
    expect(d.view().failing?.upload).toMatchObject({ attempts: 2, lastError: '503' });
  });
});

function blocks(o: Partial<UploadBlocksDeps> = {}) {
  const clock = new FakeClock();
  const bus = new EventBus();
  const logs: Array<{ level: number; msg: string; block?: string }> = [];
  const logger = createLogger('debug', { write: (l: string) => void logs.push(JSON.parse(l)) });
  let failing: Record<string, KindFailing> | undefined;
  const u = new UploadBlocks({ mediaDir: '/media/sd', autoUpload: () => true, failing: () => failing, clock, bus, logger, ...o });
  return { u, clock, bus, logs, warned: () => logs.filter((l) => l.level === 40).map((l) => l.block), setFailing: (f: typeof failing) => (failing = f) };
}

describe('what keeps uploads from going', () => {
  it('nothing: an empty list, nothing logged', () => {
    const b = blocks();
    b.u.start();
    expect(b.u.current()).toEqual([]);
    expect(b.logs).toEqual([]);
  });

  it('no media dir; auto-upload off with the clips held back; the window closed until its next opening; uploads refused', () => {
    let auto = false;
    const next = Date.UTC(2026, 0, 1, 22, 0);
    const b = blocks({ mediaDir: undefined, autoUpload: () => auto, held: () => 3, window: { closedNow: () => true, nextOpening: () => next } });
    const since = { at: '2026-01-01T00:00:00.000Z', monotonic: 5 };
    b.setFailing({ upload: { since: { at: '2026-01-01T00:01:00.000Z', monotonic: 60_005 }, attempts: 2, lastError: 'older kind' }, 'realtime-upload': { since, attempts: 3, lastError: 'storage answered 503' }, 'channel-sync': { since, attempts: 9, lastError: 'not an upload' } });
    const list = b.u.current();
    expect(list.map((x) => x.kind)).toEqual(['no-media-dir', 'auto-upload-off', 'window-closed', 'refused']);
    // Without a media dir no clip is found: no count.
    expect(list[1]).toEqual({ kind: 'auto-upload-off' });
    expect(list[2]).toEqual({ kind: 'window-closed', until: { at: new Date(next).toISOString(), monotonic: b.clock.now() + (next - b.clock.wallNow()) } });
    expect(list[3]).toEqual({ kind: 'refused', since, attempts: 5, reason: 'storage answered 503' });
    auto = true;
    expect(blocks({ autoUpload: () => false, held: () => 3 }).u.current()).toEqual([{ kind: 'auto-upload-off', waiting: 3 }]);
  });

  it('each is logged once, as a warning, when it begins; not at every snapshot; again only once it ended and began anew', () => {
    let auto = true;
    const b = blocks({ autoUpload: () => auto, held: () => 0 });
    b.u.start();
    expect(b.warned()).toEqual([]);
    auto = false;
    b.bus.emit('prefsChanged', { prefs: { autoUpload: false } });
    for (let i = 0; i < 10; i++) b.u.onSnapshot();
    b.bus.emit('statusChanged', {});
    expect(b.warned()).toEqual(['auto-upload-off']);
    b.setFailing({ upload: { since: { at: 'x', monotonic: 1 }, attempts: 2, lastError: '503' } });
    b.bus.emit('outboxSettled', {});
    b.bus.emit('outboxSettled', {});
    expect(b.warned()).toEqual(['auto-upload-off', 'refused']);
    expect(b.logs.find((l) => l.block === 'refused')!.msg).toBe('uploads are not going: 2 attempts in a row failed since x; last: 503');
    auto = true;
    b.u.onSnapshot();
    auto = false;
    b.u.onSnapshot();
    expect(b.warned()).toEqual(['auto-upload-off', 'refused', 'auto-upload-off']);
  });
});

describe('the status file and STATUS= are told when a block begins, ends or more clips wait; not at every look', () => {
  it('one statusChanged per change', () => {
    let auto = true;
    let held = 0;
    const b = blocks({ autoUpload: () => auto, held: () => held });
    let told = 0;
    b.bus.on('statusChanged', b, () => told++);
    b.u.start();
    expect(told).toBe(0);
    for (let i = 0; i < 5; i++) b.u.onSnapshot();
    expect(told).toBe(0);
    auto = false;
    b.bus.emit('prefsChanged', { prefs: { autoUpload: false } });
    expect(told).toBe(1);
    held = 1;
    b.u.onSnapshot();
    b.u.onSnapshot();
    expect(told).toBe(2);
    auto = true;
    b.u.onSnapshot();
    expect(told).toBe(3);
  });
});

describe('the words for it (status, STATUS=)', () => {
  const refused: UploadBlock = { kind: 'refused', since: { at: '2026-01-01T00:00:00.000Z', monotonic: 1_000 }, attempts: 4, reason: 'storage answered 503 Service Unavailable to part 1' };
  const figures = { files: 1, bytesLeft: 1_000_000, bytesPerSecond: 5_000 };

  it('storage refusing: "1 file waiting", no rate, never "uploading"; the reason and since when, wall time and ago', () => {
    expect(uploadFigures(figures)).toBe('uploading 1 file, 977 KiB left, 4.9 KiB/s');
    expect(uploadFigures({ ...figures, blocked: [refused] })).toBe('1 file waiting, 977 KiB left');
    expect(blockText(refused, 121_000)).toEqual({ label: 'not sent', text: 'refused: 4 attempts in a row failed since 2026-01-01T00:00:00.000Z (2m00s ago); last: storage answered 503 Service Unavailable to part 1' });
    expect(uploadProgress({ ...figures, blocked: [refused] })).toBe('1 file waiting, 977 KiB left; refused: 4 attempts in a row failed since 2026-01-01T00:00:00.000Z; last: storage answered 503 Service Unavailable to part 1');
  });

  it('no media dir, auto-upload off, the window: said even with nothing queued', () => {
    const until = { at: '2026-01-01T22:00:00.000Z', monotonic: 3_600_000 };
    const blocked: UploadBlock[] = [{ kind: 'no-media-dir' }, { kind: 'auto-upload-off', waiting: 2 }, { kind: 'window-closed', until }];
    expect(uploadProgress({ files: 0, bytesLeft: 0, bytesPerSecond: 0, blocked })).toBe(
      'no media dir; auto-upload off: 2 clips found are not queued until it is on (c2c-agent prefs autoUpload=on); upload window closed until 2026-01-01T22:00:00.000Z: uploads wait for it',
    );
    expect(blockText({ kind: 'window-closed', until }, 0).text).toBe('upload window closed until 2026-01-01T22:00:00.000Z (in 1h00m): uploads wait for it');
    expect(uploadFigures({ files: 2, bytesLeft: 2048, bytesPerSecond: 0, blocked })).toBe('2 files waiting, 2.0 KiB left');
    expect(uploadProgress({ files: 0, bytesLeft: 0, bytesPerSecond: 0 })).toBeUndefined();
  });
});

describe('the upload window: closed, and until when', () => {
  const NOON = Date.UTC(2026, 0, 1, 12, 0);
  const windows: UploadWindow[] = [];
  afterEach(() => windows.splice(0).forEach((w) => w.stop()));
  async function started(cron: string, offset: number | undefined): Promise<{ w: UploadWindow; clock: FakeClock }> {
    const clock = new FakeClock(1_000_000, NOON);
    const w = new UploadWindow({ cron, minutes: 60, source: 'test', clock, clockOffsetMs: () => offset, onOpen: () => undefined, timesyncFlag: '/nonexistent/flag' });
    windows.push(w);
    await w.start();
    return { w, clock };
  }

  it('closed now, with its next opening (looked for a slice at a time); open inside it; not closed while the clock is not known good', async () => {
    const nightly = await started('0 22 * * *', 0);
    expect(nightly.w.closedNow()).toBe(true);
    // Not known at once: looked for without holding the loop, then kept.
    expect(nightly.w.nextOpening()).toBeUndefined();
    expect(await until('the next opening', () => nightly.w.nextOpening())).toBe(Date.UTC(2026, 0, 1, 22, 0));
    // The same answer at once, a minute later.
    await nightly.clock.advance(60_000);
    expect(nightly.w.nextOpening()).toBe(Date.UTC(2026, 0, 1, 22, 0));
    expect((await started('0 12 * * *', 0)).w.closedNow()).toBe(false);
    expect((await started('0 22 * * *', undefined)).w.closedNow()).toBe(false);
    // Nothing within a week: closed, no time said, and not looked for again at once.
    const leap = await started('0 0 29 2 *', 0);
    leap.w.nextOpening();
    await until('the scan over', () => (leap.w as unknown as { scanning?: number }).scanning === undefined);
    expect(leap.w.nextOpening()).toBeUndefined();
    expect((leap.w as unknown as { scanning?: number }).scanning).toBeUndefined();
  });
});
