// core/status-document.ts's reader: status.json is taken field by field, so
// a file from an older agent reads as what it holds, and a garbage one, or a
// section of the wrong shape, is refused or dropped, never cast.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { StatusDocument } from '../../agent/core/status-document.js';
import { readStatusDocument as statusDocumentOf } from '../../agent/daemon/status-reader.js';
import { readStatus, statusFile } from '../../agent/daemon/runtime/status-file.js';

const moment = (monotonic: number) => ({ at: new Date(1_800_000_000_000 + monotonic).toISOString(), monotonic });

/** A snapshot as the controller (daemon/snapshot.ts) writes it. */
const snapshot = {
  state: 'online',
  reason: 'heartbeat ok',
  since: moment(1_000),
  pid: 4242,
  procStart: '123456',
  started: moment(0),
  consecutiveFailures: 0,
  firmwareVersion: '1.2.3',
  agentVersion: '0.1.0',
  timeScale: 1,
  updated: moment(5_000),
  profile: 'multi-av-tc',
  device: { id: 'dev-1', name: 'cam-07', status: 'active' },
  project: { id: 'p-1', name: 'Testbed' },
  lastHeartbeat: { ...moment(4_000), result: 'ok', status: 204 },
  rateLimit: { limit: 60, remaining: 59, windowMs: 60_000 },
  clockOffsetMs: -120,
  nextHeartbeat: moment(64_000),
} satisfies StatusDocument;

/** Every section, as the units write them. */
const sections = {
  queue: {
    byKind: { upload: { pending: { items: 1, bytes: 300 }, done: { items: 2, bytes: 600 }, dead: { items: 0, bytes: 0 }, dropped: { items: 0, bytes: 0 } } },
    oldestPending: '2026-11-23T00:00:00.000Z',
    dropped: {},
    quarantined: 0,
    diskBytes: 4096,
    unwritten: 0,
    liveBytes: 300,
    inFlight: ['b:1'],
    attempts: { 'b:1': { count: 2, lastError: 'HTTP 503' } },
    waitingUntil: 70_000,
  },
  channels: { detected: ['audio', 'video'], known: null, pendingSyncs: 1 },
  uploads: { files: 1, bytesLeft: 300, bytesPerSecond: 0, skipped: { entries: [{ name: 'other', reason: "a folder that is not a channel's" }], more: 0 } },
} satisfies Partial<StatusDocument>;

describe('statusDocumentOf', () => {
  it('a document as the daemon writes it reads back whole', () => {
    const doc = { ...snapshot, ...sections };
    expect(statusDocumentOf(JSON.parse(JSON.stringify(doc)))).toEqual(doc);
  });

  it('an older agent\'s file, a snapshot without sections, reads as it is', () => {
    const read = statusDocumentOf(JSON.parse(JSON.stringify(snapshot)));
    expect(read).toEqual(snapshot);
    expect(read).not.toHaveProperty('channels');
    expect(read).not.toHaveProperty('queue');
    expect(read).not.toHaveProperty('uploads');
  });

  it('an older agent\'s file names the queue `outbox`: it reads as `queue`', () => {
    const { queue, ...rest } = sections;
    const read = statusDocumentOf(JSON.parse(JSON.stringify({ ...snapshot, ...rest, outbox: queue })));
    expect(read).toEqual({ ...snapshot, ...sections });
    expect(read).not.toHaveProperty('outbox');
  });

  it('`device` is always there: null when the file has none (needs-pairing) or one without an id', () => {
    const { device: _d, ...noDevice } = snapshot;
    for (const raw of [noDevice, { ...noDevice, device: null }, { ...noDevice, device: { name: 'cam-07' } }]) {
      const read = statusDocumentOf({ ...raw, state: 'needs-pairing' });
      expect(read).toHaveProperty('device', null);
      expect(read?.state).toBe('needs-pairing');
    }
  });

  it('garbage, or a snapshot missing a required field, is not a status document', () => {
    const { since: _since, ...noSince } = snapshot;
    for (const raw of [null, 5, 'x', [], {}, { pid: 1e400, procStart: 'x', state: 5 }, { pid: -1 }, { state: 'online', pid: 1, procStart: 0, since: null }, noSince]) {
      expect({ raw, doc: statusDocumentOf(raw) }).toEqual({ raw, doc: undefined });
    }
    for (const bad of [{ state: 'dancing' }, { pid: 0 }, { pid: 1.5 }, { pid: '4242' }, { updated: { at: 'x' } }, { timeScale: null }, { consecutiveFailures: -1 }]) {
      expect({ bad, doc: statusDocumentOf({ ...snapshot, ...bad }) }).toEqual({ bad, doc: undefined });
    }
  });

  it('a section of the wrong shape is dropped whole, the others and the snapshot kept', () => {
    const cases: Array<[string, Record<string, unknown>]> = [
      ['channels', { ...sections, channels: { detected: 'audio', known: null, pendingSyncs: 1 } }],
      ['channels', { ...sections, channels: { detected: ['audio', 5], known: null, pendingSyncs: 1 } }],
      ['channels', { ...sections, channels: { detected: [], known: null } }],
      ['queue', { ...sections, queue: { ...sections.queue, byKind: { upload: { pending: { items: '1', bytes: 300 } } } } }],
      ['queue', { ...sections, queue: { ...sections.queue, inFlight: null } }],
      ['queue', { ...sections, queue: [] }],
      ['uploads', { ...sections, uploads: { files: '3', bytesLeft: 0, bytesPerSecond: 0 } }],
      ['uploads', { ...sections, uploads: null }],
    ];
    for (const [dropped, doc] of cases) {
      const read = statusDocumentOf(JSON.parse(JSON.stringify({ ...snapshot, ...doc })));
      const expected: Record<string, unknown> = { ...snapshot, ...sections };
      delete expected[dropped];
      expect({ dropped, read }).toEqual({ dropped, read: expected });
    }
  });

  it('a wrong optional part is dropped alone: the skipped list, a device without id (null), a clock offset that is not a number', () => {
    const read = statusDocumentOf({
      ...snapshot,
      ...sections,
      uploads: { ...sections.uploads, skipped: { entries: [{ name: 5, reason: 'x' }], more: 0 } },
      device: { name: 'cam-07' },
      clockOffsetMs: 'a lot',
      waitingUntil: 5,
    });
    const { device: _d, clockOffsetMs: _c, ...rest } = snapshot;
    const { skipped: _s, ...uploads } = sections.uploads;
    expect(read).toEqual({ ...rest, device: null, ...sections, uploads });
  });

  it('the recordings of real-time uploads read back; a list with a bad entry is dropped alone', () => {
    const recording = [{ name: 'take.mov', bytesOnDisk: 100, bytesSent: 64, idleSeconds: 0, finishedInSeconds: 1800 }];
    const doc = { ...snapshot, ...sections, uploads: { ...sections.uploads, recording } };
    expect(statusDocumentOf(JSON.parse(JSON.stringify(doc)))).toEqual(doc);
    const bad = statusDocumentOf({ ...doc, uploads: { ...doc.uploads, recording: [...recording, { name: 'x.mov', bytesOnDisk: -1, bytesSent: 0, idleSeconds: 0, finishedInSeconds: 0 }] } });
    expect(bad?.uploads).toEqual(sections.uploads);
  });

  it('what this agent does not know is not read: an unknown section, an unknown field, a map key "__proto__" stays a key', () => {
    const raw = JSON.parse(`{"extra":{"x":1},"secretish":"y",${JSON.stringify({ ...snapshot, ...sections }).slice(1).replace('"dropped":{}', '"dropped":{"__proto__":3}')}`) as unknown;
    const read = statusDocumentOf(raw);
    expect(read).not.toHaveProperty('extra');
    expect(read).not.toHaveProperty('secretish');
    expect(Object.getPrototypeOf(read?.queue?.dropped)).toBe(Object.prototype);
    expect(Object.entries(read?.queue?.dropped ?? {})).toEqual([['__proto__', 3]]);
  });
});

describe('readStatus', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'c2c-statusdoc-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('garbage on disk: not JSON, or not a status file; a good file: the document', () => {
    writeFileSync(statusFile(dir), '{"state": "onl');
    expect(readStatus(dir)).toEqual({ kind: 'unreadable', error: 'not JSON' });
    for (const text of ['null', '[]', '{}', '{"state":"online","pid":1}']) {
      writeFileSync(statusFile(dir), text);
      expect(readStatus(dir)).toEqual({ kind: 'unreadable', error: 'not a status file' });
    }
    writeFileSync(statusFile(dir), JSON.stringify({ ...snapshot, channels: 'x' }));
    expect(readStatus(dir)).toEqual({ kind: 'ok', doc: snapshot });
  });
});
