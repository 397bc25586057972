// One convention for sizes across the CLI and the simulator: binary (IEC)
// units from one formatter (agent/lib/byte-size.js), which the simulator's
// plain scripts import too.
import { describe, expect, it } from '@jest/globals';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { formatBytes, formatRate } from '../../agent/lib/text.js';

const MiB = 1024 * 1024;

describe('formatBytes', () => {
  it('counts in KiB, MiB, GiB, TiB: an 800 MiB file is "800 MiB", never "839 MB"', () => {
    expect([0, 512, 1023].map(formatBytes)).toEqual(['0 B', '512 B', '1023 B']);
    expect(formatBytes(1024)).toBe('1.0 KiB');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(800 * MiB)).toBe('800 MiB');
    expect(formatBytes(4.5 * MiB)).toBe('4.5 MiB');
    expect(formatBytes(1.2 * 1024 * MiB)).toBe('1.2 GiB');
    expect(formatBytes(3 * 1024 * 1024 * MiB)).toBe('3.0 TiB');
    // Just under a unit rounds up into it, not "1024 KiB".
    expect(formatBytes(1024 * 1024 - 1)).toBe('1.0 MiB');
    expect(formatRate(4.5 * MiB)).toBe('4.5 MiB/s');
  });

  it('is the very function the simulator prints sizes with', async () => {
    const sim = (await import(pathToFileURL(join(resolve('.'), 'scripts/sim/report.mjs')).href)) as { bytes: (n: number) => string };
    for (const n of [512, 5 * MiB, 800 * MiB, 2.5 * 1024 * MiB]) expect(sim.bytes(n)).toBe(formatBytes(n));
  });
});
