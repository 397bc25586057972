// The bundle under a stand-in for systemd: NOTIFY_SOCKET and WATCHDOG_USEC
// set as PID 1 sets them for Type=notify, with the real systemd-notify. What
// arrives on the socket is what `systemctl status` and the watchdog would see.
// A process because that is what is judged: the environment systemd gives a
// process, a child per message, datagrams on a socket, the watchdog's REAL-time
// interval, SIGTERM's exit code. Outcomes only: a loaded machine may ping less
// often, never more. What the lines say, and when, is judged in agent time by
// the daemon in-process (test/e2e/notify.test.ts).
import { describe, expect, it, beforeAll, afterAll, afterEach } from '@jest/globals';
import { join } from 'node:path';
import { type FakeCloud } from '../fake-cloud/index.js';
import { listenNotify, type NotifyListener } from '../daemon/notify-socket.js';
import { ensureBuilt, killAll, makeDirs, removeDirs, startAgent, waitFor, type AgentDirs, startTestCloud } from './agent-process.js';

const SCALE = 60;
let cloud: FakeCloud;
let dirs: AgentDirs;
let listener: NotifyListener | undefined;

beforeAll(async () => {
  await ensureBuilt();
  cloud = await startTestCloud({ timeScale: SCALE, devices: 1 });
  dirs = makeDirs();
}, 120_000);
afterEach(async () => {
  await killAll();
  listener?.close();
});
afterAll(async () => {
  await cloud?.close();
  if (dirs) removeDirs(dirs);
});

describe('c2c-agent run under systemd (Type=notify, WatchdogSec)', () => {
  it('sends READY=1, readable STATUS= lines, WATCHDOG=1 in real time, and STOPPING=1', async () => {
    const sock = join(dirs.root, 'notify.sock');
    listener = await listenNotify(sock);
    const msgs = listener.messages;
    const device = cloud.devices[0]!;
    // WatchdogSec=1s: a ping every 0.5 s of REAL time, whatever the time scale.
    const agent = startAgent({
      apiUrl: cloud.url,
      token: device.accessToken,
      dirs,
      timeScale: SCALE,
      env: { NOTIFY_SOCKET: sock, WATCHDOG_USEC: '1000000' },
    });
    const why = (): string => `\nmessages: ${JSON.stringify(msgs)}\nagent output:\n${agent.output()}`;
    const vars = (): string[] => msgs.flatMap((m) => m.split('\n'));

    try {
      await waitFor('READY=1', () => vars().includes('READY=1'), 10_000);
      await waitFor('an online STATUS= line naming the unit', () => vars().some((v) => v.startsWith(`STATUS=online; ${device.name} in project ${device.projectName}`)), 10_000);

      // WatchdogSec=1s: a ping every 0.5 s of real time. Agent time (60 times faster here) must not
      // drive the interval: over the wait for two more pings, never more than real time allows.
      const pingsAt = (): number => vars().filter((v) => v === 'WATCHDOG=1').length;
      const before = pingsAt();
      const t0 = Date.now();
      await waitFor('two watchdog pings', () => pingsAt() >= before + 2, 10_000, 10);
      const elapsed = (Date.now() - t0) / 1000;
      expect(pingsAt() - before).toBeLessThanOrEqual(Math.ceil(elapsed / 0.5) + 1);

      agent.child.kill('SIGTERM');
      expect(await agent.exited).toEqual({ code: 0, signal: null });
      expect(vars()).toContain('STOPPING=1');
      // READY precedes STOPPING; nothing but the barrier follows STOPPING.
      const v = vars().filter((x) => x !== 'BARRIER=1');
      expect(v.indexOf('READY=1')).toBeLessThan(v.indexOf('STOPPING=1'));
      expect(v.slice(v.indexOf('STOPPING=1') + 1).filter((x) => x === 'WATCHDOG=1' || x === 'READY=1')).toEqual([]);
      // Every message was a complete systemd-notify run: one barrier each.
      expect(msgs.filter((m) => m === 'BARRIER=1').length).toBe(msgs.length / 2);
    } catch (err) {
      throw new Error(`${(err as Error).message}${why()}`);
    }
  }, 40_000);
});
