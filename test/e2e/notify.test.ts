// What the daemon tells systemd (Type=notify), in agent time (rig.ts): the
// real notifier's queue with systemd-notify replaced by a list. READY=1 once
// the controller runs, STATUS= lines people can read whose "next heartbeat
// in" is when the next heartbeat comes, to the second, and STOPPING=1 at the end.
// The real systemd-notify, the socket and the watchdog's pings in real time
// are a process's: integration/notify.test.ts.
import { afterEach, describe, expect, it } from '@jest/globals';
import { MINUTE, Rig } from './rig.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/** "1m02s", "45s", "2h05m" (lib/text.ts formatDuration) in ms. */
function durationMs(text: string): number {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text);
  if (!m) throw new Error(`not a duration: ${text}`);
  return ((Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0)) * 60 + Number(m[3] ?? 0)) * 1000;
}

describe('the daemon under systemd (Type=notify), in agent time', () => {
  it('READY=1 before online, STATUS= lines whose next heartbeat is to the second when it comes, STOPPING=1 at the end', async () => {
    const r = (rig = await Rig.up());
    const device = r.device;
    r.start(r.mediaEnv());
    await r.until('three heartbeats', () => r.cloud.referee(device.id).successfulHeartbeats >= 3, 15 * MINUTE);
    const stoppedAt = r.now();
    await r.stop();
    const texts = r.notes.map((n) => n.text);
    // READY=1 once start-up is done (the controller's first, 'starting', line may go before it); after
    // STOPPING=1 only the last status lines.
    expect(texts.indexOf('READY=1')).toBeLessThan(texts.findIndex((t) => t.startsWith('STATUS=online')));
    expect(texts.slice(texts.indexOf('STOPPING=1') + 1).filter((t) => !t.startsWith('STATUS='))).toEqual([]);
    expect(texts.at(-1)).toMatch(/^STATUS=stopped/);
    expect(texts.filter((t) => t === 'READY=1' || t === 'STOPPING=1')).toEqual(['READY=1', 'STOPPING=1']);

    // Every online line names the unit and its project, and says when the next heartbeat goes.
    const online = r.notes.filter((n) => n.text.startsWith('STATUS=online'));
    expect(online.length).toBeGreaterThanOrEqual(3);
    const beats = r.cloud.referee(device.id).heartbeatTimes;
    for (const n of online) {
      const m = new RegExp(`^STATUS=online; ${device.name} in project ${device.projectName}(?:; next heartbeat in (\\S+))?$`).exec(n.text);
      expect(m).not.toBeNull();
      if (m?.[1] === undefined) continue;
      // The heartbeat it announces came then, within the rounding to a second (unless the daemon stopped first).
      const due = n.at + durationMs(m[1]);
      if (due > stoppedAt) continue;
      expect(beats.map((t) => Math.abs(t - due)).filter((d) => d <= 500)).toHaveLength(1);
    }
    expect(online.filter((n) => n.text.includes('; next heartbeat in ')).length).toBeGreaterThanOrEqual(2);
  });
});
