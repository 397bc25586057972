// Dependencies only a few commands use (systeminformation for `channels` and
// `status`, uqr for the pairing screen, node-cron for an upload window) are stored in the bundle as
// compressed CommonJS text by scripts/build-cold.mjs and run the first time
// they are asked for. Stored as code they would be read and pre-parsed at
// every start of every command, the daemon's included, and make up a sixth
// of the bundle; as compressed text they cost a string. The agent's own code
// that one command runs is stored the same way (scripts/build-cold-code.mjs,
// expandColdCode below).
import { builtin } from './builtin.js';
import { fileURLToPath } from 'node:url';

const loaded = new Map<string, unknown>();

/** What the packed modules' require() reaches beyond the bundle's own: node's built-ins, which is all they were built to need. */
const builtinRequire = (id: string): unknown => builtin(id.startsWith('node:') ? (id as `node:${string}`) : `node:${id}`);

/** The module.exports of the compressed CommonJS `packed` (base64 brotli), evaluated once per name. */
export function expandColdModule(name: string, packed: string): unknown {
  if (loaded.has(name)) return loaded.get(name);
  // zlib is loaded here, not at start: a module of its own that the daemon's
  // steady state does not otherwise need.
  const { brotliDecompressSync } = builtin<typeof import('node:zlib')>('node:zlib');
  const code = brotliDecompressSync(Buffer.from(packed, 'base64')).toString('utf8');
  // The bundle's own file stands in for the module's file: its require()
  // reaches node's built-ins, which is all these modules were built to need.
  const filename = fileURLToPath(import.meta.url);
  const module = { exports: {} as unknown };
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the text is the build's own output, never input
  const run = new Function('exports', 'require', 'module', '__filename', '__dirname', `${code}\n//# sourceURL=c2c-agent-cold:${name}`);
  run(module.exports, builtinRequire, module, filename, filename.replace(/\/[^/]*$/, ''));
  loaded.set(name, module.exports);
  return module.exports;
}

/** A module of the bundle as a pack's require() answers it: a CommonJS module's exports, an ES module's namespace flagged __esModule. */
type HotModule = { cjs: unknown } | { esm: unknown };

/**
 * The exports of the agent's own code stored compressed (scripts/build-cold-code.mjs):
 * CommonJS text whose imports of the bundle's modules are require('c2c-hot:<key>'),
 * answered from `hot` or else `shared` (tables of getters, each module
 * evaluated when the pack first asks for it), so the pack and the bundle
 * share one instance of each. `bundleUrl` is the bundle's import.meta.url,
 * which the pack's own uses of import.meta.url stand for.
 */
export function expandColdCode(name: string, packed: string, hot: Record<string, HotModule>, bundleUrl: string, shared: Record<string, HotModule> = {}): Record<string, unknown> {
  if (loaded.has(name)) return loaded.get(name) as Record<string, unknown>;
  const { brotliDecompressSync } = builtin<typeof import('node:zlib')>('node:zlib');
  const code = brotliDecompressSync(Buffer.from(packed, 'base64')).toString('utf8');
  const require = (id: string): unknown => {
    const m = Object.hasOwn(hot, id) ? hot[id] : Object.hasOwn(shared, id) ? shared[id] : undefined;
    if (m === undefined) return builtinRequire(id);
    return 'cjs' in m ? m.cjs : m.esm;
  };
  const filename = fileURLToPath(bundleUrl);
  const module = { exports: {} as Record<string, unknown> };
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the text is the build's own output, never input
  const run = new Function('exports', 'require', 'module', '__filename', '__dirname', '__c2cBundleUrl', `${code}\n//# sourceURL=c2c-agent-cold:${name}`);
  run(module.exports, require, module, filename, filename.replace(/\/[^/]*$/, ''), bundleUrl);
  loaded.set(name, module.exports);
  return module.exports;
}
