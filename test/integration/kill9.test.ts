// kill -9 of the built daemon, for what only a process shows: a kill in the
// middle of a write (between a temp file's creation and its rename), and what
// that leaves on flash for the next start. Every other kill runs the daemon
// in-process in agent time (test/e2e/: uploads-crash, uploads-resume,
// uploads-realtime, heartbeat, channels-crash, refresh-crash), where the rig's
// kill lands between two of the daemon's steps, never inside a write. Power
// cuts, which lose the page cache too: test/powercut/.
//
// A process because the moment is the kernel's: a kill aimed at a file
// appearing (inotify), not at a time, and judged by what the files say after.
import { describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readdirSync, readFileSync, watch } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from './agent-process.js';
import { type RefreshingAgent } from './refresh-harness.js';
import { completeNamed, startUploadAgent, waitForUploads, writeMedia, useUploadRigs } from './uploads-harness.js';

const SCALE = 60;
const { rigUp, online } = useUploadRigs(SCALE);

async function kill9(a: RefreshingAgent): Promise<void> {
  a.child.kill('SIGKILL');
  await a.exited;
}

describe('kill -9 in the middle of a write', () => {
  // A kill while the upload index is being written leaves `<state-dir>/.uploaded.json.<hex>.tmp`
  // behind; the next start must remove it (it used to stay on flash for good, one file per such crash).
  it('no temp file of the upload index is left on flash after a kill during its write', async () => {
    const rig = await rigUp();
    mkdirSync(rig.dirs.stateDir, { recursive: true });
    const index = join(rig.dirs.stateDir, 'uploaded.json');
    for (let round = 0; round < 3; round++) {
      const agent = startUploadAgent(rig);
      await online(rig, agent);
      // SIGKILL the moment the index's temp file appears (inotify), before its rename.
      let exited = false;
      void agent.exited.then(() => (exited = true));
      const w = watch(rig.dirs.stateDir, (_t, name) => {
        if (typeof name === 'string' && /^\.uploaded\.json\..+\.tmp$/.test(name)) agent.child.kill('SIGKILL');
      });
      const name = `indexed-${round}.mp4`;
      writeMedia(join(rig.media, name), 1000, 3600_000);
      // Killed, or (the watch too late) the index written with the clip in it: either way this round is over.
      await waitFor('the kill or the index written', () => exited || (completeNamed(rig.cloud, name).length > 0 && existsSync(index) && readFileSync(index, 'utf8').includes(name)), 20_000);
      w.close();
      await kill9(agent);
    }
    const last = startUploadAgent(rig);
    await online(rig, last);
    await waitForUploads(rig, 'the queue empty', (c) => c.pending === 0, 20_000);
    expect(readdirSync(rig.dirs.stateDir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  }, 60_000);
});
