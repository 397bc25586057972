// The simulator's closing report and command line, on fixed input: what a
// person reads must say the same thing for the same figures.
import { describe, expect, it } from '@jest/globals';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

// Plain .mjs modules under scripts/ (they import only dist/ and node built-ins).
const load = (file: string) => import(pathToFileURL(join(resolve('.'), 'scripts/sim', file)).href);
const report = await load('report.mjs');
const options = await load('options.mjs');

describe('heartbeat spacing histogram', () => {
  it('draws 15 s bins from the first used one, marks the 60 s minimum and counts gaps over 300 s apart', () => {
    const lines: string[] = report.histogram([62.5, 64, 75, 118, 119, 119.9, 301.2]);
    expect(lines).toEqual([
      '            ┼── 60 s: the minimum spacing',
      `   60–75  s │${'█'.repeat(27)} 2`,
      `   75–90  s │${'█'.repeat(13)} 1`,
      '   90–105 s │',
      `  105–120 s │${'█'.repeat(40)} 3`,
      '            ┼── 300 s: the longest allowed while the service answers',
      `  ≥ 300 s   │${'█'.repeat(13)} 1  (an outage or a revoked token: see the referee)`,
      '  7 gaps; shortest 62.5 s, median 118.0 s, longest 301.2 s',
    ]);
  });

  it('folds a long run of empty bins into one row', () => {
    const lines: string[] = report.histogram([61, 62, 226]);
    expect(lines.slice(0, 4)).toEqual(['            ┼── 60 s: the minimum spacing', `   60–75  s │${'█'.repeat(40)} 2`, '      ⋮     │', `  225–240 s │${'█'.repeat(20)} 1`]);
  });

  it('flags a gap under the minimum on its own bar', () => {
    const lines: string[] = report.histogram([45, 70]);
    expect(lines[0]).toBe(`   45–60  s │${'█'.repeat(40)} 1  ✗ under the 60 s minimum`);
    expect(lines[1]).toContain('┼── 60 s');
  });

  it('says so when there is nothing to draw', () => {
    expect(report.histogram([])).toEqual(['  (fewer than two heartbeats: no spacing to show)']);
  });

  it('takes the gaps between consecutive attempts of each device, never across devices', () => {
    expect(report.spacings([[0, 60_000, 150_000], [1_000, 2_000_000]])).toEqual([60, 90, 1999]);
  });
});

describe('timeline of states', () => {
  const states = [
    { t: 5_000, state: 'online' },
    { t: 60_000, state: 'offline' },
    { t: 90_000, state: 'online' },
    { t: 100_000, state: 'needs-pairing' },
    { t: 110_000, state: 'online' },
  ];

  it('draws one character per slice under a row of the outages and a ruler in agent minutes', () => {
    const lines: string[] = report.timeline({ devices: [{ label: 'cam1', states }], outages: [{ from: 60_000, to: 90_000 }], endMs: 120_000, width: 24 });
    expect(lines).toEqual([
      '  network ────────────╳╳╳╳╳╳──────',
      '  cam1    ·███████████░░░░░░██??██',
      '          ╵           ╵          ╵',
      '          0m          1m         2m',
      `  ${report.TIMELINE_LEGEND}`,
    ]);
  });

  it('shows a spell shorter than its slice', () => {
    const short = [{ t: 1_000, state: 'online' }, { t: 61_000, state: 'needs-pairing' }, { t: 63_000, state: 'online' }];
    const lines: string[] = report.timeline({ devices: [{ label: 'cam1', states: short }], outages: [], endMs: 120_000, width: 12 });
    expect(lines[1]).toBe('  cam1    ·█████?█████');
  });

  it('counts the share of the story spent online', () => {
    expect(report.onlineShare(states, 120_000)).toBeCloseTo((55_000 + 10_000 + 10_000) / 120_000);
    expect(report.onlineShare([], 120_000)).toBe(0);
  });
});

describe('verdict and referee', () => {
  it('lists each invariant and fails when one broke', () => {
    const v = report.verdict([
      { name: 'referee', ok: true, detail: '0 violations' },
      { name: 'queue drained', ok: false, detail: 'cam2: 2 pending' },
    ]);
    expect(v.ok).toBe(false);
    expect(v.lines).toEqual(['  ✓ referee: 0 violations', '  ✗ queue drained: cam2: 2 pending', '', 'FAILED: 1 of 2 invariants broken (✗ above)']);
    expect(report.verdict([{ name: 'referee', ok: true, detail: 'fine' }]).lines.at(-1)).toBe('OK: every invariant held');
  });

  it('puts the referee in words, with no float milliseconds', () => {
    const line = report.refereeLine('cam1', { heartbeats: 12, successfulHeartbeats: 10, tooSoon: 0, tooLate: 0, missingVersion: 0, heartbeatTimes: [117249.6312] });
    expect(line).toBe('cam1: 12 heartbeats (10 accepted, 2 failed or refused); 0 too soon, 0 too late, 0 without x-client-version');
  });

  it('formats durations and sizes for people', () => {
    expect([report.duration(45_400), report.duration(65_000), report.duration(7_380_000)]).toEqual(['45s', '1m05s', '2h03m']);
    expect([report.bytes(512), report.bytes(2048), report.bytes(5 * 1024 * 1024)]).toEqual(['512 B', '2.0 KiB', '5.0 MiB']);
    expect(report.clock(754_000)).toBe('12:34');
  });
});

describe('simulate options', () => {
  it('has defaults that make the README story', () => {
    const p = options.parseOptions([]);
    expect(p).toEqual({ kind: 'story', options: expect.objectContaining({ devices: 1, faults: 'light', forever: false, keep: false }) });
  });

  it('turns an unknown option or a bad value into one usage message', () => {
    expect(options.parseOptions(['--bogus'])).toEqual({ kind: 'usage', message: "unknown option '--bogus'" });
    expect(options.parseOptions(['--devices', '2.5']).kind).toBe('usage');
    expect(options.parseOptions(['--minutes', '3']).message).toMatch(/^--minutes "3": must be a number from 10 to /);
    expect(options.parseOptions(['--calm', '--faults', 'heavy']).kind).toBe('usage');
    expect(options.parseOptions(['extra']).message).toBe('unexpected argument "extra"');
  });

  it('hands every argument to the fleet simulator when --fleet is given', () => {
    expect(options.parseOptions(['--fleet', '1000', '--hours', '24', '--json'])).toEqual({ kind: 'fleet', args: ['--fleet', '1000', '--hours', '24', '--json'] });
  });

  it('--calm means no faults and no outage', () => {
    expect(options.parseOptions(['--calm']).options.faults).toBe('none');
  });

  it('draws the same story from the same seed', () => {
    const a = options.seededRandom(7);
    const b = options.seededRandom(7);
    const first = [a(), a(), a()];
    expect([b(), b(), b()]).toEqual(first);
    expect(first.every((x) => x >= 0 && x < 1)).toBe(true);
  });
});
