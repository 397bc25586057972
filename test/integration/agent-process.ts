// The built bundle as a real child process, the way systemd runs it: these
// helpers start `node dist/c2c-agent.mjs run`, read `status --json`, and make
// sure no child outlives its test.
import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readStatus } from '../../agent/daemon/runtime/status-file.js';
import { until } from '../support/until.js';
import { childEnv } from '../support/child-env.js';
import { type FakeCloud, type FakeCloudOptions } from '../fake-cloud/index.js';
import { startTestCloud, testCertificateAuthority } from './test-cloud.js';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve('.');
export const BUNDLE = join(ROOT, 'dist/c2c-agent.mjs');
/** The daemon's own file, what the unit's ExecStart runs (`run` only): the daemons here run it, as systemd does. */
export const DAEMON_BUNDLE = join(ROOT, 'dist/c2c-agentd.cjs');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * Builds the bundle unless it is newer than every source file. Jest runs
 * test files in parallel workers, so a directory lock keeps two builds from
 * writing dist/ at once.
 */
export async function ensureBuilt(): Promise<void> {
  const lock = join(ROOT, 'dist/.integration-build-lock');
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // A test run killed mid-build leaves the lock behind; no build takes this long.
      const held = statSync(lock, { throwIfNoEntry: false });
      if (held !== undefined && Date.now() - held.mtimeMs > 120_000) rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`${lock} held for 2 minutes; remove it if no build is running`);
      await new Promise((r) => setTimeout(r, 200)); // a poll's pace: the lock freed ends the wait
    }
  }
  try {
    const sources = Math.max(newestMtime(join(ROOT, 'agent')), newestMtime(join(ROOT, 'test/fake-cloud')), newestMtime(join(ROOT, 'firmware-profiles')), statSync(join(ROOT, 'scripts/build.mjs')).mtimeMs, statSync(join(ROOT, 'package.json')).mtimeMs);
    if ([BUNDLE, DAEMON_BUNDLE].every((b) => existsSync(b) && statSync(b).mtimeMs > sources)) return;
    const r = spawnSync(process.execPath, ['scripts/build.mjs', '--quiet'], { cwd: ROOT, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`build failed: ${r.stderr}`);
  } finally {
    rmdirSync(lock);
  }
}

export { cloudFetch, startTestCloud, testCertificateAuthority } from './test-cloud.js';

/** A child's environment (test/support/child-env.ts) trusting the run's CA. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return childEnv({ NODE_EXTRA_CA_CERTS: testCertificateAuthority().file, ...extra });
}

export interface AgentDirs {
  root: string;
  stateDir: string;
  runtimeDir: string;
}

export function makeDirs(): AgentDirs {
  const root = mkdtempSync(join(tmpdir(), 'c2c-int-'));
  // An explicit config file keeps a developer's /etc/c2c-agent out of the test.
  writeFileSync(join(root, 'config.json'), '{}\n');
  return { root, stateDir: join(root, 'state'), runtimeDir: join(root, 'run') };
}

export function removeDirs(d: AgentDirs): void {
  rmSync(d.root, { recursive: true, force: true });
}

export interface AgentOptions {
  apiUrl: string;
  /** As C2C_TOKEN; without it the agent reads its token file (<state-dir>/credentials.json). */
  token?: string;
  dirs: AgentDirs;
  timeScale: number;
  env?: Record<string, string>;
  /** node's own options before the file, as the unit's ExecStart gives them (DAEMON_V8_FLAGS). */
  nodeArgs?: string[];
}

export interface AgentProcess {
  child: ChildProcess;
  pid: number;
  /** The last few KiB of stdout (pino) and stderr, for failure messages. */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const live = new Set<ChildProcess>();

export function startAgent(o: AgentOptions): AgentProcess {
  const child = spawn(
    process.execPath,
    [...(o.nodeArgs ?? []), DAEMON_BUNDLE, 'run', '--api-url', o.apiUrl, '--time-scale', String(o.timeScale), '--state-dir', o.dirs.stateDir, '--runtime-dir', o.dirs.runtimeDir],
    { env: cleanEnv({ ...(o.token !== undefined && { C2C_TOKEN: o.token }), C2C_CONFIG: join(o.dirs.root, 'config.json'), ...o.env }), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  live.add(child);
  let out = '';
  const keep = (d: Buffer): void => {
    out = (out + d.toString()).slice(-8192);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      res({ code, signal });
    });
  });
  if (child.pid === undefined) throw new Error('could not spawn the agent');
  return { child, pid: child.pid, output: () => out, exited };
}

/**
 * A process suite's frame around one fake cloud: the bundle built and the cloud started before
 * the suite, every agent killed after each test, the cloud closed and each `dirs()` removed after
 * the suite.
 */
export function useAgentCloud(options: FakeCloudOptions): { readonly cloud: FakeCloud; dirs(): AgentDirs } {
  let cloud: FakeCloud | undefined;
  const made: AgentDirs[] = [];
  beforeAll(async () => {
    await ensureBuilt();
    cloud = await startTestCloud(options);
  }, 120_000);
  afterEach(killAll);
  afterAll(async () => {
    await killAll();
    await cloud?.close();
    for (const d of made) removeDirs(d);
  });
  return {
    get cloud(): FakeCloud {
      if (cloud === undefined) throw new Error('the fake cloud starts in beforeAll');
      return cloud;
    },
    dirs(): AgentDirs {
      const d = makeDirs();
      made.push(d);
      return d;
    },
  };
}

/** SIGKILL every agent still running (afterEach/afterAll). */
export async function killAll(): Promise<void> {
  const waits: Array<Promise<unknown>> = [];
  for (const c of live) {
    if (c.exitCode === null && c.signalCode === null) {
      waits.push(new Promise((r) => c.once('exit', r)));
      c.kill('SIGKILL');
    }
  }
  live.clear();
  await Promise.all(waits);
}

export interface StatusResult {
  exitCode: number;
  json: Record<string, unknown>;
  stderr: string;
}

/**
 * The daemon's state as its status document (status.json in the runtime dir) says, read in this
 * process: what a wait polls, where spawning `status --json` ten times a second cost a CPU second
 * every second of the wait. undefined while there is no readable document of a live daemon (of
 * `pid`, when given).
 */
export function daemonState(dirs: Pick<AgentDirs, 'runtimeDir'>, pid?: number): string | undefined {
  const r = readStatus(dirs.runtimeDir);
  if (r.kind !== 'ok') return undefined;
  // A document an earlier daemon left in the runtime dir says nothing of this one (`status` checks the lock).
  if (pid !== undefined ? r.doc.pid !== pid : !isAlive(r.doc.pid)) return undefined;
  return r.doc.state;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function status(dirs: AgentDirs, apiUrl: string, timeScale: number): Promise<StatusResult> {
  return new Promise((res, reject) => {
    const child = spawn(process.execPath, [BUNDLE, 'status', '--json'], {
      env: cleanEnv({
        C2C_API_URL: apiUrl,
        C2C_STATE_DIR: dirs.stateDir,
        C2C_RUNTIME_DIR: dirs.runtimeDir,
        C2C_TIME_SCALE: String(timeScale),
        C2C_CONFIG: join(dirs.root, 'config.json'),
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      try {
        res({ exitCode: code ?? -1, json: JSON.parse(stdout) as Record<string, unknown>, stderr });
      } catch {
        reject(new Error(`status --json printed no JSON (exit ${code}): ${stdout}${stderr}`));
      }
    });
  });
}

/** Every entry under `dir`, recursively, with size and mtime: what a write to the SD card would change. */
export function treeSnapshot(dir: string): Record<string, { size: number; mtimeMs: number }> {
  const out: Record<string, { size: number; mtimeMs: number }> = {};
  const walk = (d: string, rel: string): void => {
    const st = statSync(d);
    out[rel || '.'] = { size: st.isDirectory() ? 0 : st.size, mtimeMs: st.mtimeMs };
    if (!st.isDirectory()) return;
    for (const e of readdirSync(d)) walk(join(d, e), rel ? `${rel}/${e}` : e);
  };
  walk(dir, '');
  return out;
}

/** The one wait (test/support/until.ts) in the process suites' order of arguments: real I/O looked at every `everyMs`, hung after `timeoutMs`. */
export function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs: number, everyMs = 20): Promise<T> {
  return until(what, probe, { hangMs: timeoutMs, everyMs });
}
