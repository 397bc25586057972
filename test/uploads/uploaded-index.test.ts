// The index of finished uploads: a round trip through <state-dir>/uploaded.json
// (0600, written only by add), the bound and its watermark, and a corrupt
// file set aside with one warning and a watermark at its mtime. Recordings
// ended for good before they finished: kept by inode and finished path (one
// write), replaced by their finished file's entry once it is seen, bounded.
import { afterAll, describe, expect, test } from '@jest/globals';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLogger } from '../../agent/lib/logger.js';
import { AgentError } from '../../agent/lib/errors.js';
import { MAX_ENTRIES, MAX_RECORDINGS, UPLOADED_INDEX_FILE, UploadedIndex, type FileIdentity } from '../../agent/uploads/uploaded-index.js';

const dirs: string[] = [];
function stateDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'c2c-uploaded-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const file = (ino: number, mtimeMs: number, size = 1000, dev = 2049): FileIdentity => ({ dev, ino, size, mtimeMs });

function logged(): { logger: ReturnType<typeof createLogger>; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  return { lines, logger: createLogger('debug', { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) }) };
}

async function loaded(dir: string, opts: ConstructorParameters<typeof UploadedIndex>[1] = {}): Promise<UploadedIndex> {
  const index = new UploadedIndex(dir, opts);
  await index.load();
  return index;
}

describe('UploadedIndex', () => {
  test('round trip: what was added is known after a restart, a changed file is not', async () => {
    const dir = stateDir();
    const a = await loaded(dir);
    const f1 = file(11, 1_767_225_600_123.456);
    const f2 = file(12, 1_767_225_700_000, 5_000_000_000);
    expect(a.has(f1)).toBe(false);
    await a.add(f1);
    await a.add(f2);
    expect(a.has(f1) && a.has(f2)).toBe(true);

    const b = await loaded(dir);
    expect(b.size).toBe(2);
    expect(b.has(f1)).toBe(true);
    expect(b.has(f2)).toBe(true);
    expect(b.watermarkMs).toBeUndefined();
    for (const changed of [{ ...f1, size: 1001 }, { ...f1, mtimeMs: f1.mtimeMs + 1 }, { ...f1, ino: 99 }]) expect(b.has(changed)).toBe(false);
    // The same clip on a card that was remounted (a new device number) is still known.
    expect(b.has({ ...f1, dev: 2050 })).toBe(true);
  });

  test('the file is mode 0600 and only add writes it', async () => {
    const dir = stateDir();
    const a = await loaded(dir);
    expect(readdirSync(dir)).toEqual([]);
    await a.add(file(1, 1000));
    const target = path.join(dir, UPLOADED_INDEX_FILE);
    expect(statSync(target).mode & 0o777).toBe(0o600);
    const before = statSync(target);
    await loaded(dir);
    // A known file again: nothing new to remember, nothing written.
    await a.add(file(1, 1000));
    const after = statSync(target);
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
    expect(readdirSync(dir)).toEqual([UPLOADED_INDEX_FILE]);
  });

  test('concurrent adds all reach the file', async () => {
    const dir = stateDir();
    const a = await loaded(dir);
    await Promise.all(Array.from({ length: 20 }, (_, i) => a.add(file(100 + i, 5000 + i))));
    const b = await loaded(dir);
    expect(b.size).toBe(20);
    for (let i = 0; i < 20; i++) expect(b.has(file(100 + i, 5000 + i))).toBe(true);
  });

  test('bounded: the oldest mtimes are dropped and the watermark covers them', async () => {
    expect(MAX_ENTRIES).toBe(5000);
    const dir = stateDir();
    const a = await loaded(dir, { maxEntries: 3 });
    // A clip from a camera whose clock runs years ahead must not drag the watermark along.
    const future = file(9, 4_102_444_800_000);
    await a.add(future);
    await a.add(file(1, 300));
    await a.add(file(2, 100));
    expect(a.watermarkMs).toBeUndefined();
    await a.add(file(3, 200));
    expect(a.size).toBe(3);
    expect(a.watermarkMs).toBe(100);
    expect(a.has(file(2, 100))).toBe(true);
    // Never seen, but older than the watermark: taken as done, never sent again.
    expect(a.has(file(77, 50))).toBe(true);
    expect(a.has(file(77, 150))).toBe(false);
    await a.add(file(4, 400));
    expect(a.watermarkMs).toBe(200);
    expect(a.has(future)).toBe(true);

    const b = await loaded(dir, { maxEntries: 3 });
    expect(b.size).toBe(3);
    expect(b.watermarkMs).toBe(200);
    for (const f of [file(1, 300), file(4, 400), future, file(2, 100), file(3, 200)]) expect(b.has(f)).toBe(true);
    expect(b.has(file(78, 250))).toBe(false);
    // A file at or below the watermark is not stored: it is known already.
    await b.add(file(79, 150));
    expect(b.size).toBe(3);
  });

  test('a lower bound on load trims what was stored', async () => {
    const dir = stateDir();
    const a = await loaded(dir);
    for (let i = 1; i <= 5; i++) await a.add(file(i, i * 100));
    const b = await loaded(dir, { maxEntries: 2 });
    expect(b.size).toBe(2);
    expect(b.watermarkMs).toBe(300);
  });

  test.each([
    ['not JSON', '{"version":1,"entries":[[1,2,'],
    ['another shape', '{"version":1,"watermarkMs":null,"entries":[["a",2,3,4]]}'],
    ['another version', '{"version":2,"watermarkMs":null,"entries":[]}'],
    ['recordings of another shape', '{"version":1,"watermarkMs":null,"entries":[],"recordings":[[42,"/media/take.mov"]]}'],
    ['empty', ''],
  ])('a corrupt file (%s) is set aside with one warning; files older than it count as done', async (_, text) => {
    const dir = stateDir();
    const target = path.join(dir, UPLOADED_INDEX_FILE);
    writeFileSync(target, text);
    const mtimeMs = Date.UTC(2026, 5, 1, 12);
    utimesSync(target, mtimeMs / 1000, mtimeMs / 1000);
    const { logger, lines } = logged();
    const a = await loaded(dir, { logger });
    expect(lines.filter((l) => l.level === 40)).toHaveLength(1);
    expect(readFileSync(`${target}.corrupt`, 'utf8')).toBe(text);
    expect(a.size).toBe(0);
    expect(a.watermarkMs).toBe(mtimeMs);
    expect(a.has(file(5, mtimeMs - 1))).toBe(true);
    expect(a.has(file(5, mtimeMs + 1))).toBe(false);

    // The fresh index went to disk: a restart before the next upload keeps the watermark, quietly.
    expect(statSync(target).mode & 0o777).toBe(0o600);
    const again = logged();
    const b = await loaded(dir, { logger: again.logger });
    expect(b.watermarkMs).toBe(mtimeMs);
    expect(again.lines.filter((l) => l.level === 40)).toHaveLength(0);
  });

  test('a recording cancelled or refused: kept across restarts by inode and finished path (one write), then as its finished file', async () => {
    const dir = stateDir();
    const target = path.join(dir, UPLOADED_INDEX_FILE);
    const a = await loaded(dir);
    const rec = { ino: 42, finalPath: '/media/take.mov' };
    await a.addRecording(rec);
    const written = statSync(target);
    // Again: nothing new, nothing written.
    await a.addRecording(rec);
    expect(statSync(target).mtimeMs).toBe(written.mtimeMs);
    expect(readFileSync(target, 'utf8')).not.toContain('take.mov');

    const b = await loaded(dir);
    expect(b.hasRecording(rec)).toBe(true);
    // Another finished name, or another inode, is another recording; a remounted card's new device number is not asked.
    expect(b.hasRecording({ ino: 42, finalPath: '/media/takeB.mov' })).toBe(false);
    expect(b.hasRecording({ ino: 43, finalPath: '/media/take.mov' })).toBe(false);
    expect(b.size).toBe(0);

    // Its finished file seen: an entry like a cancelled whole file's, the recording forgotten.
    const done = file(42, 9_000, 5_000);
    await b.recordingFinished(rec, done);
    const c = await loaded(dir);
    expect(c.hasRecording(rec)).toBe(false);
    expect(c.has(done)).toBe(true);
    expect(c.has({ ...done, mtimeMs: 9_001 })).toBe(false);
    expect(JSON.parse(readFileSync(target, 'utf8'))).not.toHaveProperty('recordings');
  });

  test('a later take that reused the inode and name is not the recording: smaller than it was when it ended, or born at another time', async () => {
    const dir = stateDir();
    const index = await loaded(dir);
    await index.addRecording({ ino: 42, finalPath: '/media/take.mov', size: 50_000_000, birthMs: 1_000 });
    const again = await loaded(dir); // kept across a restart, with its size and birth time
    for (const i of [index, again]) {
      expect(i.hasRecording({ ino: 42, finalPath: '/media/take.mov' })).toBe(true); // inode and name alone
      expect(i.hasRecording({ ino: 42, finalPath: '/media/take.mov', size: 60_000_000, birthMs: 1_000 })).toBe(true); // the recording, grown
      expect(i.hasRecording({ ino: 42, finalPath: '/media/take.mov', size: 4_096, birthMs: 1_000 })).toBe(false); // smaller: a new file
      expect(i.hasRecording({ ino: 42, finalPath: '/media/take.mov', size: 90_000_000, birthMs: 2_000 })).toBe(false); // born later: a new file
      expect(i.hasRecording({ ino: 42, finalPath: '/media/take.mov', size: 90_000_000, birthMs: 0 })).toBe(true); // no birth times on this file system
    }
    // An index written before sizes and birth times were kept: [ino, hash] matches by inode and name, as it did.
    const raw = JSON.parse(readFileSync(path.join(dir, UPLOADED_INDEX_FILE), 'utf8')) as { recordings: unknown[][] };
    raw.recordings = raw.recordings.map((e) => e.slice(0, 2));
    writeFileSync(path.join(dir, UPLOADED_INDEX_FILE), JSON.stringify(raw));
    const old = await loaded(dir);
    expect(old.hasRecording({ ino: 42, finalPath: '/media/take.mov', size: 1, birthMs: 5 })).toBe(true);
  });

  test('recordings are bounded: the oldest forgotten first; the watermark is not moved by them', async () => {
    expect(MAX_RECORDINGS).toBe(500);
    const dir = stateDir();
    const a = await loaded(dir);
    for (let i = 0; i <= MAX_RECORDINGS; i++) await a.addRecording({ ino: i, finalPath: `/media/t${i}.mov` });
    const b = await loaded(dir);
    expect(b.hasRecording({ ino: 0, finalPath: '/media/t0.mov' })).toBe(false);
    expect(b.hasRecording({ ino: 1, finalPath: '/media/t1.mov' })).toBe(true);
    expect(b.hasRecording({ ino: MAX_RECORDINGS, finalPath: `/media/t${MAX_RECORDINGS}.mov` })).toBe(true);
    expect(b.watermarkMs).toBeUndefined();
  });

  test('an index that cannot be read stops load rather than starting empty', async () => {
    const dir = stateDir();
    mkdirSync(path.join(dir, UPLOADED_INDEX_FILE));
    const err = await new UploadedIndex(dir).load().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentError);
    expect((err as AgentError).kind).toBe('config');
    expect(existsSync(path.join(dir, `${UPLOADED_INDEX_FILE}.corrupt`))).toBe(false);
  });

  test('use before load is a bug, not an empty index', () => {
    const index = new UploadedIndex(stateDir());
    expect(() => index.has(file(1, 1))).toThrow('before load()');
  });
});
