// Builds the agent bundle into a private temp dir (no node_modules anywhere
// above it), the way scripts/build.mjs does, so CLI tests run the real
// single-file artifact without racing other suites over dist/.
import { build } from 'esbuild';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

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
  const profilesDir = path.join(ROOT, 'firmware-profiles');
  const profiles = Object.fromEntries(readdirSync(profilesDir).filter((f) => f.endsWith('.json')).sort().map((f) => [f, readFileSync(path.join(profilesDir, f), 'utf8')]));
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  await build({
    entryPoints: [path.join(ROOT, 'agent/cli/main.ts')],
    outfile: file,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
    banner: { js: "import { createRequire as __c2cCreateRequire } from 'node:module'; const require = __c2cCreateRequire(import.meta.url);" },
    define: { __C2C_VERSION__: JSON.stringify(pkg.version), __C2C_BUILTIN_PROFILES__: JSON.stringify(profiles) },
  });
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
