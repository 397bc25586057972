// "Nothing happens for a while" in a real-process suite, said in the agent's
// own time instead of a fixed real sleep: heartbeats counted at the fake.
// A heartbeat is armed when the one before it ended, at least the profile's
// minimum interval (60 agent s) later, and a process fires its timers in the
// order they are due: once two heartbeats came after a moment, every timer of
// the daemon due within a minute of it has fired (a media rescan, a settle
// look, a retry), however late a loaded machine ran them all.
import type { FakeCloud } from '../fake-cloud/index.js';
import { HEARTBEAT_PATH } from '../fake-cloud/pipeline.js';
import { waitFor } from './agent-process.js';

/** Heartbeats the fake answered with 2xx since journal index `from` (of `deviceId`, when given). */
export function heartbeatsSince(cloud: FakeCloud, from: number, deviceId?: string): number {
  return cloud.journal.slice(from).filter((e) => e.path === HEARTBEAT_PATH && e.status >= 200 && e.status < 300 && (deviceId === undefined || e.deviceId === deviceId)).length;
}

/**
 * A mark now; `passed()` resolves once `n` (default 2) heartbeats came after it: at least
 * (n - 1) heartbeat intervals of the daemon's time. `timeoutMs` is a bound against a hang.
 */
export function agentTimeMark(cloud: FakeCloud, deviceId?: string): { passed(what: string, n?: number, timeoutMs?: number): Promise<unknown> } {
  const from = cloud.journal.length;
  return {
    passed: (what, n = 2, timeoutMs = 60_000) => waitFor(`${n} heartbeats after ${what}`, () => heartbeatsSince(cloud, from, deviceId) >= n, timeoutMs, 50),
  };
}
