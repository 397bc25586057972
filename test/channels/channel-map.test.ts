// The channel record on flash: mode 0600, written only when it changes (the
// same file, inode and mtime after an unchanged save), and a corrupt file is
// a configuration error naming it, left as it was.
import { afterAll, describe, expect, test } from '@jest/globals';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ChannelMapStore } from '../../agent/channels/channel-map.js';
import { AgentError } from '../../agent/lib/errors.js';
import { until } from '../support/until.js';

const base = mkdtempSync(path.join(tmpdir(), 'c2c-chmap-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
let n = 0;
const stateDir = (): string => path.join(base, `state-${n++}`);

async function failure(p: Promise<unknown>): Promise<AgentError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AgentError) return err;
    throw err;
  }
  throw new Error('expected an AgentError');
}

describe('ChannelMapStore', () => {
  test('the constructor touches nothing; an absent record loads empty and writes nothing', async () => {
    const dir = stateDir();
    const store = new ChannelMapStore(dir);
    expect(existsSync(dir)).toBe(false);
    expect(await store.load()).toEqual({});
    expect(existsSync(store.file)).toBe(false);
    expect(await store.save({})).toBe(false);
    expect(existsSync(store.file)).toBe(false);
  });

  test('saved with mode 0600 and read back, also by a new store', async () => {
    const dir = stateDir();
    const store = new ChannelMapStore(dir);
    expect(await store.save({ video: 'c-1', audio: 'c-2' })).toBe(true);
    expect(store.file).toBe(path.join(dir, 'channels.json'));
    expect(statSync(store.file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(store.file, 'utf8'))).toEqual({ channels: { audio: 'c-2', video: 'c-1' } });
    expect(await new ChannelMapStore(dir).load()).toEqual({ video: 'c-1', audio: 'c-2' });
  });

  test('an unchanged record is not written: same inode, same mtime, same bytes', async () => {
    const dir = stateDir();
    const store = new ChannelMapStore(dir);
    await store.save({ video: 'c-1', audio: 'c-2' });
    const before = statSync(store.file, { bigint: true });
    const bytes = readFileSync(store.file, 'utf8');
    // The file system's clock past the record's mtime, so that a write now would show in it.
    const probe = path.join(dir, 'clock-probe');
    await until('the file system clock past the record', () => (writeFileSync(probe, ''), statSync(probe, { bigint: true }).mtimeNs > before.mtimeNs), { everyMs: 1 });
    // Another key order is the same record.
    expect(await store.save({ audio: 'c-2', video: 'c-1' })).toBe(false);
    expect(await new ChannelMapStore(dir).save({ video: 'c-1', audio: 'c-2' })).toBe(false);
    const after = statSync(store.file, { bigint: true });
    expect(after.ino).toBe(before.ino);
    expect(after.mtimeNs).toBe(before.mtimeNs);
    expect(readFileSync(store.file, 'utf8')).toBe(bytes);
    // A real change is written (atomically: a new inode).
    expect(await store.save({ video: 'c-1' })).toBe(true);
    expect(statSync(store.file, { bigint: true }).ino).not.toBe(before.ino);
    expect(await store.load()).toEqual({ video: 'c-1' });
    // Emptying the record is a change too.
    expect(await store.save({})).toBe(true);
    expect(await store.load()).toEqual({});
  });

  test('keys that look like paths are stored as they are', async () => {
    const store = new ChannelMapStore(stateDir());
    await store.save({ 'a.b': 'x' });
    expect(await store.load()).toEqual({ 'a.b': 'x' });
  });

  test.each([
    ['not JSON', '{not json'],
    ['channels not an object', '{"channels": ["x"]}'],
    ['an id not a string', '{"channels": {"video": 7}}'],
  ])('a corrupt record (%s) is a config error (exit 78) naming the file, and is left alone', async (_what, text) => {
    const dir = stateDir();
    mkdirSync(dir);
    const file = path.join(dir, 'channels.json');
    writeFileSync(file, text, { mode: 0o600 });
    const store = new ChannelMapStore(dir);
    for (const err of [await failure(store.load()), await failure(store.save({ video: 'c-9' }))]) {
      expect(err.kind).toBe('config');
      expect(err.exitCode).toBe(78);
      expect(err.message).toContain(file);
      expect(err.details.source).toBe(file);
    }
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  test('a state dir that is not a directory is a config error naming the file', async () => {
    const dir = stateDir();
    writeFileSync(dir, 'not a directory');
    const err = await failure(new ChannelMapStore(dir).load());
    expect(err.exitCode).toBe(78);
    expect(err.message).toContain(path.join(dir, 'channels.json'));
    expect(err.message).toMatch(/ENOTDIR|EEXIST/);
  });
});
