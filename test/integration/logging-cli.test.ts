// Real-time logging with the built bundle as processes (issue 31): `press`
// and `comment` through a running daemon's local API and, with no daemon,
// queued on flash for its next start; a press from the profile's input device
// (a FIFO under the host root) read by the daemon process. Each press reaches
// the fake cloud once with its channel, input, timecode and rate; a refusal is
// one line on stderr, exit 64, and nothing is sent. (Timing facts, outages and
// kills in agent time: e2e/logging.test.ts.)
import { describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { encodeEvent, EV_KEY, layoutFor } from '../../agent/logging/input-device.js';
import type { PressRecord } from '../fake-cloud/index.js';
import { BUNDLE, cleanEnv, waitFor } from './agent-process.js';
import { plug, startChannelAgent, useChannelRigs, type Rig } from './channels-harness.js';
import { reachState } from './refresh-harness.js';

const SCALE = 30;
const rigUp = useChannelRigs();
const INPUT_DEVICE = 'dev/input/event-buttons';

/** A profile for every firmware: the channel `video` (dev/video0) with two buttons, one on KEY_ENTER, time-of-day timecode at 25. */
function profiles(rig: Rig): string {
  const dir = join(rig.dirs.root, 'profiles');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'buttons.json'),
    JSON.stringify({
      id: 'buttons',
      name: 'Camera with buttons',
      minFirmware: '0.0.0',
      assetType: 'video',
      heartbeat: { minSeconds: 60, maxSeconds: 120 },
      channels: [{ key: 'video', name: 'HDMI', assetType: 'video', deviceModelId: 'c2c-multi-video', detect: { anyPath: ['dev/video0'] }, inputs: [{ index: 0, name: 'Good take', key: 'KEY_ENTER' }, { index: 3, name: 'Slate' }] }],
      requiredMetadata: [],
      inputDevice: INPUT_DEVICE,
      timecode: { rate: 25 },
    }),
  );
  return dir;
}

function env(rig: Rig): Record<string, string> {
  return {
    C2C_API_URL: rig.cloud.url,
    C2C_STATE_DIR: rig.dirs.stateDir,
    C2C_RUNTIME_DIR: rig.dirs.runtimeDir,
    C2C_TIME_SCALE: String(rig.scale),
    C2C_HOST_ROOT: rig.host,
    C2C_FIRMWARE_VERSION: '1.0.0',
    C2C_CLIENT_ID: rig.device.clientId,
    C2C_CONFIG: join(rig.dirs.root, 'config.json'),
    C2C_PROFILES_DIR: join(rig.dirs.root, 'profiles'),
    C2C_UPLOAD_ROOTS: join(rig.dirs.root, 'clips'),
  };
}

/** `c2c-agent <args>` as its own process: exit code, stdout, stderr. */
function cli(rig: Rig, args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  return new Promise((res, reject) => {
    const child = spawn(process.execPath, [BUNDLE, ...args], { env: cleanEnv(env(rig)), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => res({ exitCode: code ?? -1, stdout, stderr }));
  });
}

const presses = (rig: Rig): PressRecord[] => rig.cloud.presses(rig.device.id);
const start = (p: PressRecord): unknown => p.body.start;
const channelId = (rig: Rig): string | undefined => ((rig.cloud.device(rig.device.id) as { channels?: Array<{ id: string }> }).channels ?? [])[0]?.id;

async function daemon(rig: Rig): Promise<ReturnType<typeof startChannelAgent>> {
  const agent = startChannelAgent(rig, { C2C_FIRMWARE_VERSION: '1.0.0', C2C_PROFILES_DIR: join(rig.dirs.root, 'profiles'), C2C_UPLOAD_ROOTS: join(rig.dirs.root, 'clips') });
  await reachState({ cloud: rig.cloud, dirs: rig.dirs, timeScale: rig.scale, agent, state: 'online', timeoutMs: 30_000 });
  await waitFor('the channel connected', () => channelId(rig), 30_000);
  return agent;
}

describe('press and comment as processes', () => {
  it('press: with a daemon through its API, without one queued for its next start; each arrives once with its timecode', async () => {
    const rig = await rigUp(SCALE);
    profiles(rig);
    writeFileSync(join(rig.dirs.root, 'config.json'), '{}\n');
    plug(rig, 'video');

    // No daemon: queued on flash, said so, and sent by the next daemon with the seconds it waited.
    const asked = Date.now();
    const offline = await cli(rig, ['press', 'video', '3', '--timecode', '07:00:00:00', '--json']);
    const answered = Date.now();
    expect([offline.exitCode, offline.stderr]).toEqual([0, '']);
    expect(JSON.parse(offline.stdout)).toEqual({ ok: true, exitCode: 0, via: 'queue', press: { id: expect.any(String), channel: 'video', index: 3, state: 'queued' } });
    // A real-process suite: the press must wait a while before a daemon runs, so its offset is more
    // than 0; a second of real time is SCALE agent seconds, and only bounds, never a window, are judged.
    await new Promise((r) => setTimeout(r, 1_000));
    const daemonFrom = Date.now();

    const agent = await daemon(rig);
    await waitFor('the offline press', () => presses(rig).length >= 1, 30_000);
    const seen = Date.now();
    const [p] = presses(rig);
    expect([p!.channelId, p!.index, start(p!)]).toEqual([channelId(rig), 3, { smpte_timecode: '07:00:00:00', rate: { playback: [25, 1], ntsc: null } }]);
    // The agent seconds it waited (the CLI's clock and the daemon's are one monotonic line at one scale): made
    // between asked and answered, sent after the daemon started and before it was seen.
    const agentS = (realMs: number): number => (realMs * SCALE) / 1000;
    expect(p!.body.offset).toBeGreaterThanOrEqual(Math.floor(agentS(daemonFrom - answered)) - 1);
    expect(p!.body.offset).toBeLessThanOrEqual(Math.ceil(agentS(seen - asked)) + 1);

    // Through the daemon.
    const online = await cli(rig, ['press', 'video', '0', '--timecode', '01:00:00:00', '--rate', '24000/1001', '--json']);
    expect([online.exitCode, online.stderr]).toEqual([0, '']);
    expect(JSON.parse(online.stdout)).toMatchObject({ ok: true, via: 'daemon', press: { channel: 'video', index: 0, state: 'queued' } });
    const human = await cli(rig, ['press', 'video', '0']);
    expect(human.exitCode).toBe(0);
    expect(human.stdout).toMatch(/^press of 'video' input 0: queued \(item [^)]+\); the daemon sends it\n$/);
    await waitFor('three presses', () => presses(rig).length >= 3, 30_000);
    expect(start(presses(rig)[1]!)).toEqual({ smpte_timecode: '01:00:00:00', rate: { playback: [24000, 1001], ntsc: 'non_drop' } });
    // No timecode given: the time of day at the profile's 25.
    expect(start(presses(rig)[2]!)).toEqual({ smpte_timecode: expect.stringMatching(/^\d\d:\d\d:\d\d:\d\d$/), rate: { playback: [25, 1], ntsc: null } });
    // `status` says it in words, not only in --json.
    const status = await cli(rig, ['status']);
    expect(status.stdout).toMatch(/^logging: {5}(none waiting|\d+ waiting to be sent), \d+ sent, none failed$/m);

    // Refusals: one line, 64, nothing sent; the same with a daemon and without.
    for (const args of [['press', 'video', '9'], ['press', 'audio', '0'], ['press', 'video', '0', '--timecode', '25:00:00:00'], ['press', 'video', '0', '--rate', 'fast'], ['press', 'video']]) {
      const r = await cli(rig, args);
      expect({ args, exitCode: r.exitCode, lines: r.stderr.trimEnd().split('\n').length }).toEqual({ args, exitCode: 64, lines: 1 });
    }
    agent.child.kill('SIGTERM');
    await agent.exited;
    for (const args of [['press', 'video', '9'], ['press', 'video', '0', '--timecode', '01:00:00;00']]) {
      const r = await cli(rig, args);
      expect({ args, exitCode: r.exitCode, lines: r.stderr.trimEnd().split('\n').length }).toEqual({ args, exitCode: 64, lines: 1 });
    }
    expect(presses(rig)).toHaveLength(3);
    expect(rig.cloud.logging(rig.device.id)).toEqual({ presses: 3, accepted: 3, duplicates: 0, problems: [] });
  }, 120_000);

  it('a key-down on the input device (a FIFO) is a press; a comment reaches the clip\'s asset at its frame', async () => {
    const rig = await rigUp(SCALE);
    profiles(rig);
    writeFileSync(join(rig.dirs.root, 'config.json'), '{}\n');
    plug(rig, 'video');
    const fifo = join(rig.host, INPUT_DEVICE);
    mkdirSync(join(fifo, '..'), { recursive: true });
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const agent = await daemon(rig);
    await waitFor('the device read', () => agent.output().includes('reading the buttons of the input device'), 30_000);
    const fd = openSync(fifo, 'w');
    const now = Date.now();
    writeSync(fd, Buffer.concat([encodeEvent({ timeMs: now, type: EV_KEY, code: 28, value: 1 }, layoutFor()), encodeEvent({ timeMs: now + 80, type: EV_KEY, code: 28, value: 0 }, layoutFor())]));
    closeSync(fd);
    await waitFor('the button press', () => presses(rig).length >= 1, 30_000);
    expect(presses(rig).map((p) => [p.index, p.status, (start(p) as { rate: unknown }).rate])).toEqual([[0, 204, { playback: [25, 1], ntsc: null }]]);

    // A clip queued by hand, and a comment on it at frame 50.
    const clips = join(rig.dirs.root, 'clips');
    mkdirSync(clips, { recursive: true });
    writeFileSync(join(clips, 'take-7.mp4'), Buffer.alloc(300_000, 7));
    expect((await cli(rig, ['upload', join(clips, 'take-7.mp4'), '--json'])).exitCode).toBe(0);
    const c = await cli(rig, ['comment', join(clips, 'take-7.mp4'), 'Circle this one', '--frame', '50', '--json']);
    expect([c.exitCode, c.stderr]).toEqual([0, '']);
    expect(JSON.parse(c.stdout)).toMatchObject({ ok: true, via: 'daemon', comment: { id: expect.any(String), path: join(clips, 'take-7.mp4') } });
    await waitFor('the comment', () => rig.cloud.comments().length >= 1, 30_000);
    const asset = rig.cloud.assets().find((a) => a.name === 'take-7.mp4')!;
    expect(rig.cloud.comments().map((x) => [x.assetId, x.text, x.timestamp])).toEqual([[asset.id, 'Circle this one', 50]]);
    // A path outside the roots is a setting to change (78), a missing one the person's (64).
    const outside = await cli(rig, ['comment', '/etc/hostname', 'x']);
    expect(outside.exitCode).toBe(78);
    expect(outside.stderr).toMatch(/^c2c-agent: comment: .* is outside the media dir and the upload roots .*uploadRoots/);
    expect((await cli(rig, ['comment', join(clips, 'nope.mp4'), 'x'])).exitCode).toBe(64);
    expect((await cli(rig, ['comment', join(clips, 'take-7.mp4'), 'x', '--frame', 'ten'])).exitCode).toBe(64);
  }, 120_000);
});
