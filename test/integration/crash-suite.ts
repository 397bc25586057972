// What the long suites (crashes, refresh rotation) share: the bundle built before them, every agent
// killed after each test, and the one fake cloud and unit dirs a test makes
// closed and removed after the suite.
import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { type FakeCloud, type FakeCloudOptions } from '../fake-cloud/index.js';
import { ensureBuilt, killAll, makeDirs, removeDirs, type AgentDirs, startTestCloud } from './agent-process.js';

export interface CrashSuite {
  cloud(options: FakeCloudOptions): Promise<FakeCloud>;
  dirs(): AgentDirs;
}

export function useCrashSuite(): CrashSuite {
  const clouds: FakeCloud[] = [];
  const allDirs: AgentDirs[] = [];
  beforeAll(ensureBuilt, 120_000);
  afterEach(killAll);
  afterAll(async () => {
    await killAll();
    for (const c of clouds) await c.close();
    for (const d of allDirs) removeDirs(d);
  });
  return {
    async cloud(options) {
      const c = await startTestCloud(options);
      clouds.push(c);
      return c;
    },
    dirs() {
      const d = makeDirs();
      allDirs.push(d);
      return d;
    },
  };
}
