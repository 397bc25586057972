// jest's transform of the suites' TypeScript: esbuild's transformSync, one file at a time, types
// stripped and nothing else (tsconfig's isolatedModules and verbatimModuleSyntax make that the
// whole job; `npm run typecheck` owns type errors). It replaced ts-jest, whose transpileModule did
// the same work for about three times the CPU, and which loads the TypeScript compiler in every
// worker (docs/testing.md, "Test time budget").
const { createHash } = require('node:crypto');
const { readFileSync } = require('node:fs');
const path = require('node:path');
const esbuild = require('esbuild');

const tsconfig = JSON.parse(readFileSync(path.join(__dirname, '../../tsconfig.json'), 'utf8'));
const tsconfigRaw = { compilerOptions: tsconfig.compilerOptions };
const self = createHash('sha256').update(readFileSync(__filename)).update(esbuild.version).update(JSON.stringify(tsconfigRaw)).digest('hex');

module.exports = {
  getCacheKey(source, filename, options) {
    return createHash('sha256').update(self).update('\0').update(filename).update('\0').update(String(options.supportsStaticESM)).update('\0').update(source).digest('hex');
  },
  process(source, filename, options) {
    const out = esbuild.transformSync(source, {
      loader: 'ts',
      format: options.supportsStaticESM ? 'esm' : 'cjs',
      target: 'node20',
      sourcemap: 'inline',
      sourcefile: filename,
      tsconfigRaw,
    });
    return { code: out.code };
  },
};
