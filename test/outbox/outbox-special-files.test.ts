// The outbox on the real file system with something other than a segment
// under a segment's name (issue 18, cause 5): a FIFO, a link to /dev/zero, a
// regular file larger than any segment could be. Open treats each like a
// corrupt segment (moved aside whole, the queue goes on) and never waits on
// it or reads it into memory; the read-only view skips and counts it; a
// queue directory that is not one is one line naming it and its setting.
import { afterAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FakeClock } from '../support/fake-clock.js';
import { createLogger } from '../../agent/lib/logger.js';
import { AgentError } from '../../agent/lib/errors.js';
import { Outbox, OUTBOX_DEFAULTS, readOutbox } from '../../agent/outbox/outbox.js';
import { readQueueOf } from '../../agent/outbox/reader.js';
import { readBootId } from '../../agent/outbox/boot-id.js';
import { segmentReadLimit } from '../../agent/outbox/segments.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'c2c-outbox-special-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let n = 0;
function queueWith(make: (segment: string) => void): string {
  const dir = path.join(tmp, `q${++n}`, 'queue');
  mkdirSync(dir, { recursive: true });
  make(path.join(dir, 'seg-000001.log'));
  return dir;
}

const SPECIAL: Array<[string, (segment: string) => void]> = [
  ['a FIFO', (f) => execFileSync('mkfifo', [f])],
  ['a symbolic link to /dev/zero', (f) => symlinkSync('/dev/zero', f)],
  ['a directory', (f) => mkdirSync(f)],
  // Sparse: 1 GiB on the file system costs nothing, and must cost no memory either.
  ['a 1 GiB regular file', (f) => {
    writeFileSync(f, '');
    truncateSync(f, 1024 * 1024 * 1024);
  }],
];

describe('a segment that is no segment', () => {
  it.each(SPECIAL)('%s: open moves it aside as corrupt and the queue works', async (_kind, make) => {
    const dir = queueWith(make);
    const lines: string[] = [];
    const logger = createLogger('warn', { write: (l: string) => void lines.push(l) });
    const ob = new Outbox({ dir, clock: new FakeClock(), bootId: 'b00t', logger });
    await ob.open();
    // The fake clock never closes the group-commit window by itself: flush does.
    const [item] = await Promise.all([ob.put('upload', { file: 'a' }), ob.flush()]);
    await ob.close();
    expect(readdirSync(path.join(dir, 'quarantine'))).toEqual(['seg-000001.log']);
    expect(ob.stats().quarantined).toBe(1);
    expect(lines.join('')).toContain('corrupt segment moved aside');
    const again = new Outbox({ dir, clock: new FakeClock(), bootId: 'b00t' });
    await again.open();
    expect(again.pending().map((i) => i.id)).toEqual([item.id]);
    await again.close();
  });

  it.each(SPECIAL)('%s: the read-only view (queue, channels) skips it and counts it, changing nothing', async (_kind, make) => {
    const dir = queueWith(make);
    const view = await readOutbox(dir);
    expect([view.items, view.stats.quarantined]).toEqual([[], 1]);
    expect(readdirSync(dir)).toEqual(['seg-000001.log']);
  });

  it('the bound is the segment size plus the cap: the largest segment the outbox can write reads back', () => {
    expect(segmentReadLimit(OUTBOX_DEFAULTS.segmentBytes, OUTBOX_DEFAULTS.capBytes)).toBeGreaterThan(OUTBOX_DEFAULTS.segmentBytes + OUTBOX_DEFAULTS.capBytes);
  });

  it('an item as large as the cap, alone in its segment, reads back after a reopen', async () => {
    const dir = path.join(tmp, 'big-item', 'queue');
    const cap = 64 * 1024;
    const ob = new Outbox({ dir, clock: new FakeClock(), bootId: 'b00t', capBytes: cap, segmentBytes: 2_000 });
    await ob.open();
    const [item] = await Promise.all([ob.put('upload', { blob: 'x'.repeat(cap - 200) }), ob.flush()]);
    await ob.close();
    expect(item.state).toBe('pending');
    const again = new Outbox({ dir, clock: new FakeClock(), bootId: 'b00t', capBytes: cap, segmentBytes: 2_000 });
    await again.open();
    expect(again.pending().map((i) => i.id)).toEqual([item.id]);
    expect(again.stats().quarantined).toBe(0);
    await again.close();
  });
});

describe('readQueueOf: the state dir and its queue/ must be directories', () => {
  it('a missing state dir or queue: an empty queue', async () => {
    expect((await readQueueOf(path.join(tmp, 'none'), '--state-dir', OUTBOX_DEFAULTS.capBytes)).items).toEqual([]);
  });

  it('queue/ a file: one line naming it and where the state dir came from, exit 78', async () => {
    const state = path.join(tmp, 'state-q-file');
    mkdirSync(state);
    writeFileSync(path.join(state, 'queue'), '');
    const err = await readQueueOf(state, 'environment C2C_STATE_DIR', OUTBOX_DEFAULTS.capBytes).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentError);
    expect([(err as AgentError).exitCode, (err as AgentError).message]).toEqual([
      78,
      `queue directory '${state}/queue' (from <state-dir>/queue, the state dir from environment C2C_STATE_DIR) is a regular file, not a directory; point the setting at a directory`,
    ]);
  });

  it('a state dir that is /dev/null: exit 78 naming it', async () => {
    const err = (await readQueueOf('/dev/null', '--state-dir', OUTBOX_DEFAULTS.capBytes).catch((e: unknown) => e)) as AgentError;
    expect(err.message).toBe("state dir '/dev/null' (from --state-dir) is a character device, not a directory; point the setting at a directory");
  });
});

describe('boot id', () => {
  it('is read from procfs (stat size 0) whole', async () => {
    // Not a random stand-in: the kernel's, as readFileSync gives it.
    expect(await readBootId()).toBe(readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim());
  });

  it('a FIFO in its place: a random id at once, not a wait', async () => {
    const fifo = path.join(tmp, 'boot-id-fifo');
    execFileSync('mkfifo', [fifo]);
    expect(statSync(fifo).isFIFO()).toBe(true);
    expect(await readBootId(fifo)).toMatch(/^[0-9a-f-]{36}$/);
  });
});
