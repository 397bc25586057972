// What the simulator tells the person running it: `npm run simulate
// --devices 3` (the -- forgotten) is answered with the command meant, and
// its lines come in agent-time order although heartbeats are learned a poll
// late from the service's journal.
import { describe, expect, it } from '@jest/globals';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const load = (file: string) => import(pathToFileURL(join(resolve('.'), 'scripts/sim', file)).href);
const options = await load('options.mjs');
const { Progress } = await load('progress.mjs');

/** The environment npm gives `npm run simulate` when it took `--NAME` for itself. */
const npmEnv = (configs: Record<string, string>): Record<string, string> => ({
  npm_lifecycle_event: 'simulate',
  ...Object.fromEntries(Object.entries(configs).map(([k, v]) => [`npm_config_${k}`, v])),
});

describe('npm run simulate with the -- forgotten', () => {
  it('--devices 3: npm took --devices and left "3": the hint is the command meant', () => {
    expect(options.parseOptions(['3'], npmEnv({ devices: 'true' }))).toEqual({
      kind: 'usage',
      message: 'unexpected argument "3": did you mean npm run simulate -- --devices 3?',
      usageLine: false,
    });
  });

  it('two options typed in any order: each value goes with the option that takes it', () => {
    expect(options.parseOptions(['heavy', '3'], npmEnv({ devices: 'true', faults: 'true' })).message).toBe(
      'unexpected argument "heavy": did you mean npm run simulate -- --faults heavy --devices 3?',
    );
  });

  it('--devices=3 and a flag such as --plain, which npm keeps whole: refused, not run without them', () => {
    expect(options.parseOptions([], npmEnv({ devices: '3', plain: 'true' })).message).toBe(
      'npm took --devices, --plain for itself: did you mean npm run simulate -- --devices=3 --plain?',
    );
  });

  it('the --fleet run too', () => {
    expect(options.parseOptions(['1000', '24'], npmEnv({ fleet: 'true', hours: 'true' })).message).toBe(
      'unexpected argument "1000": did you mean npm run simulate -- --fleet 1000 --hours 24?',
    );
  });

  it('outside `npm run simulate` the environment is not read: node scripts/simulate.mjs 3 is a plain stray argument', () => {
    expect(options.parseOptions(['3'], { npm_config_devices: 'true' })).toEqual({ kind: 'usage', message: 'unexpected argument "3"' });
    expect(options.parseOptions(['--devices', '3'], { npm_lifecycle_event: 'simulate' }).kind).toBe('story');
  });
});

/** A Progress writing plain lines into an array. */
function plainProgress(): { progress: InstanceType<typeof Progress>; lines: string[] } {
  const lines: string[] = [];
  const out = { isTTY: false, write: (s: string) => void lines.push(...s.split('\n').filter(Boolean)) };
  return { progress: new Progress({ out, plain: true, totalMs: 30 * 60_000 }), lines };
}

const stamps = (lines: string[]): string[] => lines.map((l) => /^\[sim (\d\d:\d\d)\]/.exec(l)?.[1] ?? '');
const cam = { label: 'cam1' };

describe('simulator lines in agent-time order', () => {
  it('a heartbeat learned a poll after a later story line is printed before it', () => {
    const { progress, lines } = plainProgress();
    progress.hold();
    // The poller's mark: the journal is read up to 30:00 …
    const mark = 30 * 60_000;
    // … meanwhile the story said something at 31:00 (settled), and the poll found a heartbeat made at 30:58.
    progress.line(31 * 60_000, 'every camera settled');
    progress.heartbeat(30 * 60_000 + 58_000, cam, { status: 204, faults: [] }, 62_000);
    progress.release(mark);
    expect(lines).toEqual([]);
    progress.release(Infinity);
    expect(lines).toEqual(['[sim 30:58] cam1 heartbeat: 204 accepted, 1m02s after the previous one', '[sim 31:00] every camera settled']);
  });

  it('a heartbeat answered long after later lines went out is stamped when printed and says when it was sent: stamps never go back', () => {
    const { progress, lines } = plainProgress();
    progress.hold();
    progress.line(8 * 60_000 + 19_000, 'cam1 state online -> offline');
    progress.release(8 * 60_000 + 20_000);
    // The answer to a heartbeat of 07:49 was held back 45 s; the poll reports it now.
    progress.heartbeat(7 * 60_000 + 49_000, cam, { status: 0, faults: ['delay'] }, undefined);
    progress.release(8 * 60_000 + 40_000);
    expect(lines).toEqual(['[sim 08:19] cam1 state online -> offline', '[sim 08:19] cam1 heartbeat sent at 07:49: no answer (injected delay)']);
    const s = stamps(lines);
    expect([...s].sort()).toEqual(s);
  });

  it('lines without a poller behind them go out at once', () => {
    const { progress, lines } = plainProgress();
    progress.line(undefined, 'pairing');
    progress.line(1000, 'cam1 agent pid 1');
    expect(lines).toEqual(['[sim] pairing', '[sim 00:01] cam1 agent pid 1']);
  });
});
