import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isAtomicTemp, removeStaleTemps, tempPathFor } from '../../agent/lib/atomic-write.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'c2c-temps-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('stale atomic-write temp files', () => {
  it('removes exactly what writeFileAtomic names its temp files, nothing else', () => {
    const leftovers = [tempPathFor(path.join(dir, 'status.json')), tempPathFor(path.join(dir, 'last-heartbeat.json'))].map((p) => path.basename(p));
    const others = ['status.json', 'last-heartbeat.json', 'run.lock', 'run.lock.123.tmp', 'notes.tmp', '.x.tmp', '.status.json.0123456789AB.tmp', '.status.json.0123.tmp'];
    for (const name of [...leftovers, ...others]) writeFileSync(path.join(dir, name), 'x');
    expect(leftovers.every(isAtomicTemp)).toBe(true);
    expect(removeStaleTemps(dir).sort()).toEqual([...leftovers].sort());
    expect(readdirSync(dir).sort()).toEqual([...others].sort());
  });
});
