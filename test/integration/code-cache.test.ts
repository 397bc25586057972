// The daemon's file as the unit runs it (`node <DAEMON_V8_FLAGS>
// dist/c2c-agentd.cjs run`, CacheDirectory=): its loader (agent/daemon/boot.ts)
// compiles the daemon through V8's code cache, which the daemon writes once
// it is up (agent/daemon/code-cache.ts). A process suite: what is checked is
// the built loader and V8's answer to a file on disk, which only a real node
// start shows. It judges outcomes (a file written or not, a log line, a
// heartbeat), never a time.
import { describe, expect, it, afterAll } from '@jest/globals';
import { createHash } from 'node:crypto';
import { brotliDecompressSync } from 'node:zlib';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Script } from 'node:vm';
import { DAEMON_V8_FLAGS } from '../../agent/daemon/v8-flags.js';
import { CODE_CACHE_DIGEST_BYTES, CODE_CACHE_SUFFIX } from '../../agent/daemon/code-cache-hook.js';
import { ROOT, startAgent, useAgentCloud, waitFor, type AgentProcess } from './agent-process.js';

// The cache is written a minute of agent time after a start: 0.1 s at this scale.
const SCALE = 600;
const STEP_MS = 20_000;
const NODE_ARGS = [...DAEMON_V8_FLAGS];

const fx = useAgentCloud({ timeScale: SCALE, devices: 16 });
let nextDevice = 0;
const cleanup: string[] = [];
afterAll(() => {
  for (const d of cleanup) rmSync(d, { recursive: true, force: true });
});

function cacheDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'c2c-code-cache-'));
  cleanup.push(dir);
  return dir;
}

const cacheFiles = (dir: string): string[] => readdirSync(dir).filter((f) => f.endsWith(CODE_CACHE_SUFFIX));

/** The daemon as the unit runs it, on a device of its own, logging at debug. */
function launch(env: Record<string, string>, nodeArgs: string[] = NODE_ARGS): { agent: AgentProcess; deviceId: string } {
  const dirs = fx.dirs();
  const device = fx.cloud.devices[nextDevice++]!;
  const agent = startAgent({ apiUrl: fx.cloud.url, token: device.accessToken, dirs, timeScale: SCALE, nodeArgs, env: { C2C_LOG_LEVEL: 'debug', ...env } });
  return { agent, deviceId: device.id };
}

const heartbeats = (deviceId: string): number => fx.cloud.journal.filter((e) => e.deviceId === deviceId && e.path === '/v2/devices/heartbeat' && e.status >= 200 && e.status < 300).length;

async function logged(agent: AgentProcess, text: string): Promise<void> {
  await waitFor(`the log line "${text}"`, () => agent.output().includes(text) || agent.child.exitCode !== null, STEP_MS).catch(() => undefined);
  if (!agent.output().includes(text)) throw new Error(`no "${text}" in the agent's output:\n${agent.output()}`);
}

async function stop(agent: AgentProcess): Promise<void> {
  agent.child.kill('SIGTERM');
  expect(await agent.exited).toEqual({ code: 0, signal: null });
}

describe('the code cache', () => {
  it('is written once, whole and private, by the first start, and read by the next, which writes nothing', async () => {
    const dir = cacheDir();
    // A write cut short before (a power cut between open and rename) left its temp file: the next write sweeps it.
    const leftover = '.c2c-agentd-0123456789abcdef-v0-x-00000000.v8cache.0a1b2c3d4e5f.tmp';
    writeFileSync(join(dir, leftover), 'half');
    const first = launch({ CACHE_DIRECTORY: dir });
    await logged(first.agent, 'wrote the code cache');
    await waitFor('a heartbeat', () => heartbeats(first.deviceId) > 0, STEP_MS);
    await stop(first.agent);
    const files = readdirSync(dir);
    // One file, no temp left beside it, readable by the daemon's user only.
    expect(files).toEqual(cacheFiles(dir));
    expect(files).toHaveLength(1);
    const file = join(dir, files[0]!);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(file).size).toBeGreaterThan(100_000);
    const before = statSync(file);

    const second = launch({ CACHE_DIRECTORY: dir });
    await logged(second.agent, 'started from the code cache');
    await waitFor('a heartbeat', () => heartbeats(second.deviceId) > 0, STEP_MS);
    await stop(second.agent);
    expect(second.agent.output()).not.toContain('wrote the code cache');
    const after = statSync(file);
    expect([after.ino, after.mtimeMs, after.size]).toEqual([before.ino, before.mtimeMs, before.size]);
  }, 60_000);

  // Damage that V8's own header checks miss (the middle of its data: a crash or old code, not a refusal) is
  // caught by the file's digest; damage the digest misses (one made for bad data) is V8's to refuse.
  for (const [kind, damage] of [
    ['a byte in the middle of the data, its digest left as it was', (data: Buffer) => void (data[Math.floor(data.length / 2)] = data[Math.floor(data.length / 2)]! ^ 0xff)],
    ['V8\'s own header, with a digest made for it', (data: Buffer) => {
      for (let i = CODE_CACHE_DIGEST_BYTES; i < CODE_CACHE_DIGEST_BYTES + 4; i++) data[i] = data[i]! ^ 0xff;
      createHash('sha256').update(data.subarray(CODE_CACHE_DIGEST_BYTES)).digest().copy(data, 0);
    }],
  ] as const) {
    it(`damaged (${kind}) is removed without being run, the daemon runs on, and the next start writes it again`, async () => {
      const dir = cacheDir();
      const first = launch({ CACHE_DIRECTORY: dir });
      await logged(first.agent, 'wrote the code cache');
      await stop(first.agent);
      const file = join(dir, cacheFiles(dir)[0]!);
      const data = readFileSync(file);
      damage(data);
      writeFileSync(file, data);

      const damaged = launch({ CACHE_DIRECTORY: dir });
      await logged(damaged.agent, kind.startsWith('a byte') ? 'the code cache is damaged (its digest does not match)' : 'V8 refused the code cache');
      await waitFor('a heartbeat', () => heartbeats(damaged.deviceId) > 0, STEP_MS);
      await stop(damaged.agent);
      expect(cacheFiles(dir)).toEqual([]);

      const next = launch({ CACHE_DIRECTORY: dir });
      await logged(next.agent, 'wrote the code cache');
      await stop(next.agent);
      expect(cacheFiles(dir)).toHaveLength(1);
    }, 60_000);
  }

  it('in a directory the daemon cannot use costs one warning, and the daemon runs on', async () => {
    // A regular file where the directory should be: the cache can be neither read nor written.
    const notADir = join(cacheDir(), 'file');
    writeFileSync(notADir, 'x');
    const a = launch({ CACHE_DIRECTORY: notADir });
    await logged(a.agent, 'cannot read the code cache');
    await waitFor('a heartbeat', () => heartbeats(a.deviceId) > 0, STEP_MS);
    await stop(a.agent);

    // A directory it may not write to (root would write anyway: only as another user does the mode count).
    if (process.getuid?.() !== 0) {
      const ro = cacheDir();
      chmodSync(ro, 0o500);
      const b = launch({ CACHE_DIRECTORY: ro });
      await logged(b.agent, 'cannot write the code cache');
      await stop(b.agent);
    }
  }, 60_000);

  it('is not written by a daemon node was not started with the daemon\'s V8 flags for (they would be set after its code compiled)', async () => {
    const dir = cacheDir();
    const a = launch({ CACHE_DIRECTORY: dir }, []);
    await logged(a.agent, 'no code cache: node was not started with the daemon\'s V8 flags');
    await waitFor('two heartbeats', () => heartbeats(a.deviceId) > 1, STEP_MS);
    await stop(a.agent);
    expect(readdirSync(dir)).toEqual([]);
  }, 60_000);

  it('without CACHE_DIRECTORY: the daemon is compiled without the cache and writes nothing anywhere', async () => {
    const a = launch({});
    await waitFor('two heartbeats', () => heartbeats(a.deviceId) > 1, STEP_MS);
    await stop(a.agent);
    expect(a.agent.output()).not.toMatch(/code cache/);
  }, 60_000);
});

describe('the daemon file run through the loader', () => {
  it('runs its start, an idle stretch and its stop without node:fs/promises, readline or their directory modules (lib/fs-async.ts), nor node:cluster, child_process or dgram (lib/socket-path.ts listenUnix)', async () => {
    // A preload writes node's list of its loaded modules as the process exits; the daemon runs from its cache.
    const dir = cacheDir();
    const list = join(dir, 'modules.json');
    const preload = join(dir, 'modules.cjs');
    writeFileSync(preload, `const { writeFileSync } = require('node:fs');\nprocess.on('exit', () => writeFileSync(${JSON.stringify(list)}, JSON.stringify(process.moduleLoadList)));\n`);
    const warm = launch({ CACHE_DIRECTORY: dir });
    await logged(warm.agent, 'wrote the code cache');
    await stop(warm.agent);
    const idle = launch({ CACHE_DIRECTORY: dir }, [...NODE_ARGS, '--require', preload]);
    await waitFor('three heartbeats', () => heartbeats(idle.deviceId) >= 3, STEP_MS);
    await stop(idle.agent);
    const loaded = (JSON.parse(readFileSync(list, 'utf8')) as string[]).filter((m) => m.startsWith('NativeModule '));
    // The list is real: the daemon's own modules are in it.
    expect(loaded).toEqual(expect.arrayContaining(['NativeModule https', 'NativeModule internal/fs/watchers']));
    expect(loaded.filter((m) => /fs\/promises|readline|fs\/dir|recursive_watch|cluster|child_process|dgram/.test(m))).toEqual([]);
  }, 60_000);

  it('is CommonJS\'s wrapper function itself, compiled by the loader as read (no wrapped copy of it at every start)', () => {
    const main = readFileSync(join(ROOT, 'dist/c2c-agentd-main.cjs'), 'utf8');
    expect(main.startsWith('(function (exports, require, module, __filename, __dirname) {')).toBe(true);
    expect(main.trimEnd().endsWith('})')).toBe(true);
    // An expression: run as a script, it makes the function and runs nothing of the daemon.
    expect(typeof new Script(main, { filename: 'c2c-agentd-main.cjs' }).runInThisContext()).toBe('function');
  });

  it('holds no import() of its own: node 20 answers it in a vm.Script only behind --experimental-vm-modules (lib/builtin.ts)', () => {
    const main = readFileSync(join(ROOT, 'dist/c2c-agentd-main.cjs'), 'utf8');
    const imports = (code: string): string[] => code.match(/\bimport\((?!\))/g) ?? [];
    expect(imports(main)).toEqual([]);
    // The features' packs (compressed CommonJS text, lib/cold-module.ts) run in the same script.
    let packs = 0;
    for (const m of main.matchAll(/"([A-Za-z0-9+/=]{200,})"/g)) {
      let code: string;
      try {
        code = brotliDecompressSync(Buffer.from(m[1]!, 'base64')).toString('utf8');
      } catch {
        continue;
      }
      packs++;
      expect(imports(code)).toEqual([]);
    }
    expect(packs).toBeGreaterThan(3);
  });

  it('requires each node built-in its ES modules import once, as one module of its own (scripts/build-builtins.mjs), not a copy per importer', () => {
    const main = readFileSync(join(ROOT, 'dist/c2c-agentd-main.cjs'), 'utf8');
    // esbuild's copy of a CommonJS module for an ES module's import: __toESM(require("node:x"), 1), minified to <name>(require("node:x"),1).
    expect(main.match(/[\w$]+\(require\("(?:node:)?[\w/]+"\)(?:,1)?\)/g) ?? []).toEqual([]);
    // Each built-in is required by its one module (its default and its re-exported names) and by the
    // CommonJS dependencies that require it themselves: node:path, imported by some thirty of the
    // daemon's modules, was required 31 times.
    const requires = new Map<string, number>();
    for (const m of main.matchAll(/require\("(?:node:)?([\w/]+)"\)/g)) requires.set(m[1]!, (requires.get(m[1]!) ?? 0) + 1);
    expect([...requires].filter(([, n]) => n > 6)).toEqual([]);
    expect(requires.get('path')).toBeGreaterThanOrEqual(2);
  });
});
