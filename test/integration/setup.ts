// The fixture most process-level tests share: a built bundle, one fake cloud
// at the test's time scale, one set of agent dirs, and no child outliving a test.
import { beforeAll, afterAll, afterEach } from '@jest/globals';
import { type FakeCloud } from '../fake-cloud/index.js';
import { ensureBuilt, killAll, makeDirs, removeDirs, type AgentDirs, startTestCloud } from './agent-process.js';

export interface Fixture {
  readonly cloud: FakeCloud;
  readonly dirs: AgentDirs;
}

export function useCloudAndAgentDirs(timeScale: number, devices = 1): Fixture {
  let cloud: FakeCloud | undefined;
  let dirs: AgentDirs | undefined;
  beforeAll(async () => {
    await ensureBuilt();
    cloud = await startTestCloud({ timeScale, devices });
    dirs = makeDirs();
  }, 120_000);
  afterEach(killAll);
  afterAll(async () => {
    await killAll();
    await cloud?.close();
    if (dirs) removeDirs(dirs);
  });
  return {
    get cloud() {
      if (!cloud) throw new Error('fixture used outside a test');
      return cloud;
    },
    get dirs() {
      if (!dirs) throw new Error('fixture used outside a test');
      return dirs;
    },
  };
}
