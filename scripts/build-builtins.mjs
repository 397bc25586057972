// An esbuild plugin for the daemon's CommonJS file: one module object per
// node built-in, not one per importing module.
//
// Bundled to CommonJS, every ES module that imports a built-in
// (`import path from 'node:path'`) gets its own copy of it:
// `__toESM(require('node:path'), 1)` defines a getter for each of the
// module's properties on a fresh object. The daemon's modules and
// dependencies made 57 such copies at start (31 of node:path, 8 of
// node:process), some 1,700 getter functions in the heap of an idle daemon.
// Here each built-in an ES module imports is one small ES module of the
// bundle (`export default require(x); export * from x`), made once, which
// all of them import. Nothing changes for CommonJS dependencies, which
// require() built-ins themselves, nor for the compressed packs
// (build-cold-code.mjs), built without this plugin.
import { builtinModules } from 'node:module';

const BUILTINS = new Set(builtinModules);
const NS = 'c2c-builtin';

export const oneCopyPerBuiltin = {
  name: 'one-copy-per-builtin',
  setup(b) {
    b.onResolve({ filter: /^(node:)?[a-z_/]+$/ }, (args) => {
      if (args.kind !== 'import-statement' || args.namespace === NS) return undefined;
      const name = args.path.replace(/^node:/, '');
      return BUILTINS.has(name) ? { path: `node:${name}`, namespace: NS } : undefined;
    });
    b.onResolve({ filter: /.*/, namespace: NS }, (args) => ({ path: args.path, external: true }));
    b.onLoad({ filter: /.*/, namespace: NS }, (args) => {
      const spec = JSON.stringify(args.path);
      return { contents: `export default require(${spec});\nexport * from ${spec};\n`, loader: 'js' };
    });
  },
};
