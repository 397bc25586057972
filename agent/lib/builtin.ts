// A node built-in module loaded when first needed. `await import('node:x')`
// would do in an ES module, but the daemon's CommonJS file runs its code
// through a vm.Script (daemon/boot.ts), and there node 20 answers import()
// only behind --experimental-vm-modules; require() works everywhere. A test
// holds the daemon's file to no import() of node's modules
// (test/integration/code-cache.test.ts).
//
// process.getBuiltinModule (node 20.16, 22.3) answers without a require
// function; an older node has the bundles' own require (CommonJS's in the
// daemon's file, the banner's in the agent's ES module bundle). Neither
// loads node:module, and node's ES module loader with it: about 1.3 ms of
// the daemon's start under the unit's flags (docs/benchmarks.md, "Start-up").

type Loader = (id: string) => unknown;

function loader(): Loader {
  if (typeof process.getBuiltinModule === 'function') return (id) => process.getBuiltinModule(id);
  if (typeof require === 'function') return require;
  throw new Error('c2c-agent: this node has neither process.getBuiltinModule nor require(); run the built bundle, or node >= 20.16');
}

let load: Loader | undefined;

/** The built-in module `id`, as require() gives it (its default export is the module itself). */
export function builtin<T>(id: `node:${string}`): T {
  load ??= loader();
  const m = load(id);
  if (m === undefined) throw new Error(`c2c-agent: node has no built-in module ${id}`);
  return m as T;
}
