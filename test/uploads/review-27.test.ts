// Review of issue 27 (uploads read from the checked descriptor): a root that
// is itself replaced by a symbolic link.
//
// Every root check compares where the open file lies with the real path of
// its root *at that moment*. Whoever may write the folder holding the media
// dir (or an upload root; or a root configured as a link in such a place)
// can rename the media dir away and put a link to the agent's state dir in
// its place: the root's real path is then the state dir, credentials.json
// lies "inside" it, and it is queued by hand (POST /v1/uploads) and read by
// both workers (the media watcher would offer it too). The kernel's account
// of where the file is open cannot help: the file really is inside the
// root's new real path.
//
// The agent's own dirs (state, runtime, config, credentials) are what such a
// swap is after, and they do not move: given as `own` in UploadRoots, no
// file whose real path lies in one is queued or read, whatever a root
// resolves to.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { OutboxItem } from '../../agent/outbox/types.js';
import { RealtimeWorker } from '../../agent/uploads/realtime-worker.js';
import { REALTIME_KIND, type RealtimePayload } from '../../agent/uploads/realtime-item.js';
import type { UploadPayload } from '../../agent/uploads/upload-item.js';
import { resolveUploadPath, type UploadRoots } from '../../agent/uploads/upload-paths.js';
import { UploadWorker } from '../../agent/uploads/upload-worker.js';
import { NotTaken, nodeUploadFiles, openForUpload } from '../../agent/uploads/version-check.js';
import { FakeClock } from '../support/fake-clock.js';
import { ownDirs } from '../../agent/daemon/units.js';
import { realtimeDeps } from './realtime-stubs.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** camera/ (the camera user's, so writable by it) holds the media dir; state/ is the agent's. */
function place() {
  const top = mkdtempSync(path.join(tmpdir(), 'c2c-review27-'));
  dirs.push(top);
  const state = path.join(top, 'state');
  const camera = path.join(top, 'camera');
  const media = path.join(camera, 'media');
  mkdirSync(state);
  mkdirSync(media, { recursive: true });
  const secret = path.join(state, 'credentials.json');
  writeFileSync(secret, '{"access_token":"C2C-REVIEW-27-SECRET"}');
  writeFileSync(path.join(media, 'clip.mp4'), 'a clip');
  /** The camera user's move: the media dir aside, a link to the state dir in its place. */
  const swap = (): void => {
    renameSync(media, `${media}.orig`);
    symlinkSync(state, media);
  };
  return { top, state, media, secret, swap };
}

const payloadOf = (file: string): UploadPayload => {
  const st = statSync(file);
  return { path: file, name: path.basename(file), filetype: 'application/json', size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, dev: st.dev };
};

describe('a media dir replaced by a link to the state dir', () => {
  it('with only the roots: credentials.json passes every root check, since the root really resolves to the state dir now; only `own` can tell', async () => {
    const { media, swap } = place();
    swap();
    const roots: UploadRoots = { roots: [media] };
    expect(await resolveUploadPath('credentials.json', roots)).toMatchObject({ ok: true });
    const opened = await openForUpload(path.join(media, 'credentials.json'), nodeUploadFiles, roots);
    await opened.file.close();
  });

  it('the daemon gives its own dirs (state, runtime, credentials, config, token and secret files\' dirs), leaving out one that holds a root as configured', () => {
    const settings = { stateDir: '/var/lib/c2c-agent', runtimeDir: '/run/c2c-agent', configFile: '/etc/c2c-agent/config.json', tokenFile: '/var/lib/c2c-agent/credentials.json', clientSecretFile: '/etc/c2c-agent/client-secret' };
    expect(ownDirs(settings, ['/srv/media']).sort()).toEqual(['/etc/c2c-agent', '/run/c2c-agent', '/run/credentials/c2c-agent.service', '/var/lib/c2c-agent']);
    expect(ownDirs({ ...settings, credentialsDir: '/run/creds' }, ['/var/lib/c2c-agent/media'])).toEqual(['/run/c2c-agent', '/run/creds', '/etc/c2c-agent']);
  });

  it('with the agent\'s own dirs given: refused when queued by hand (403) and when opened for an upload; clips still go', async () => {
    const { state, media, swap } = place();
    const roots: UploadRoots = { roots: [media], own: [state] };
    expect(await resolveUploadPath('clip.mp4', roots)).toMatchObject({ ok: true });
    const clip = await openForUpload(path.join(media, 'clip.mp4'), nodeUploadFiles, roots);
    await clip.file.close();
    swap();
    expect(await resolveUploadPath('credentials.json', roots)).toMatchObject({ ok: false, status: 403, reason: expect.stringContaining("the agent's own") });
    await expect(openForUpload(path.join(media, 'credentials.json'), nodeUploadFiles, roots)).rejects.toBeInstanceOf(NotTaken);
  });

  it('an upload root swapped the same way, and a path under no root inside an own dir (queued by `upload`): refused', async () => {
    const { top, state, secret } = place();
    const exports = path.join(top, 'camera', 'exports');
    symlinkSync(state, exports);
    const roots: UploadRoots = { roots: [path.join(top, 'nowhere'), exports], own: [state] };
    expect(await resolveUploadPath(path.join(exports, 'credentials.json'), roots)).toMatchObject({ ok: false, status: 403 });
    await expect(openForUpload(secret, nodeUploadFiles, roots)).rejects.toBeInstanceOf(NotTaken);
  });

  it('the own dir named through a link (a state dir configured as /var/lib/x -> /data/x) still counts', async () => {
    const { top, state, media, swap } = place();
    const alias = path.join(top, 'state-alias');
    symlinkSync(state, alias);
    swap();
    await expect(openForUpload(path.join(media, 'credentials.json'), nodeUploadFiles, { roots: [media], own: [alias] })).rejects.toBeInstanceOf(NotTaken);
  });

  it('the upload worker refuses it before an asset or a byte', async () => {
    const { state, media, swap } = place();
    swap();
    const calls: string[] = [];
    const worker = new UploadWorker({
      assets: { create: async () => (calls.push('create'), { value: { id: 'a', uploadUrls: ['http://127.0.0.1/_storage/a/0'] }, meta: {} }) as never },
      storage: { put: async () => (calls.push('put'), { status: 200 }) },
      outbox: { progress: async () => undefined, flush: async () => undefined },
      urls: { save: async () => undefined, load: async () => undefined, remove: async () => undefined },
      clock: new FakeClock(),
      serverNow: () => Date.UTC(2026, 0, 1),
      channelId: async () => undefined,
      index: { has: () => false, add: async () => undefined },
      deleteAfterUpload: false,
      roots: { roots: [media], own: [state] },
    });
    const item: OutboxItem = { id: 'b:1', kind: 'upload', priority: 0, payload: payloadOf(path.join(media, 'credentials.json')), createdAt: '', bytes: 0, state: 'pending' };
    const out = await worker.run(item, new AbortController().signal);
    expect(out).toMatchObject({ result: 'dead', reason: expect.stringContaining("the agent's own") });
    expect(calls).toEqual([]);
  });

  it('the real-time worker refuses it before an asset or a byte', async () => {
    const { state, media, swap } = place();
    writeFileSync(path.join(state, 'rec.mp4.part'), 'not a recording');
    swap();
    const part = path.join(media, 'rec.mp4.part');
    const st = statSync(part);
    const payload: RealtimePayload = { path: part, finalPath: path.join(media, 'rec.mp4'), name: 'rec.mp4', filetype: 'video/mp4', mtimeMs: st.mtimeMs, ino: st.ino, dev: st.dev };
    const calls: string[] = [];
    const ac = new AbortController();
    const worker = new RealtimeWorker(
      realtimeDeps({
        assets: {
          createRealtime: async () => (calls.push('create'), ac.abort(), { value: { id: 'a' }, meta: {} }) as never,
          realtimeParts: async () => (calls.push('parts'), { value: ['http://127.0.0.1/_storage/a/1'], meta: {} }) as never,
        },
        storage: { put: async () => (calls.push('put'), { status: 200 }) },
        roots: { roots: [media], own: [state] },
      }),
    );
    const out = await worker.run({ id: 'b:2', kind: REALTIME_KIND, priority: 0, payload, createdAt: '', bytes: 0, state: 'pending' }, ac.signal);
    expect(out).toMatchObject({ result: 'dead', reason: expect.stringContaining("the agent's own") });
    expect(calls).toEqual([]);
  });
});
