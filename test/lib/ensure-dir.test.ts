import { describe, expect, it, afterAll } from '@jest/globals';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ensureDir } from '../../agent/lib/ensure-dir.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'c2c-ensure-dir-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('ensureDir', () => {
  it('creates every missing level with the given mode, and is idempotent', async () => {
    const dir = path.join(tmp, 'a', 'b', 'c');
    await ensureDir(dir, 0o700);
    await ensureDir(dir, 0o700);
    expect(statSync(dir).isDirectory()).toBe(true);
    expect(statSync(dir).mode & 0o777).toBe(0o700 & ~process.umask());
  });

  it('fails with ENOTDIR when a level is a file', async () => {
    writeFileSync(path.join(tmp, 'file'), '');
    await expect(ensureDir(path.join(tmp, 'file', 'x'))).rejects.toMatchObject({ code: 'ENOTDIR' });
  });

  // fs.mkdir({recursive: true}) never settles here on Node 20: this would time out.
  it('fails, rather than spinning, for a path the kernel will not create (/proc)', async () => {
    await expect(ensureDir(`/proc/c2c-no-such-${process.pid}/x`)).rejects.toMatchObject({ code: 'ENOENT' });
  }, 5_000);
});
