// Each store owns its files: it sweeps the temp files a kill left behind when
// it opens (daemon/main.ts names none of them). A store another process may
// be writing at the same moment removes only old temps.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ChannelMapStore } from '../../agent/channels/channel-map.js';
import { tempPathFor } from '../../agent/lib/atomic-write.js';
import { acquireRunLock } from '../../agent/daemon/runtime/run-lock.js';
import { UploadedIndex, UPLOADED_INDEX_FILE } from '../../agent/uploads/uploaded-index.js';
import { UploadUrls, UPLOAD_URLS_DIR } from '../../agent/uploads/upload-urls.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'c2c-store-temps-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const plant = (file: string, ageMs = 0): string => {
  writeFileSync(file, 'x');
  if (ageMs > 0) {
    const t = (Date.now() - ageMs) / 1000;
    utimesSync(file, t, t);
  }
  return file;
};

describe('stores sweep their own temp files', () => {
  it('the channel record: the daemon (sole writer) removes every conf temp; another command only old ones', async () => {
    const young = plant(path.join(dir, 'channels.json.tmp-1234567890abcdef'));
    const old = plant(path.join(dir, 'channels.json.tmp-0000000001abcdef'), 300_000);
    const other = plant(path.join(dir, 'client-id.json.tmp-1234567890abcdef'));
    await new ChannelMapStore(dir).load();
    expect([existsSync(young), existsSync(old), existsSync(other)]).toEqual([true, false, true]);
    const swept: string[][] = [];
    await new ChannelMapStore(dir, { soleWriter: true, onSwept: (n) => void swept.push(n) }).load();
    expect([existsSync(young), existsSync(other)]).toEqual([false, true]);
    expect(swept).toEqual([[path.basename(young)]]);
  });

  it('the upload index and the upload URL lists: their own temps go on first use, nothing else', async () => {
    const idxTemp = plant(tempPathFor(path.join(dir, UPLOADED_INDEX_FILE)));
    const foreign = plant(tempPathFor(path.join(dir, 'credentials.json')));
    await new UploadedIndex(dir).load();
    expect([existsSync(idxTemp), existsSync(foreign)]).toEqual([false, true]);
    const urlsDir = path.join(dir, 'queue', UPLOAD_URLS_DIR);
    mkdirSync(urlsDir, { recursive: true });
    const urlTemp = plant(tempPathFor(path.join(urlsDir, 'asset-1.json')));
    expect(await new UploadUrls(path.join(dir, 'queue')).load('asset-2')).toBeUndefined();
    expect(existsSync(urlTemp)).toBe(false);
  });

  it('the runtime dir: whoever takes the run lock removes the temps a kill left there', () => {
    const status = plant(tempPathFor(path.join(dir, 'status.json')));
    const notes = plant(path.join(dir, 'notes.tmp'));
    const lock = acquireRunLock(dir);
    expect(lock.kind).toBe('acquired');
    if (lock.kind !== 'acquired') return;
    expect(lock.swept).toEqual([path.basename(status)]);
    expect(existsSync(notes)).toBe(true);
    lock.release();
  });
});
