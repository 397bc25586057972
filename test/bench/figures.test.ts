// The benchmark's pure helpers on fixed input: the statistics behind its
// figures, the table it prints and writes for docs/benchmarks.md, and what it reads
// from the tools it runs.
import { describe, expect, it } from '@jest/globals';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

// A plain .mjs module under scripts/bench (it imports nothing).
const figures = await import(pathToFileURL(join(resolve('.'), 'scripts/bench/figures.mjs')).href);

describe('statistics', () => {
  it('takes the median of odd and even series, ignoring what is not a number', () => {
    expect(figures.median([3, 1, 2])).toBe(2);
    expect(figures.median([4, 1, 3, 2])).toBe(2.5);
    expect(figures.median([5, Number.NaN, 1])).toBe(3);
    expect(figures.median([])).toBeNaN();
  });

  it('measures growth as the median of the last third minus the median of the first third', () => {
    // thirds of 9: [10, 11, 30] (median 11), middle ignored, [14, 15, 16] (median 15)
    expect(figures.growthOfThirds([10, 11, 30, 0, 0, 0, 14, 15, 16])).toBe(4);
  });

  it('lets one outlier in a third not decide the growth', () => {
    expect(figures.growthOfThirds([20, 20, 90, 20, 20, 20, 20, 20, 20])).toBe(0);
  });

  it('gives no growth for fewer than three samples, and the last third as the end level', () => {
    expect(figures.growthOfThirds([1, 2])).toBeNaN();
    expect(figures.lastThird([1, 1, 1, 5, 6, 7])).toBe(6.5);
  });
});

describe('rows and tables', () => {
  const rows = [
    figures.row('idle RSS', { agent: '50.0 MiB', baseline: '40.0 MiB bare node', ratio: 1.25, goal: '<= 1.3x', pass: true }),
    figures.row('start | first heartbeat', { agent: '300 ms', baseline: '100 ms', ratio: 3, goal: '<= 1.5x', pass: false }),
    figures.missingRow('herd', '<= 2', 'dist/fleet.mjs is not built'),
  ];

  it('shows a numeric ratio with two decimals and an x, and no number for a missing figure', () => {
    expect(rows[0].ratio).toBe('1.25x');
    expect(figures.row('x', { ratio: Number.NaN }).ratio).toBe('n/a');
    expect(rows[2]).toMatchObject({ agent: 'n/a (dist/fleet.mjs is not built)', ratio: '', pass: undefined });
  });

  it('prints aligned columns with a pass, MISS or - mark', () => {
    const lines = figures.textTable(rows).split('\n');
    expect(lines[0]).toMatch(/^measure\s+agent\s+baseline\s+ratio\s+goal$/);
    expect(lines[1]).toMatch(/^-+$/);
    expect(lines[2]).toMatch(/^idle RSS\s+50\.0 MiB\s+40\.0 MiB bare node\s+1\.25x\s+<= 1\.3x\s+pass$/);
    expect(lines[3].endsWith('MISS')).toBe(true);
    expect(lines[4].endsWith('-')).toBe(true);
    // Every row's ratio starts in the same column.
    expect(lines[2].indexOf('1.25x')).toBe(lines[3].indexOf('3.00x'));
  });

  it('writes Markdown with one line per row and pipes in cells escaped', () => {
    const md = figures.markdownTable(rows).split('\n');
    expect(md[0]).toBe('| measure | agent | baseline | ratio | goal | met |');
    expect(md).toHaveLength(2 + rows.length);
    expect(md[3]).toBe('| start \\| first heartbeat | 300 ms | 100 ms | 3.00x | <= 1.5x | MISS |');
  });
});

describe('bundle by package', () => {
  it('groups inputs by package (scoped and nested node_modules by the innermost), own code by folder, plugin modules by name and plugin, largest first', () => {
    const output = {
      inputs: {
        'agent/lib/clock.ts': { bytesInOutput: 100 },
        'agent/cli/main.ts': { bytesInOutput: 50 },
        'node_modules/got/dist/source/index.js': { bytesInOutput: 300 },
        'node_modules/got/node_modules/@sindresorhus/is/dist/index.js': { bytesInOutput: 20 },
        'node_modules/@sindresorhus/is/dist/types.js': { bytesInOutput: 5 },
        '<define:__C2C_BUILTIN_PROFILES__>': { bytesInOutput: 7 },
        'c2c-cold:c2c-cold-pack:systeminformation': { bytesInOutput: 40 },
        'c2c-stub:semver': { bytesInOutput: 1 },
      },
    };
    expect(figures.bytesByPackage(output)).toEqual([
      { name: 'got', bytes: 300 },
      { name: 'agent/', bytes: 150 },
      { name: 'systeminformation (c2c-cold)', bytes: 40 },
      { name: '@sindresorhus/is', bytes: 25 },
      { name: 'build-time data', bytes: 7 },
      { name: 'semver (c2c-stub)', bytes: 1 },
    ]);
  });
});

describe('reading tools and options', () => {
  it('takes the last JSON object line of a tool output, skipping progress and broken lines', () => {
    expect(figures.lastJson('progress 1\n{"a":1}\n{"b":2}\nbye\n')).toEqual({ b: 2 });
    expect(figures.lastJson('{"a":1}\n{broken\n')).toEqual({ a: 1 });
    expect(figures.lastJson('no json here')).toBeUndefined();
  });

  it('runs every part by default, a named subset in the table order, and refuses an unknown name', () => {
    const known = ['idle', 'start', 'bundle'];
    expect(figures.parseOnly(undefined, known)).toEqual(known);
    expect(figures.parseOnly('bundle, idle', known)).toEqual(['idle', 'bundle']);
    expect(() => figures.parseOnly('idle,disk', known)).toThrow('--only: unknown part "disk"; known: idle,start,bundle');
    expect(() => figures.parseOnly('', known)).toThrow('--only');
  });
});
