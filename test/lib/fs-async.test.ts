import { afterAll, describe, expect, it } from '@jest/globals';
import { promises as nodeFsp, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as fs from '../../agent/lib/fs-async.js';

const dir = mkdtempSync(path.join(tmpdir(), 'c2c-fs-async-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('lib/fs-async.ts, fs.promises over the callback API', () => {
  it('writes a whole file through an open handle, syncs, reads it back and stats it', async () => {
    const file = path.join(dir, 'a');
    const data = Buffer.alloc(3 * 1024 * 1024, 7);
    const w = await fs.open(file, 'wx', 0o600);
    await w.writeFile(data);
    await w.sync();
    await w.close();
    expect(readFileSync(file).equals(data)).toBe(true);
    const r = await fs.open(file, 'r');
    const buf = Buffer.alloc(10);
    const got = await r.read(buf, 2, 5, 100);
    expect([got.bytesRead, got.buffer === buf, [...buf]]).toEqual([5, true, [0, 0, 7, 7, 7, 7, 7, 0, 0, 0]]);
    expect((await r.stat()).size).toBe(data.length);
    await r.close();
  });

  it('a second close does nothing; any other call after close fails with EBADF, never on a reused descriptor', async () => {
    const h = await fs.open(path.join(dir, 'b'), 'wx');
    await h.close();
    await expect(h.close()).resolves.toBeUndefined();
    // A file opened now may be given the same number: the closed handle must not reach it.
    const other = await fs.open(path.join(dir, 'c'), 'wx');
    await expect(h.sync()).rejects.toMatchObject({ code: 'EBADF' });
    await expect(h.writeFile('x')).rejects.toMatchObject({ code: 'EBADF' });
    await other.close();
    expect(readFileSync(path.join(dir, 'c'), 'utf8')).toBe('');
  });

  it('gives node\'s own errors, as fs.promises does (code, syscall, path)', async () => {
    const missing = path.join(dir, 'missing');
    const ours = await fs.stat(missing).catch((e: unknown) => e);
    const node = await nodeFsp.stat(missing).catch((e: unknown) => e);
    expect(ours).toMatchObject({ code: 'ENOENT', syscall: 'stat', path: missing, message: (node as Error).message });
    await expect(fs.open(path.join(dir, 'a'), 'wx')).rejects.toMatchObject({ code: 'EEXIST', syscall: 'open' });
    expect(await fs.readdir(dir)).toEqual(expect.arrayContaining(['a', 'b', 'c']));
  });
});
