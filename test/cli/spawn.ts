// Runs the built bundle as a child process WITHOUT blocking the event loop,
// so an in-process fake cloud can answer it (spawnSync would deadlock).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './bundle.js';
import { childEnv } from '../support/child-env.js';

export interface RunResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: Record<string, string>;
  cwd?: string;
  /** For long-running commands (run): SIGTERM once this resolves. */
  stopWhen?: Promise<unknown>;
  timeoutMs?: number;
}

/** A minimal child environment (test/support/child-env.ts, PATH alone) with an empty config file: nothing from the host's C2C_* or /etc/c2c-agent leaks in. */
export function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  return childEnv({ C2C_CONFIG: path.join(ROOT, 'test/cli/fixtures/empty-config.json'), ...extra }, { inherit: false });
}

export function runBundle(file: string, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file, ...args], {
      cwd: opts.cwd ?? path.dirname(file),
      env: baseEnv(opts.env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 20_000);
    void opts.stopWhen?.then(() => child.kill('SIGTERM'));
    child.once('error', (err) => {
      clearTimeout(killer);
      reject(err);
    });
    child.once('close', (status, signal) => {
      clearTimeout(killer);
      resolve({ status, signal, stdout, stderr });
    });
  });
}
