import { describe, expect, it, beforeAll, afterAll } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listenNotify, type NotifyListener } from './notify-socket.js';
import { createSystemdNotifier, watchdogIntervalFrom, type NotifyExec } from '../../agent/daemon/systemd/notify.js';
import { Watchdog, type IntervalFn } from '../../agent/daemon/systemd/watchdog.js';
import { until } from '../support/until.js';

let dir: string;
let logFile: string;

// A stand-in systemd-notify on PATH: records argv (one per line) and the
// NOTIFY_SOCKET it saw, then a separator, so the test sees exact messages.
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'c2c-sdnotify-'));
  logFile = join(dir, 'calls.log');
  const script = join(dir, 'systemd-notify');
  writeFileSync(
    script,
    `#!/bin/sh\nfor a in "$@"; do printf 'arg:%s\\n' "$a" >> "${logFile}"; done\nprintf 'sock:%s\\n---\\n' "$NOTIFY_SOCKET" >> "${logFile}"\n`,
  );
  chmodSync(script, 0o755);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const envWithFake = (extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({ ...process.env, PATH: `${dir}:${process.env.PATH ?? ''}`, ...extra });

function calls(): string[][] {
  if (!existsSync(logFile)) return [];
  return readFileSync(logFile, 'utf8')
    .split('---\n')
    .filter((c) => c.length > 0)
    .map((c) => c.trim().split('\n'));
}

describe('createSystemdNotifier with the systemd-notify executable', () => {
  it('sends the exact messages, in order, to the NOTIFY_SOCKET it was given', async () => {
    rmSync(logFile, { force: true });
    const n = createSystemdNotifier(envWithFake({ NOTIFY_SOCKET: '/run/fake/notify' }));
    expect(n.enabled).toBe(true);
    await n.ready('online; cam-07 in project Testbed; next heartbeat in 2m13s');
    await n.status('offline;\nretrying');
    await n.watchdog();
    await n.stopping();
    expect(calls()).toEqual([
      ['arg:--ready', 'arg:--status=online; cam-07 in project Testbed; next heartbeat in 2m13s', 'sock:/run/fake/notify'],
      ['arg:--status=offline; retrying', 'sock:/run/fake/notify'],
      ['arg:WATCHDOG=1', 'sock:/run/fake/notify'],
      ['arg:STOPPING=1', 'sock:/run/fake/notify'],
    ]);
  });

  it('passes the status text verbatim, never through a shell', async () => {
    rmSync(logFile, { force: true });
    const n = createSystemdNotifier(envWithFake({ NOTIFY_SOCKET: '/run/fake/notify' }));
    const text = 'cam "07"; $(touch ' + join(dir, 'pwned') + ') `id` & echo $HOME';
    await n.status(text);
    expect(calls()).toEqual([[`arg:--status=${text}`, 'sock:/run/fake/notify']]);
    expect(existsSync(join(dir, 'pwned'))).toBe(false);
  });

  it('does nothing at all without NOTIFY_SOCKET', async () => {
    rmSync(logFile, { force: true });
    const env = envWithFake({});
    delete env.NOTIFY_SOCKET;
    const n = createSystemdNotifier(env);
    expect(n.enabled).toBe(false);
    expect(n.watchdogIntervalMs).toBeUndefined();
    await n.ready('x');
    await n.status('y');
    await n.watchdog();
    await n.stopping();
    expect(calls()).toEqual([]);
  });

  it('never rejects when systemd-notify fails, and reports the failure', async () => {
    const errors: unknown[] = [];
    const n = createSystemdNotifier({ PATH: '/nonexistent', NOTIFY_SOCKET: '/run/x' }, undefined, (e) => errors.push(e));
    await expect(n.status('x')).resolves.toBeUndefined();
    await expect(n.watchdog()).resolves.toBeUndefined();
    expect(errors).toHaveLength(2);
  });
});

describe('serialisation and coalescing', () => {
  function recordingExec(): { exec: NotifyExec; sent: string[][]; release: () => void; inFlight: () => number; maxInFlight: () => number } {
    const sent: string[][] = [];
    let gate: Array<() => void> = [];
    let now = 0;
    let max = 0;
    const exec: NotifyExec = async (args) => {
      now += 1;
      max = Math.max(max, now);
      sent.push([...args]);
      await new Promise<void>((r) => gate.push(r));
      now -= 1;
    };
    const release = (): void => {
      const g = gate;
      gate = [];
      for (const r of g) r();
    };
    return { exec, sent, release, inFlight: () => now, maxInFlight: () => max };
  }

  it('runs one child at a time and collapses a STATUS burst to the newest text', async () => {
    const r = recordingExec();
    const n = createSystemdNotifier({ NOTIFY_SOCKET: '/s' }, r.exec);
    const done = [n.ready('starting'), ...Array.from({ length: 50 }, (_, i) => n.status(`s${i}`)), n.stopping()];
    // Each child blocks until released, so everything after READY queues up behind it.
    for (let i = 0; i < 10; i++) {
      await new Promise((res) => setImmediate(res));
      r.release();
    }
    await Promise.all(done);
    await n.idle();
    expect(r.maxInFlight()).toBe(1);
    // READY was in flight; s0..s49 queued behind it as one entry carrying the newest text; STOPPING stays last.
    expect(r.sent).toEqual([['--ready', '--status=starting'], ['--status=s49'], ['STOPPING=1']]);
  });

  it('never merges across a different message kind', async () => {
    const r = recordingExec();
    const n = createSystemdNotifier({ NOTIFY_SOCKET: '/s' }, r.exec);
    const done = [n.status('a'), n.status('b'), n.watchdog(), n.status('c'), n.status('d')];
    for (let i = 0; i < 10; i++) {
      await new Promise((res) => setImmediate(res));
      r.release();
    }
    await Promise.all(done);
    expect(r.sent).toEqual([['--status=a'], ['--status=b'], ['WATCHDOG=1'], ['--status=d']]);
  });
});

describe('watchdog interval', () => {
  it('is half of WATCHDOG_USEC in ms, only for our pid', () => {
    expect(watchdogIntervalFrom({ WATCHDOG_USEC: '60000000' })).toBe(30_000);
    expect(watchdogIntervalFrom({ WATCHDOG_USEC: '60000000', WATCHDOG_PID: String(process.pid) })).toBe(30_000);
    expect(watchdogIntervalFrom({ WATCHDOG_USEC: '60000000', WATCHDOG_PID: String(process.pid + 1) })).toBeUndefined();
    expect(watchdogIntervalFrom({ WATCHDOG_USEC: '3000' })).toBe(1.5);
    expect(watchdogIntervalFrom({})).toBeUndefined();
    expect(watchdogIntervalFrom({ WATCHDOG_USEC: 'junk' })).toBeUndefined();
    expect(watchdogIntervalFrom({ WATCHDOG_USEC: '0' })).toBeUndefined();
  });

  it('is not offered when NOTIFY_SOCKET is unset', () => {
    expect(createSystemdNotifier({ WATCHDOG_USEC: '60000000' }).watchdogIntervalMs).toBeUndefined();
    expect(createSystemdNotifier({ NOTIFY_SOCKET: '/s', WATCHDOG_USEC: '60000000' }).watchdogIntervalMs).toBe(30_000);
  });
});

describe('Watchdog', () => {
  function manualInterval(): { fn: IntervalFn; fire: () => void; armedMs: () => number | undefined; cancelled: () => boolean } {
    let tick: (() => void) | undefined;
    let ms: number | undefined;
    let cancelled = false;
    const fn: IntervalFn = (f, m) => {
      tick = f;
      ms = m;
      return { cancel: () => (cancelled = true) };
    };
    return { fn, fire: () => tick?.(), armedMs: () => ms, cancelled: () => cancelled };
  }

  it('pings at once and on every interval while healthy, and stays silent while not', async () => {
    const sent: string[][] = [];
    const n = createSystemdNotifier({ NOTIFY_SOCKET: '/s', WATCHDOG_USEC: '20000000' }, async (a) => void sent.push([...a]));
    let healthy = true;
    const iv = manualInterval();
    const w = new Watchdog(n, () => healthy, iv.fn);
    w.start();
    expect(iv.armedMs()).toBe(10_000);
    await n.idle();
    expect(sent).toEqual([['WATCHDOG=1']]);
    iv.fire();
    await n.idle();
    expect(sent).toHaveLength(2);
    healthy = false;
    iv.fire();
    iv.fire();
    await n.idle();
    expect(sent).toHaveLength(2);
    healthy = true;
    iv.fire();
    await n.idle();
    expect(sent).toHaveLength(3);
    w.stop();
    expect(iv.cancelled()).toBe(true);
    expect(w.running).toBe(false);
  });

  it('treats a throwing health check as unhealthy', async () => {
    const sent: string[][] = [];
    const n = createSystemdNotifier({ NOTIFY_SOCKET: '/s', WATCHDOG_USEC: '20000000' }, async (a) => void sent.push([...a]));
    const iv = manualInterval();
    new Watchdog(n, () => {
      throw new Error('wedged');
    }, iv.fn).start();
    iv.fire();
    await n.idle();
    expect(sent).toEqual([]);
  });

  it('does not arm a timer without a watchdog', () => {
    const iv = manualInterval();
    const w = new Watchdog(createSystemdNotifier({ NOTIFY_SOCKET: '/s' }, async () => {}), () => true, iv.fn);
    w.start();
    expect(iv.armedMs()).toBeUndefined();
    expect(w.running).toBe(false);
  });
});

// The real systemd-notify against a unix datagram socket read the way PID 1
// reads it.
describe('real systemd-notify on a datagram socket', () => {
  let listener: NotifyListener | undefined;
  afterAll(() => listener?.close());

  it('delivers READY/STATUS, WATCHDOG and STOPPING datagrams, each followed by a barrier', async () => {
    const sock = join(dir, 'notify.sock');
    const heard = (listener = await listenNotify(sock));
    const errors: unknown[] = [];
    const n = createSystemdNotifier({ PATH: process.env.PATH, NOTIFY_SOCKET: sock }, undefined, (e) => errors.push(e));
    await n.ready('online; cam-07');
    await n.watchdog();
    await n.stopping();
    expect(errors).toEqual([]);
    // The listener's stdout reaches us through a pipe, a little later.
    await until('six messages at the listener', () => heard.messages.length >= 6, { everyMs: 10 }).catch(() => undefined);
    expect(listener.messages).toEqual(['READY=1\nSTATUS=online; cam-07', 'BARRIER=1', 'WATCHDOG=1', 'BARRIER=1', 'STOPPING=1', 'BARRIER=1']);
  });
});
