// A node built-in module loaded when first needed. `await import('node:x')`
// would do in an ES module, but the daemon's CommonJS file runs its code
// through a vm.Script (daemon/boot.ts), and there node 20 answers import()
// only behind --experimental-vm-modules; require() works everywhere. A test
// holds the daemon's file to no import() of node's modules
// (test/integration/code-cache.test.ts).
import { createRequire } from 'node:module';

const requireBuiltin = createRequire(import.meta.url);

/** The built-in module `id`, as require() gives it (its default export is the module itself). */
export function builtin<T>(id: `node:${string}`): T {
  return requireBuiltin(id) as T;
}
