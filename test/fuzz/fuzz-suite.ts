// The short fuzz run inside `npm test`: a fixed list of seeds (the same cases
// every run, so a regression shows at once, and a green run means the same
// thing every time: seeds that once found a bug are kept in the list). With
// FUZZ_FRESH=1 one fresh seed is added (printed, so whatever it finds replays
// with scripts/fuzz.mjs); the long run (`npm run fuzz`) is where new seeds go. The
// generators and oracles are the long run's (test/fuzz/lib/, run by
// scripts/fuzz.mjs); each failing case is listed with its replay command.
import { afterAll, expect, test } from '@jest/globals';
import { join } from 'node:path';
import { BUNDLE, ROOT, ensureBuilt } from '../integration/agent-process.js';
import { freshSeed, killAll, replayCommand, runTarget, type FuzzRunOptions } from './lib/run.mjs';

export interface SuiteOptions {
  target: FuzzRunOptions['target'];
  seeds: number[];
  casesPerSeed: number;
  jobs: number;
  timeoutMs: number;
}

export function fuzzSuite(o: SuiteOptions): void {
  afterAll(async () => {
    await killAll();
  });

  const fresh = process.env.FUZZ_FRESH === '1' ? freshSeed() : undefined;
  const seeds = fresh === undefined ? o.seeds : [...o.seeds, fresh];
  test(`${o.target}: seeds ${seeds.join(', ')}${fresh === undefined ? '' : ` (${fresh} fresh)`}, ${o.casesPerSeed} cases each`, async () => {
    await ensureBuilt();
    const lines: string[] = [];
    const failures: string[] = [];
    const summaries: string[] = [];
    for (const seed of seeds) {
      const r = await runTarget({
        target: o.target,
        bundle: BUNDLE,
        fakeCloud: join(ROOT, 'dist/fake-cloud.mjs'),
        seed,
        cases: o.casesPerSeed,
        jobs: o.jobs,
        log: (l) => lines.push(l),
      });
      summaries.push(`seed ${seed}${seed === fresh ? ' (fresh)' : ''}: ${r.summary}`);
      for (const f of r.failures) {
        for (const p of f.problems) failures.push(`[${p.cat}] ${p.sig}: ${p.msg} — ${f.desc[0]} — ${replayCommand(o.target, seed, f.caseNo)}`);
        if (f.error !== undefined) failures.push(`[fuzzer error] ${String(f.error)} — ${replayCommand(o.target, seed, f.caseNo)}`);
      }
    }
    // The seeds and the counts belong in the output whatever the outcome.
    console.log(`fuzz ${o.target}${fresh === undefined ? '' : ` (fresh seed ${fresh})`}:\n${summaries.join('\n')}${failures.length > 0 ? `\n\n${lines.join('\n')}` : ''}`);
    expect(failures).toEqual([]);
  }, o.timeoutMs);
}
