// An esbuild plugin for the daemon's CommonJS file: one module object per
// node built-in, not one per importing module.
//
// Bundled to CommonJS, every ES module that imports a built-in
// (`import path from 'node:path'`) gets its own copy of it:
// `__toESM(require('node:path'), 1)` defines a getter for each of the
// module's properties on a fresh object. The daemon's modules and
// dependencies made 57 such copies at start (31 of node:path, 8 of
// node:process). Here each built-in an ES module imports is one small ES
// module of the bundle (`export default require(x); export * from x`),
// made once, which all of them import: about 1,100 fewer functions in an
// idle daemon's heap (docs/benchmarks.md).
//
// What an import sees is the same (the default is module.exports; a name
// reads the module's property when used), with one difference: the shared
// object's prototype is Object.prototype, where esbuild's copy had the
// module's own, so a name found only on a built-in's prototype is no
// longer imported.
//
// Left alone: CommonJS dependencies, which require() built-ins themselves,
// and the compressed packs (build-cold-code.mjs). Those are built from
// base.plugins, without this plugin: with it, a built-in would be a "hot"
// module the packs take from the bundle, as a namespace whose default they
// then read as undefined.
import { isBuiltin } from 'node:module';

const NS = 'c2c-builtin';

export const oneCopyPerBuiltin = {
  name: 'one-copy-per-builtin',
  setup(b) {
    b.onResolve({ filter: /^(node:)?[\w/]+$/ }, (args) => {
      if (args.kind !== 'import-statement' || args.namespace === NS || !isBuiltin(args.path)) return undefined;
      return { path: args.path.startsWith('node:') ? args.path : `node:${args.path}`, namespace: NS };
    });
    b.onResolve({ filter: /.*/, namespace: NS }, (args) => ({ path: args.path, external: true }));
    b.onLoad({ filter: /.*/, namespace: NS }, (args) => {
      const spec = JSON.stringify(args.path);
      return { contents: `export default require(${spec});\nexport * from ${spec};\n`, loader: 'js' };
    });
  },
};
