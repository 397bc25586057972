// Which paths the local API may queue: regular files inside the media dir
// or an upload root, never through a link out of it.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveUploadPath } from '../../agent/uploads/upload-paths.js';

describe('resolveUploadPath', () => {
  let top: string;
  let media: string;
  let extra: string;
  let secret: string;
  beforeEach(() => {
    top = mkdtempSync(path.join(os.tmpdir(), 'upload-paths-'));
    media = path.join(top, 'media');
    extra = path.join(top, 'extra');
    mkdirSync(path.join(media, 'cam1'), { recursive: true });
    mkdirSync(extra);
    writeFileSync(path.join(media, 'a.mp4'), 'aaaa');
    writeFileSync(path.join(media, 'cam1', 'b.mov'), 'bb');
    writeFileSync(path.join(extra, 'c.wav'), 'c');
    secret = path.join(top, 'credentials.json');
    writeFileSync(secret, '{"access_token":"x"}');
  });
  afterEach(() => rmSync(top, { recursive: true, force: true }));
  const roots = () => ({ roots: [media, extra], channelKeys: ['cam1'] });

  it('takes a file in the media dir (absolute or relative to it), in a channel folder, or in an upload root', async () => {
    const a = await resolveUploadPath(path.join(media, 'a.mp4'), roots());
    expect(a).toMatchObject({ ok: true, file: { path: path.join(media, 'a.mp4'), name: 'a.mp4', size: 4, filetype: 'video/mp4', extension: '.mp4' } });
    expect(await resolveUploadPath('a.mp4', roots())).toMatchObject({ ok: true, file: { path: path.join(media, 'a.mp4') } });
    expect(await resolveUploadPath(path.join(media, 'cam1', 'b.mov'), roots())).toMatchObject({ ok: true, file: { channelKey: 'cam1', size: 2 } });
    expect(await resolveUploadPath(path.join(extra, 'c.wav'), roots())).toMatchObject({ ok: true, file: { path: path.join(extra, 'c.wav') } });
  });

  it('refuses a path outside every root, a climb out with .., and a link that leads out (403, with the reason)', async () => {
    expect(await resolveUploadPath(secret, roots())).toMatchObject({ ok: false, status: 403, reason: expect.stringContaining('outside the media dir') });
    expect(await resolveUploadPath('../credentials.json', roots())).toMatchObject({ ok: false, status: 403 });
    expect(await resolveUploadPath('/etc/shadow', roots())).toMatchObject({ ok: false, status: 403 });
    symlinkSync(secret, path.join(media, 'innocent.mp4'));
    expect(await resolveUploadPath(path.join(media, 'innocent.mp4'), roots())).toMatchObject({ ok: false, status: 403, reason: expect.stringContaining('symbolic link out of') });
    symlinkSync(top, path.join(media, 'up'));
    expect(await resolveUploadPath(path.join(media, 'up', 'credentials.json'), roots())).toMatchObject({ ok: false, status: 403 });
  });

  it('a link that stays inside is followed to its target; a missing file is 404; a FIFO or a folder is 400', async () => {
    symlinkSync(path.join(media, 'a.mp4'), path.join(media, 'alias.mp4'));
    expect(await resolveUploadPath(path.join(media, 'alias.mp4'), roots())).toMatchObject({ ok: true, file: { path: path.join(media, 'a.mp4') } });
    expect(await resolveUploadPath(path.join(media, 'gone.mp4'), roots())).toMatchObject({ ok: false, status: 404 });
    execFileSync('mkfifo', [path.join(media, 'pipe.mp4')]);
    expect(await resolveUploadPath(path.join(media, 'pipe.mp4'), roots())).toMatchObject({ ok: false, status: 400, reason: expect.stringContaining('FIFO') });
    expect(await resolveUploadPath(path.join(media, 'cam1'), roots())).toMatchObject({ ok: false, status: 400 });
  });

  it('with no media dir and no roots, nothing is taken', async () => {
    expect(await resolveUploadPath(path.join(media, 'a.mp4'), { roots: [] })).toMatchObject({ ok: false, status: 403, reason: expect.stringContaining('no media dir') });
  });

  it('a name that only starts with two dots is inside, not a climb out (a file ..x.mp4, a folder ..old in an upload root)', async () => {
    writeFileSync(path.join(media, '..x.mp4'), 'x');
    mkdirSync(path.join(extra, '..old'));
    writeFileSync(path.join(extra, '..old', 'c.wav'), 'cc');
    expect(await resolveUploadPath('..x.mp4', roots())).toMatchObject({ ok: true, file: { path: path.join(media, '..x.mp4'), size: 1 } });
    expect(await resolveUploadPath(path.join(extra, '..old', 'c.wav'), roots())).toMatchObject({ ok: true, file: { path: path.join(extra, '..old', 'c.wav'), size: 2 } });
    expect(await resolveUploadPath('../media/..x.mp4', roots())).toMatchObject({ ok: true });
    expect(await resolveUploadPath('..', roots())).toMatchObject({ ok: false, status: 403 });
  });

  it('a media dir configured through a link takes a file named by its real path too, named as the watcher names it (the docs: the resolved path inside the resolved root)', async () => {
    const viaLink = path.join(top, 'sd');
    symlinkSync(media, viaLink);
    const r = { roots: [viaLink, extra], channelKeys: ['cam1'] };
    expect(await resolveUploadPath(path.join(media, 'a.mp4'), r)).toMatchObject({ ok: true, file: { path: path.join(viaLink, 'a.mp4'), size: 4 } });
    expect(await resolveUploadPath(path.join(media, 'cam1', 'b.mov'), r)).toMatchObject({ ok: true, file: { path: path.join(viaLink, 'cam1', 'b.mov'), channelKey: 'cam1' } });
    expect(await resolveUploadPath(path.join(viaLink, 'a.mp4'), r)).toMatchObject({ ok: true, file: { path: path.join(viaLink, 'a.mp4') } });
    expect(await resolveUploadPath('a.mp4', r)).toMatchObject({ ok: true, file: { path: path.join(viaLink, 'a.mp4') } });
    // Still nothing outside: the real path of the secret lies in no resolved root.
    expect(await resolveUploadPath(secret, r)).toMatchObject({ ok: false, status: 403 });
  });
});
