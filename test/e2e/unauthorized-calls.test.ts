// The one 401 policy (agent/auth/token-source.ts, `callRefused`), end to end
// in agent time (rig.ts): the service refuses asset creation with 401 while
// GET /v2/devices/me and heartbeats accept the same token. Before the policy
// the outbox refreshed on its own and retried at once, up to 50 single-use
// rotations for one item. Now, over an agent hour: one refresh, heartbeats
// untouched, the upload backing off with a reason that says why.
import { afterEach, describe, expect, it } from '@jest/globals';
import { MIN_REFRESH_GAP_MS } from '../../agent/auth/token-source.js';
import { HOUR, MINUTE, Rig } from './rig.js';

const ASSETS = '/v2/devices/assets';
const TOKEN = '/v2/auth/token';
/** The multi-av-tc profile: heartbeats 60..120 s apart. */
const FIRMWARE = '1.6.0';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('a call refused with 401 while the token works', () => {
  it('an agent hour of asset 401s: one refresh, heartbeats on time, the upload waits with a clear reason', async () => {
    const r = (rig = await Rig.up({ cloud: { uploadPartBytes: 256 * 1024 } }));
    r.start({ C2C_FIRMWARE_VERSION: FIRMWARE, ...r.mediaEnv() });
    await r.until('online', () => r.state() === 'online', 5 * MINUTE);
    const startedAt = r.now();
    r.cloud.control.addFault({ kind: 'status', status: 401, method: 'POST', path: ASSETS });
    r.writeMedia('clip.mp4', 300_000, HOUR);
    const firstRefused = await r.until('the asset refused once', () => r.entries('POST', ASSETS).length > 0, MINUTE);
    await r.runTo(startedAt + HOUR);

    // One rotation, right after the first 401; after it a 401 is not a token problem.
    const refreshes = r.entries('POST', TOKEN).filter((e) => e.t >= startedAt);
    expect(refreshes.map((e) => e.status)).toEqual([200]);
    expect(refreshes[0]!.t - firstRefused).toBeLessThan(MIN_REFRESH_GAP_MS);
    const creates = r.entries('POST', ASSETS);
    // Backing off, not hammering: far fewer tries than one per agent minute, each one refused.
    expect(creates.length).toBeGreaterThan(2);
    expect(creates.length).toBeLessThan(60);
    expect(new Set(creates.map((e) => e.status))).toEqual(new Set([401]));

    // Heartbeats never noticed: the referee (on the same clock, no slack) finds nothing.
    const ref = r.cloud.referee(r.device.id);
    expect({ tooSoon: ref.tooSoon, tooLate: ref.tooLate }).toEqual({ tooSoon: 0, tooLate: 0 });
    const beats = ref.heartbeatTimes.filter((t) => t >= startedAt);
    expect(beats.length).toBeGreaterThanOrEqual(HOUR / (2 * MINUTE));
    expect(r.state()).toBe('online');

    // What `queue` (from the status document) and a UI are told: the clip waits, and why.
    const listed = await r.api<{ uploads: Array<{ id: string; name: string; state: string }> }>('GET', '/v1/uploads');
    const clip = listed.body.uploads.find((u) => u.name === 'clip.mp4');
    expect(clip?.state).toBe('queued');
    const tried = r.status()?.queue?.attempts[clip!.id];
    expect(tried?.count).toBe(creates.length);
    expect(tried?.lastError).toMatch(/401/);
    expect(tried?.lastError).toMatch(/not a token problem/);
  });
});
