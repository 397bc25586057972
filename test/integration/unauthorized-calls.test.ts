// The one 401 policy (agent/auth/token-source.ts, `callRefused`), end to end:
// the service refuses asset creation with 401 while GET /v2/devices/me and
// heartbeats accept the same token. Before the policy the outbox refreshed on
// its own and retried at once, up to 50 single-use rotations for one item.
// Now, over an agent hour: at most two refreshes, heartbeats untouched, the
// upload backing off (or dead-lettered) with a reason that says why.
import { describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import { waitFor } from './agent-process.js';
import { entriesOf, sleepReal, TOKEN_PATH } from './refresh-harness.js';
import { ASSETS_PATH, startUploadAgent, uploadQueue, useUploadRigs, writeMedia } from './uploads-harness.js';

const SCALE = 600;
const AGENT_HOUR_REAL_MS = 3_600_000 / SCALE;
const { rigUp, online } = useUploadRigs(SCALE);

describe('a call refused with 401 while the token works', () => {
  it('an agent hour of asset 401s: at most two refreshes, heartbeats on time, the upload waits with a clear reason', async () => {
    const rig = await rigUp();
    const agent = startUploadAgent(rig);
    await online(rig, agent);
    const startedAt = rig.cloud.now();
    rig.cloud.control.addFault({ kind: 'status', status: 401, method: 'POST', path: ASSETS_PATH });
    writeMedia(join(rig.media, 'clip.mp4'), 300_000, 3_600_000);
    await waitFor('the asset refused once', () => rig.cloud.journal.some((e) => e.method === 'POST' && e.path === ASSETS_PATH), 20_000, 20);
    await sleepReal(AGENT_HOUR_REAL_MS);

    const refreshes = entriesOf(rig.cloud, rig.device.id, 'POST', TOKEN_PATH).filter((e) => e.t >= startedAt);
    expect(refreshes.length).toBeGreaterThanOrEqual(1);
    expect(refreshes.length).toBeLessThanOrEqual(2);
    const creates = rig.cloud.journal.filter((e) => e.method === 'POST' && e.path === ASSETS_PATH);
    // Backing off, not hammering: far fewer tries than one per agent minute.
    expect(creates.length).toBeLessThan(60);

    const ref = rig.cloud.referee(rig.device.id);
    expect({ tooSoon: ref.tooSoon, tooLate: ref.tooLate }).toEqual({ tooSoon: 0, tooLate: 0 });
    const beats = ref.heartbeatTimes.filter((t) => t >= startedAt);
    expect(beats.length).toBeGreaterThanOrEqual(11);

    const q = await uploadQueue(rig);
    const text = JSON.stringify(q.json);
    expect(text).toMatch(/clip\.mp4/);
    expect(text).toMatch(/401/);
    expect(text).toMatch(/not a token problem/);
    agent.child.kill('SIGTERM');
    await agent.exited;
  }, 60_000);
});
