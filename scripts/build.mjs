#!/usr/bin/env node
// Bundles the agent into one self-contained ESM file (dist/c2c-agent.mjs) and
// the fake cloud into dist/fake-cloud.mjs. The shipped firmware profiles are
// embedded in the agent bundle, so the single file works with no checkout.
import { build } from 'esbuild';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const quiet = process.argv.includes('--quiet');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

function builtinProfiles() {
  const dir = path.join(root, 'firmware-profiles');
  if (!existsSync(dir)) return {};
  const out = {};
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    out[name] = readFileSync(path.join(dir, name), 'utf8');
  }
  return out;
}

// Some dependencies call require() on node builtins; give the ESM bundle one.
const banner = {
  js: "import { createRequire as __c2cCreateRequire } from 'node:module'; const require = __c2cCreateRequire(import.meta.url);",
};

const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  banner,
  legalComments: 'none',
  logLevel: quiet ? 'warning' : 'info',
};

const entries = [
  {
    entryPoints: [path.join(root, 'agent/cli/main.ts')],
    outfile: path.join(root, 'dist/c2c-agent.mjs'),
    define: {
      __C2C_VERSION__: JSON.stringify(pkg.version),
      __C2C_BUILTIN_PROFILES__: JSON.stringify(builtinProfiles()),
    },
  },
  {
    entryPoints: [path.join(root, 'test/fake-cloud/main.ts')],
    outfile: path.join(root, 'dist/fake-cloud.mjs'),
  },
];

await Promise.all(entries.filter((e) => existsSync(e.entryPoints[0])).map((e) => build({ ...common, ...e })));
