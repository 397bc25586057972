// The CLI's commands for the local API, end to end: the built bundle as a
// real daemon against the fake cloud (scale 60, 256 KiB parts), and the same
// commands with no daemon. `cancel`, `priority` and `prefs` steer the daemon
// (DELETE/PATCH /v1/uploads, GET/PATCH /v1/prefs); `upload`, `status` and
// `queue` go through it when it runs; no secret is in any output.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from './agent-process.js';
import { agentTimeMark } from './agent-time.js';
import { cli, type CliResult } from './channels-harness.js';
import { assetsNamed, completeNamed, startUploadAgent, storagePuts, storedProblems, uploadQueue, useUploadRigs, writeMedia } from './uploads-harness.js';

const SCALE = 60;
const HOUR = 3600_000;
const { rigUp, online } = useUploadRigs(SCALE);

/** Secrets the rig holds: the token file's tokens and the client secret. */
function secretsOf(credentials: string, secretFile: string): string[] {
  const c = JSON.parse(readFileSync(credentials, 'utf8')) as Record<string, unknown>;
  return [c.access_token, c.refresh_token, readFileSync(secretFile, 'utf8').trim()].filter((s): s is string => typeof s === 'string' && s.length > 0);
}

function oneStderrLine(r: CliResult): string {
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).not.toMatch(/internal error/);
  return lines[0]!;
}

describe('cancel, priority and prefs', () => {
  it('without a daemon: each is exit 69 with one line saying no daemon runs; upload still queues from the files', async () => {
    const rig = await rigUp();
    for (const args of [['cancel', 'a:1'], ['cancel', '--all'], ['priority', 'a:1', 'high'], ['prefs'], ['prefs', 'autoUpload=off']]) {
      const r = await cli(rig, args);
      expect({ args, exitCode: r.exitCode, ok: r.json.ok }).toEqual({ args, exitCode: 69, ok: false });
      expect(oneStderrLine(r)).toMatch(/no daemon runs \(nothing serves .*api\.sock\)/);
    }
    const clip = join(rig.dirs.root, 'outside', 'offline.mp4');
    writeMedia(clip, 1000, HOUR);
    expect(await cli(rig, ['upload', clip])).toMatchObject({ exitCode: 0, json: { ok: true, via: 'queue' } });
    // Usage mistakes are 64 before anything is asked.
    for (const args of [['cancel'], ['cancel', 'a:1', '--all'], ['priority', 'a:1'], ['priority', 'a:1', 'urgent'], ['upload', clip, '--priority', 'soon']]) {
      expect({ args, exitCode: (await cli(rig, args)).exitCode }).toEqual({ args, exitCode: 64 });
    }
  }, 60_000);

  it('with a daemon: upload through the API, priority, cancel one in flight and the rest with --all, prefs autoUpload off and on; the service ends with exactly the expected assets', async () => {
    const rig = await rigUp();
    const agent = startUploadAgent(rig);
    await online(rig, agent);
    const secrets = secretsOf(join(rig.dirs.stateDir, 'credentials.json'), rig.secretFile);
    const outputs: CliResult[] = [];
    const run = async (args: string[]): Promise<CliResult> => {
      const r = await cli(rig, args);
      outputs.push(r);
      return r;
    };

    expect(await run(['status'])).toMatchObject({ exitCode: 0, json: { ok: true, running: true, state: 'online' } });
    expect(await run(['prefs'])).toMatchObject({ exitCode: 0, json: { ok: true, prefs: { autoUpload: true }, changed: [] } });

    // Auto-upload off: a clip in the media dir is left alone until it is on again.
    expect(await run(['prefs', 'autoUpload=off'])).toMatchObject({ exitCode: 0, json: { prefs: { autoUpload: false }, changed: ['autoUpload'] } });
    expect(await run(['prefs', 'autoUpload=off'])).toMatchObject({ exitCode: 0, json: { changed: [] } });
    const heldAt = agentTimeMark(rig.cloud);
    const held = writeMedia(join(rig.media, 'held.mp4'), 300_000, HOUR);
    // A minute and more of the daemon's time: its media rescans (every 5 agent s) found the clip and held it.
    await heldAt.passed('held.mp4 written');
    expect(assetsNamed(rig.cloud, 'held.mp4')).toEqual([]);
    const bad = await run(['prefs', 'autoUpload=maybe']);
    expect(bad.exitCode).toBe(64);
    expect(oneStderrLine(bad)).toContain('must be on or off');
    expect((await run(['prefs', 'noSuchPref=1'])).exitCode).toBe(64);

    // Storage slowed (60 agent s a part, a real second at scale 60: b and c need 20 real s and more), so the uploads are
    // still on their way when they are steered, however slowly a loaded machine runs the eight commands before `cancel --all`.
    const slow = rig.cloud.control.addFault({ kind: 'delay', delayMs: 60_000, path: '/_storage/*' });
    const outside = join(rig.dirs.root, 'outside');
    const a = writeMedia(join(outside, 'a.mp4'), 40 * 256 * 1024, HOUR);
    writeMedia(join(outside, 'b.mp4'), 40 * 256 * 1024, HOUR);
    writeMedia(join(outside, 'c.mp4'), 40 * 256 * 1024, HOUR);
    const up = await run(['upload', join(outside, 'a.mp4'), join(outside, 'b.mp4'), join(outside, 'c.mp4')]);
    expect(up).toMatchObject({ exitCode: 0, json: { ok: true, via: 'daemon' } });
    const files = up.json.files as Array<{ path: string; id: string; queued: boolean; size: number }>;
    expect(files.map((f) => [f.path.slice(outside.length + 1), f.queued, f.size])).toEqual([['a.mp4', true, 40 * 256 * 1024], ['b.mp4', true, 40 * 256 * 1024], ['c.mp4', true, 40 * 256 * 1024]]);
    const id = Object.fromEntries(files.map((f) => [f.path.slice(outside.length + 1), f.id]));
    // a.mp4 in flight (its asset made, parts on the way): cancelled, it stops and never completes.
    await waitFor('a.mp4 sending', () => assetsNamed(rig.cloud, 'a.mp4').length === 1 && storagePuts(rig.cloud, assetsNamed(rig.cloud, 'a.mp4')[0]!.id).length > 0, 20_000, 5);
    const cancelA = await run(['cancel', id['a.mp4']!]);
    expect(cancelA).toMatchObject({ exitCode: 0, json: { ok: true, cancelled: [{ id: id['a.mp4'], name: 'a.mp4' }] } });
    const putsAtCancel = storagePuts(rig.cloud, assetsNamed(rig.cloud, 'a.mp4')[0]!.id).length;
    expect(completeNamed(rig.cloud, 'a.mp4')).toEqual([]);
    // The same file again: its id back, not queued twice.
    expect(await run(['upload', join(outside, 'a.mp4')])).toMatchObject({ exitCode: 0, json: { files: [{ id: id['a.mp4'], queued: false }] } });
    // A file outside the media dir and the upload roots is refused, nothing queued: a setting to change (78), not the service's refusal (77).
    const stray = join(rig.dirs.root, 'elsewhere', 'stray.mp4');
    writeMedia(stray, 1000, HOUR);
    const refused = await run(['upload', stray]);
    expect(refused.exitCode).toBe(78);
    expect(oneStderrLine(refused)).toContain('is outside the media dir and the upload roots');

    expect(await run(['priority', id['c.mp4']!, 'high'])).toMatchObject({ exitCode: 0, json: { ok: true, id: id['c.mp4'], priority: 'high' } });
    expect((await run(['priority', 'no-such-id', 'high'])).exitCode).toBe(64);

    const all = await run(['cancel', '--all']);
    expect(all.exitCode).toBe(0);
    const rest = (all.json.cancelled as Array<{ id: string }>).map((c) => c.id);
    expect((await run(['cancel', 'no-such-id'])).exitCode).toBe(64);
    slow.remove();

    // Auto-upload on again: the held clip goes.
    expect(await run(['prefs', 'autoUpload=on'])).toMatchObject({ exitCode: 0, json: { prefs: { autoUpload: true } } });
    await waitFor('held.mp4 stored', () => storedProblems(rig.cloud, 'held.mp4', held).length === 0, 20_000, 50);
    const storedAt = agentTimeMark(rig.cloud);
    // A minute and more of the daemon's time with storage answering at once: a.mp4 would have gone on by now.
    await storedAt.passed('held.mp4 stored');
    expect(completeNamed(rig.cloud, 'a.mp4')).toEqual([]);
    expect(storagePuts(rig.cloud, assetsNamed(rig.cloud, 'a.mp4')[0]!.id).length).toBeLessThanOrEqual(putsAtCancel + 1);
    expect(storedProblems(rig.cloud, 'a.mp4', a).length).toBeGreaterThan(0);

    // The service holds exactly what the queue says went: held.mp4, and of b and c those that ended done (40 parts of a
    // real second each leave them on their way when --all comes); a cancelled one has no complete asset.
    const q = await uploadQueue(rig);
    const stateOf = (name: string): string | undefined => (q.items.map((i) => i.upload as { name?: string; state?: string } | undefined).find((u) => u?.name === name))?.state;
    expect(stateOf('a.mp4')).toBe('cancelled');
    for (const n of ['b.mp4', 'c.mp4']) expect({ n, state: stateOf(n) }).toEqual({ n, state: expect.stringMatching(/^(done|cancelled)$/) });
    expect(rest.sort()).toEqual([id['b.mp4'], id['c.mp4']].sort());
    const done = ['b.mp4', 'c.mp4'].filter((n) => stateOf(n) === 'done');
    expect(new Set(rig.cloud.assets().filter((x) => x.complete).map((x) => x.name))).toEqual(new Set(['held.mp4', ...done]));
    for (const n of done) expect(storedProblems(rig.cloud, n, readFileSync(join(outside, n)))).toEqual([]);
    const text = outputs.map((r) => `${JSON.stringify(r.json)}\n${r.stderr}`).join('\n');
    for (const s of secrets) expect(text).not.toContain(s);
  }, 90_000);
});
