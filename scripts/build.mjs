#!/usr/bin/env node
// Bundles the agent into one self-contained ESM file (dist/c2c-agent.mjs), the
// daemon into one CommonJS file (dist/c2c-agentd-main.cjs) and its loader
// (dist/c2c-agentd.cjs, what the unit runs), and
// the fake cloud into dist/fake-cloud.mjs. The shipped firmware profiles are
// embedded in the agent bundle, so the single file works with no checkout.
import { build } from 'esbuild';
import { readFileSync, existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { agentOptions, builtinProfiles, commonOptions, daemonFilesOptions, root } from './build-config.mjs';

const quiet = process.argv.includes('--quiet');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

const common = { ...commonOptions, logLevel: quiet ? 'warning' : 'info' };

const entries = [
  agentOptions(path.join(root, 'dist/c2c-agent.mjs')),
  // The daemon as systemd runs it (ExecStart): a small loader (agent/daemon/boot.ts) and the
  // daemon's own file it loads through V8's code cache, CommonJS, its idle code plain (build-config.mjs).
  ...daemonFilesOptions(path.join(root, 'dist')),
  {
    entryPoints: [path.join(root, 'test/fake-cloud/main.ts')],
    outfile: path.join(root, 'dist/fake-cloud.mjs'),
  },
  {
    entryPoints: [path.join(root, 'test/fleet/main.ts')],
    outfile: path.join(root, 'dist/fleet.mjs'),
    define: {
      __C2C_VERSION__: JSON.stringify(pkg.version),
      __C2C_BUILTIN_PROFILES__: JSON.stringify(builtinProfiles()),
    },
  },
];

const results = await Promise.all(entries.filter((e) => existsSync(e.entryPoints[0])).map((e) => build({ ...common, ...e })));
// Where the agent bundle's bytes come from, per package: `npm run bench` reads it.
const agentMeta = results.find((r) => r.metafile !== undefined)?.metafile;
if (agentMeta !== undefined) writeFileSync(path.join(root, 'dist/c2c-agent.meta.json'), JSON.stringify(agentMeta));
