// Two rough edges of issue 23 on a real daemon (the built bundle, the fake
// cloud at scale 60): `run --media-dir` naming a dir that does not exist
// says so once in the log and in `status` until it appears, and its clips
// then go by themselves; a daemon running on a C2C_TOKEN the service refuses
// gives advice that can help (pairing cannot while C2C_TOKEN wins).
import { describe, expect, it } from '@jest/globals';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from './agent-process.js';
import { cli } from './channels-harness.js';
import { agentTimeMark } from './agent-time.js';
import { agentWarnings, describeAssets, startUploadAgent, storedProblems, typeOf, useUploadRigs, writeMedia } from './uploads-harness.js';

const SCALE = 60;
const HOUR = 3600_000;
const { rigUp, online } = useUploadRigs(SCALE);
const TOKEN_ADVICE = 'C2C_TOKEN is set and wins over pairing: give a valid token in C2C_TOKEN, or unset it and run `c2c-agent pair`';

describe('a media dir that does not exist yet', () => {
  it('is warned about once, shown by status, and its clips go by themselves once it appears', async () => {
    const rig = await rigUp();
    const media = join(rig.dirs.root, 'no', 'such', 'dir');
    const agent = startUploadAgent({ ...rig, media });
    const onlineAt = agentTimeMark(rig.cloud);
    await online(rig, agent);
    // A minute and more of the daemon's time, a dozen looks (every 5 agent s) while it is missing: still one warning.
    await onlineAt.passed('online');
    const missingWarnings = (): unknown[] => agent.lines().filter((l) => typeof l.msg === 'string' && l.msg.includes('does not exist: nothing is uploaded from it until it does'));
    expect(missingWarnings()).toHaveLength(1);
    expect(missingWarnings()[0]).toMatchObject({ level: 40, dir: media });
    const st = await cli(rig, ['status']);
    expect(st.json.uploads).toMatchObject({ mediaDirMissing: media });

    mkdirSync(media, { recursive: true });
    const data = writeMedia(join(media, 'first.mp4'), 300_000, HOUR);
    let problems: string[] = [];
    await waitFor('the clip stored', () => (problems = storedProblems(rig.cloud, 'first.mp4', data, typeOf('first.mp4'))).length === 0, 30_000, 50).catch((err: Error) => {
      throw new Error(`${err.message}\n${problems.join('\n')}\n${describeAssets(rig.cloud)}\n${agentWarnings(agent)}`);
    });
    await waitFor('status without the line', async () => {
      const u = (await cli(rig, ['status'])).json.uploads as Record<string, unknown> | undefined;
      return u !== undefined && !('mediaDirMissing' in u);
    }, 10_000);
    expect(missingWarnings()).toHaveLength(1);
    // Idle again: the rate is no leftover of the upload.
    const idle = await waitFor('the queue empty', async () => {
      const u = (await cli(rig, ['status'])).json.uploads as { files: number; bytesPerSecond: number } | undefined;
      return u !== undefined && u.files === 0 ? u : undefined;
    }, 10_000);
    expect(idle.bytesPerSecond).toBe(0);
  }, 60_000);
});

describe('a daemon on a C2C_TOKEN the service refuses', () => {
  it('needs pairing, and its reason and `status` advise what can help, not pairing alone', async () => {
    const rig = await rigUp();
    const agent = startUploadAgent(rig, { env: { C2C_TOKEN: 'fca_refused_by_the_service' } });
    const reason = await waitFor('needs-pairing', () => agent.lines().find((l) => l.to === 'needs-pairing')?.reason as string | undefined, 20_000);
    expect(reason).toContain(TOKEN_ADVICE);
    expect(reason).not.toMatch(/; run `c2c-agent pair`\)?$/);
    const st = await cli(rig, ['status']);
    expect(st.exitCode).toBe(77);
    expect(st.stderr).toContain(`needs pairing: ${TOKEN_ADVICE}`);
    expect(st.stderr).not.toContain('fca_refused_by_the_service');
  }, 60_000);
});
