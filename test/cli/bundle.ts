// The agent bundle in a private temp dir (no node_modules anywhere above it),
// so CLI tests run the real single-file artifact where it cannot lean on the
// repository's packages. It is dist/c2c-agent.mjs (scripts/build.mjs, built
// once for the whole run by ensureBuilt, under its lock) copied: a build per
// suite cost seven esbuild and brotli runs of a few CPU seconds each.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { BUNDLE, ensureBuilt } from '../integration/agent-process.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface Bundle {
  dir: string;
  file: string;
  run: (args: string[], opts?: { env?: NodeJS.ProcessEnv; cwd?: string; file?: string }) => { status: number | null; stdout: string; stderr: string };
  cleanup: () => void;
}

export async function buildBundle(): Promise<Bundle> {
  const dir = mkdtempSync(path.join(tmpdir(), 'c2c-cli-'));
  const file = path.join(dir, 'c2c-agent.mjs');
  await ensureBuilt();
  copyFileSync(BUNDLE, file);
  return {
    dir,
    file,
    run: (args, opts = {}) => {
      // A minimal environment: nothing from the host's C2C_* or /etc/c2c-agent leaks in.
      const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', C2C_CONFIG: path.join(ROOT, 'test/cli/fixtures/empty-config.json'), ...opts.env };
      const r = spawnSync(process.execPath, [opts.file ?? file, ...args], { cwd: opts.cwd ?? dir, env, encoding: 'utf8', timeout: 15000 });
      return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
