import { describe, it, expect, afterAll } from '@jest/globals';
import { statSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { getClientId } from '../../agent/auth/client-id.js';
import { syncDirectory } from '../../agent/lib/atomic-write.js';
import { AgentError } from '../../agent/lib/errors.js';
import { tempDir } from './helpers.js';

const tmp = tempDir('c2c-clientid-');
afterAll(() => tmp.cleanup());

describe('client id', () => {
  it('is generated once, kept in the state dir with mode 0600, and reused', async () => {
    const stateDir = path.join(tmp.dir, 'state');
    const first = await getClientId({ stateDir, sources: {} });
    expect(first.clientId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const file = path.join(stateDir, 'agent-state.json');
    expect(first.source).toBe(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ clientId: first.clientId });
    expect((await getClientId({ stateDir, sources: {} })).clientId).toBe(first.clientId);
  });

  it('creating the id fsyncs the state directory (and its parent when conf made it); reading it again syncs nothing', async () => {
    const parent = path.join(tmp.dir, 'sync-parent');
    mkdirSync(parent);
    const stateDir = path.join(parent, 'state');
    const synced: string[] = [];
    const deps = { syncDirectory: async (dir: string): Promise<void> => void synced.push(dir) };
    const first = await getClientId({ stateDir, sources: {} }, deps);
    expect(synced).toEqual([stateDir, parent]);
    expect(statSync(path.join(stateDir, 'agent-state.json')).mode & 0o777).toBe(0o600);
    synced.length = 0;
    expect((await getClientId({ stateDir, sources: {} }, deps)).clientId).toBe(first.clientId);
    expect(synced).toEqual([]);
  });

  it('the real directory sync works on an existing state dir', async () => {
    const stateDir = path.join(tmp.dir, 'real-sync');
    mkdirSync(stateDir);
    await expect(syncDirectory(stateDir)).resolves.toBeUndefined();
    const { clientId } = await getClientId({ stateDir, sources: {} });
    expect(JSON.parse(readFileSync(path.join(stateDir, 'agent-state.json'), 'utf8'))).toEqual({ clientId });
  });

  it('an explicit setting wins and writes nothing', async () => {
    const stateDir = path.join(tmp.dir, 'explicit');
    const got = await getClientId({ clientId: 'unit-42', stateDir, sources: { clientId: '--client-id' } });
    expect(got).toEqual({ clientId: 'unit-42', source: '--client-id' });
    expect(() => statSync(stateDir)).toThrow();
  });

  it('a corrupt store is a config error naming the file, not a new identity', async () => {
    const stateDir = path.join(tmp.dir, 'corrupt');
    mkdirSync(stateDir);
    writeFileSync(path.join(stateDir, 'agent-state.json'), '{not json');
    const err = await getClientId({ stateDir, sources: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentError);
    expect((err as AgentError).exitCode).toBe(78);
    expect((err as AgentError).message).toContain(path.join(stateDir, 'agent-state.json'));
    expect(readFileSync(path.join(stateDir, 'agent-state.json'), 'utf8')).toBe('{not json');
  });
});
