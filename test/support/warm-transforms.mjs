// jest's globalSetup: every TypeScript file the suites load, transformed once
// by ts-jest into jest's transform cache before the workers start.
//
// On a fresh clone (CI, a newcomer's first `npm test`) that cache is empty,
// and the three workers start together: each transpiled the same agent
// modules itself, the TypeScript compiler warming up in each, before any
// saw another's cache file. That cost about 30 CPU s of a run (docs/testing.md,
// "Test time budget"). One process doing it first costs about 8, and the
// workers then only read. The transformer, its options and so its cache keys
// are jest's own (`createScriptTransformer`, with the options jest-runtime
// gives an ES module), so a file changed since is simply transformed again
// by the worker that loads it.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createScriptTransformer } from '@jest/transform';

/** What jest-runtime passes when it loads an ES module (node_modules/jest-runtime/build/index.js, ESM_TRANSFORM_OPTIONS). */
const ESM_TRANSFORM_OPTIONS = {
  isInternalModule: false,
  supportsDynamicImport: true,
  supportsExportNamespaceFrom: true,
  supportsStaticESM: true,
  supportsTopLevelAwait: true,
};
const SOURCES = ['agent', 'test'];

export default async function warmTransforms(globalConfig, projectConfig) {
  if (!projectConfig.cache || globalConfig.collectCoverage) return;
  const transformer = await createScriptTransformer(projectConfig);
  for (const dir of SOURCES) {
    const root = join(projectConfig.rootDir, dir);
    for (const rel of readdirSync(root, { recursive: true })) {
      if (typeof rel !== 'string' || !rel.endsWith('.ts') || rel.endsWith('.d.ts')) continue;
      const file = join(root, rel);
      if (!transformer.shouldTransform(file)) continue;
      await transformer.transformSourceAsync(file, readFileSync(file, 'utf8'), ESM_TRANSFORM_OPTIONS);
    }
  }
}
