// How the agent bundle is built: one home for scripts/build.mjs and for the
// tests that build a private copy of it (test/cli/bundle.ts).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { coldDependencies } from './build-cold.mjs';
import { coldAgentCode, DAEMON_COLD_CODE } from './build-cold-code.mjs';
import { oneCopyPerBuiltin } from './build-builtins.mjs';
import { unusedDependencyStubs } from './build-stubs.mjs';

/** The bundle's budget on disk: `npm run bench` reports against it, test/cli/cold-modules.test.ts holds the bundle to it. */
export const BUNDLE_BUDGET_BYTES = 400 * 1024;

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export function builtinProfiles() {
  const dir = path.join(root, 'firmware-profiles');
  if (!existsSync(dir)) return {};
  const out = {};
  // schema.json is not shipped: it is compiled into the agent's validator
  // (scripts/gen-profile-validator.mjs).
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.json') && f !== 'schema.json').sort()) {
    // Compact: the agent parses the text; its layout is for people, who read the files.
    out[name] = JSON.stringify(JSON.parse(readFileSync(path.join(dir, name), 'utf8')));
  }
  return out;
}

export const commonOptions = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Some dependencies call require() on node builtins; give the ESM bundle one.
  banner: {
    js: "import { createRequire as __c2cCreateRequire } from 'node:module'; const require = __c2cCreateRequire(import.meta.url);",
  },
  legalComments: 'none',
};

/** esbuild options of the agent's single-file bundle, written to `outfile`. */
export function agentOptions(outfile) {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  const base = {
    entryPoints: [path.join(root, 'agent/cli/main.ts')],
    outfile,
    // Every byte of the bundle is read, parsed and kept by V8 at each start,
    // on a camera that shares its memory with the capture pipeline: minified,
    // without the dependency code it never runs, and with the dependencies
    // only some commands use stored compressed (build-cold.mjs).
    minify: true,
    plugins: [unusedDependencyStubs, coldDependencies(root)],
    metafile: true,
    define: {
      __C2C_VERSION__: JSON.stringify(pkg.version),
      __C2C_BUILTIN_PROFILES__: JSON.stringify(builtinProfiles()),
    },
  };
  // The agent's own code that one command runs, stored compressed too (build-cold-code.mjs).
  return { ...base, plugins: [coldAgentCode(root, { ...commonOptions, ...base }), ...base.plugins] };
}

/**
 * esbuild options of the daemon's own file (agent/daemon/entry.ts,
 * dist/c2c-agentd-main.cjs, which the unit's ExecStart loads through boot.ts): CommonJS, so Node loads no ES module loader,
 * as the wrapper's function expression (boot.ts compiles it as read); the
 * daemon's idle code plain, the features' lazily loaded code in packs
 * (DAEMON_COLD_CODE), the dependencies only some features use compressed as
 * in the agent bundle. `plugins` go first (the bench's builds without one feature).
 */
export function daemonOptions(outfile, { plugins = [] } = {}) {
  const agent = agentOptions(outfile);
  const base = {
    ...commonOptions,
    entryPoints: [path.join(root, 'agent/daemon/entry.ts')],
    outfile,
    format: 'cjs',
    // The file is CommonJS's wrapper function itself, which boot.ts compiles as read and calls as CommonJS
    // would: no wrapped copy of the 500 KB made at every start. Within it, require() and __filename;
    // import.meta.url is the file's URL, made once.
    banner: { js: "(function (exports, require, module, __filename, __dirname) {const __c2cFileUrl = require('node:url').pathToFileURL(__filename).href;" },
    footer: { js: '})' },
    minify: true,
    metafile: true,
    define: { ...agent.define, 'import.meta.url': '__c2cFileUrl' },
    plugins: [...plugins, unusedDependencyStubs, coldDependencies(root)],
  };
  // oneCopyPerBuiltin only here: the CLI bundle is an ES module, whose imports of built-ins stay imports;
  // and not in base.plugins, which builds the packs (build-builtins.mjs says why).
  return { ...base, plugins: [coldAgentCode(root, base, { coldCode: DAEMON_COLD_CODE, sharedBy: 2 }), oneCopyPerBuiltin, ...base.plugins] };
}

/**
 * esbuild options of the file the unit's ExecStart runs (dist/c2c-agentd.cjs,
 * agent/daemon/boot.ts): a few lines that load the daemon's own file beside it
 * through V8's code cache. CommonJS, nothing bundled but its own two modules.
 */
export function daemonLoaderOptions(outfile) {
  return { ...commonOptions, entryPoints: [path.join(root, 'agent/daemon/boot.ts')], outfile, format: 'cjs', banner: {}, minify: true };
}

/**
 * Both of the daemon's files in `dir`, side by side as the loader looks for
 * them: the one to run, `dir`/c2c-agentd.cjs, and the daemon's own file. The
 * latter alone is a function expression that node evaluates and leaves
 * (exit 0, nothing run). `plugins` as in daemonOptions.
 */
export function daemonFilesOptions(dir, { plugins = [] } = {}) {
  return [daemonLoaderOptions(path.join(dir, 'c2c-agentd.cjs')), daemonOptions(path.join(dir, 'c2c-agentd-main.cjs'), { plugins })];
}
