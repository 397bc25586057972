// A healthy camera never writes to its SD card: once started, heartbeats
// touch only the runtime dir (tmpfs). The built bundle against the fake cloud
// at --time-scale 60, credentials read from the state dir as on a camera.
import { describe, expect, it } from '@jest/globals';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useCloudAndAgentDirs } from './setup.js';
import { startAgent, treeSnapshot, waitFor } from './agent-process.js';

const SCALE = 60;
const fx = useCloudAndAgentDirs(SCALE);

describe('c2c-agent run and the state dir', () => {
  it('five healthy heartbeats change nothing in the state dir (names, sizes, mtimes), only the runtime dir', async () => {
    const { cloud, dirs } = fx;
    const device = cloud.devices[0]!;
    mkdirSync(dirs.stateDir, { mode: 0o700 });
    writeFileSync(join(dirs.stateDir, 'credentials.json'), JSON.stringify({ access_token: device.accessToken, refresh_token: device.refreshToken }), { mode: 0o600 });
    // Firmware 2.x: the cam-4k profile, heartbeats every 60 to 120 agent s (1 to 2 real s).
    const agent = startAgent({ apiUrl: cloud.url, dirs, timeScale: SCALE, env: { C2C_FIRMWARE_VERSION: '2.1.0' } });
    const ok = (): number => cloud.referee(device.id).successfulHeartbeats;
    try {
      // Start-up is over by the second heartbeat: armed once the first was answered and its record written.
      await waitFor('the second heartbeat', () => ok() >= 2, 15_000);
      const state = treeSnapshot(dirs.stateDir);
      const runtime = treeSnapshot(dirs.runtimeDir);
      const first = ok();
      await waitFor('five more heartbeats', () => ok() >= first + 5, 30_000);
      expect(treeSnapshot(dirs.stateDir)).toEqual(state);
      expect(treeSnapshot(dirs.runtimeDir)).not.toEqual(runtime);
      expect(Object.keys(state)).toContain('credentials.json');
    } catch (err) {
      throw new Error(`${(err as Error).message}\nagent output:\n${agent.output()}`);
    }
  }, 60_000);
});
