// Temp dirs a suite makes as it goes, all removed when the suite ends
// (docs/testing.md, "A suite runs beside another": nothing is left in /tmp).
import { afterAll } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A maker of fresh temp dirs named `prefix`XXXXXX; call it at a describe's top level (it registers the afterAll). */
export function suiteTempDirs(prefix: string): () => string {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  return () => {
    const dir = mkdtempSync(path.join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
}
