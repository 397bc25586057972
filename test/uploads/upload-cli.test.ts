// `c2c-agent upload` without a daemon (issue 18, cause 3): success only for
// what is on flash. The outbox holds a write the disk refuses in memory (the
// daemon retries it); the command is about to exit, so a read-only or full
// state dir is an error with the shared mapping (lib/fs-errors.ts: EROFS
// 78, ENOSPC 75), never `ok`. A file already pending comes back with its
// item's id and is not queued again.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AgentError } from '../../agent/lib/errors.js';
import { nodeOutboxFs } from '../../agent/outbox/node-fs.js';
import { readOutbox } from '../../agent/outbox/reader.js';
import type { OutboxFs } from '../../agent/outbox/types.js';
import { queueDirectly } from '../../agent/cli/upload.js';
import type { UploadPayload } from '../../agent/uploads/upload-item.js';
import { FakeClock } from '../support/fake-clock.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const file = (name: string, ino = 7): UploadPayload => ({ path: `/media/${name}`, name, filetype: 'video/mp4', size: 10, mtimeMs: 1, ino, dev: 1 });

function queueDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'c2c-upload-cli-'));
  dirs.push(d);
  return path.join(d, 'queue');
}

/** node:fs, except that appends fail with `code` (a read-only or full state dir). */
function refusing(code: 'EROFS' | 'ENOSPC'): OutboxFs {
  const base = nodeOutboxFs();
  return {
    ...base,
    append: async (f: string) => {
      throw Object.assign(new Error(`${code}: refused, open '${f}'`), { code, errno: code === 'EROFS' ? -30 : -28, syscall: 'open', path: f });
    },
  };
}

const opts = (fs?: OutboxFs) => ({ clock: new FakeClock(), bootId: 'boot', capBytes: 4 * 1024 * 1024, source: '<state-dir>/queue, the state dir from C2C_STATE_DIR', ...(fs && { fs }) });

describe('upload without a daemon: only what is on flash is ok', () => {
  for (const [code, exit] of [['EROFS', 78], ['ENOSPC', 75]] as const) {
    it(`${code}: an error with exit ${exit}, one line naming the queue; nothing on disk`, async () => {
      const dir = queueDir();
      let err: unknown;
      try {
        await queueDirectly(dir, [file('a.mp4')], opts(refusing(code)));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(AgentError);
      const e = err as AgentError;
      expect(e.exitCode).toBe(exit);
      expect(e.details.code).toBe(code);
      expect(e.message).toMatch(new RegExp(`^cannot write the upload queue '${dir.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}'.*\\(${code}\\)`));
      expect(e.message).not.toMatch(/\n/);
      expect((await readOutbox(dir)).items).toEqual([]);
    });
  }

  it('a file already pending comes back with its id, not queued again; the same file twice in one call is one item', async () => {
    const dir = queueDir();
    const first = await queueDirectly(dir, [file('a.mp4'), file('a.mp4'), file('b.mp4', 8)], opts());
    expect(first.map((q) => [q.file.name, q.queued])).toEqual([['a.mp4', true], ['a.mp4', false], ['b.mp4', true]]);
    expect(first[1]!.id).toBe(first[0]!.id);
    const again = await queueDirectly(dir, [file('a.mp4')], opts());
    expect(again).toEqual([{ file: file('a.mp4'), queued: false, id: first[0]!.id }]);
    const { items } = await readOutbox(dir);
    expect(items.filter((i) => i.state === 'pending').map((i) => (i.payload as UploadPayload).name)).toEqual(['a.mp4', 'b.mp4']);
  });

  it('the same path with another size or mtime (a new version) is queued', async () => {
    const dir = queueDir();
    await queueDirectly(dir, [file('a.mp4')], opts());
    const changed = await queueDirectly(dir, [{ ...file('a.mp4'), size: 11 }], opts());
    expect(changed[0]!.queued).toBe(true);
  });
});
