// What the person at the camera is told, with the fix they would expect: a
// mistyped command or option answered with its near miss, sizes in binary
// units and counts with their plural, a daemon that is not running with the
// next step.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { editDistance, nearMiss } from '../../agent/lib/near-miss.js';
import { plural } from '../../agent/lib/text.js';
import { COMMANDS } from '../../agent/cli/commands.js';
import { itemLine, shown } from '../../agent/cli/queue.js';
import { notRunningMessage } from '../../agent/cli/status.js';
import { START_ADVICE } from '../../agent/lib/advice.js';
import type { OutboxItem } from '../../agent/outbox/types.js';
import { buildBundle, type Bundle } from './bundle.js';

let bundle: Bundle;
let dir: string;
beforeAll(async () => {
  bundle = await buildBundle();
  dir = mkdtempSync(path.join(tmpdir(), 'c2c-messages-'));
}, 120_000);
afterAll(() => {
  bundle.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('the near miss', () => {
  it('counts a swap of two neighbours as one edit', () => {
    expect(editDistance('statsu', 'status')).toBe(1);
    expect(editDistance('api-ulr', 'api-url')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });

  it('finds the command, the option and the config key meant, and nothing for a word far from all', () => {
    expect(nearMiss('statsu', Object.keys(COMMANDS))).toBe('status');
    expect(nearMiss('stat', Object.keys(COMMANDS))).toBe('status');
    expect(nearMiss('--api-ulr', ['--api-url', '--state-dir', '--json'])).toBe('--api-url');
    expect(nearMiss('apiurl', ['apiUrl', 'mediaDir', 'stateDir'])).toBe('apiUrl');
    expect(nearMiss('frobnicate', Object.keys(COMMANDS))).toBeUndefined();
    expect(nearMiss('--x', ['--json'])).toBeUndefined();
  });
});

describe('an unknown command or option: the near miss, not the whole list', () => {
  it.each([
    [['statsu'], "c2c-agent: unknown command 'statsu' (did you mean status?); run c2c-agent --help"],
    [['status', '--api-ulr', 'https://x.example'], "c2c-agent: status: unknown option '--api-ulr' (did you mean --api-url?); run c2c-agent status --help"],
    [['queue', '--jsno'], "c2c-agent: queue: unknown option '--jsno' (did you mean --json?); run c2c-agent queue --help"],
    [['--stauts'], "c2c-agent: unknown option '--stauts' (the command comes first; did you mean c2c-agent status?); run c2c-agent --help"],
    [['frobnicate'], "c2c-agent: unknown command 'frobnicate'; run c2c-agent --help"],
  ])('%j: exit 64 and %s', (args, line) => {
    const r = bundle.run(args);
    expect(r.status).toBe(64);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`${line}\n`);
  });
});

describe('sizes in binary units, counts with their plural', () => {
  it('plural: "1 attempt", "2 attempts", "1 entry", "3 entries"', () => {
    expect([plural(1, 'attempt'), plural(2, 'attempt'), plural(0, 'record'), plural(1, 'entry', 'entries'), plural(3, 'entry', 'entries')]).toEqual([
      '1 attempt', '2 attempts', '0 records', '1 entry', '3 entries',
    ]);
  });

  it('queue says its size and its cap in binary units, not raw byte counts', () => {
    const r = bundle.run(['queue'], { env: { C2C_STATE_DIR: path.join(dir, 'state'), C2C_RUNTIME_DIR: path.join(dir, 'run') } });
    expect(r.status).toBe(0);
    const first = r.stdout.split('\n')[0];
    expect(first).toMatch(/, 0 B on flash \(cap 4\.0 MiB\); the daemon is not running$/);
    expect(r.stdout).not.toMatch(/\d{4,} bytes|cap \d+\)/);
  });

  it('an item tried once says "1 attempt"', () => {
    const item: OutboxItem = { id: 'b:1', kind: 'channel-sync', priority: 0, payload: {}, createdAt: '2026-11-23T00:00:00.000Z', bytes: 10, state: 'pending' };
    const view = { inFlight: [], attempts: { 'b:1': { count: 1, lastError: 'the service answered 503' } }, waitingUntil: undefined };
    expect(itemLine(shown(item, view))).toMatch(/\(1 attempt, last: the service answered 503\)$/);
  });
});

describe('a daemon that is not running: the next step', () => {
  const stopped = { state: 'stopped' as const, pid: 4242, since: { at: '2026-11-23T10:00:00.000Z', monotonic: 0 }, updated: { at: '2026-11-23T10:00:00.000Z', monotonic: 0 } };

  it('says how to start it and where its log is', () => {
    expect(notRunningMessage(stopped, { startAdvice: START_ADVICE, sources: { startAdvice: 'default' } })).toBe(
      `daemon not running (stopped at 2026-11-23T10:00:00.000Z); ${START_ADVICE}; its log: journalctl -u c2c-agent`,
    );
    expect(notRunningMessage({ ...stopped, state: 'online' }, { startAdvice: START_ADVICE, sources: { startAdvice: 'default' } })).toMatch(
      /^daemon not running \(pid 4242 gone; last state online at .*\); start it .*; its log: journalctl -u c2c-agent$/,
    );
  });

  it('a start advice of its own (the simulator\'s) is given as it is, with no journal it may not have', () => {
    const own = "the simulator starts this camera's agent itself once it is paired";
    expect(notRunningMessage(stopped, { startAdvice: own, sources: { startAdvice: 'config /tmp/c.json' } })).toBe(`daemon not running (stopped at 2026-11-23T10:00:00.000Z); ${own}`);
  });
});
