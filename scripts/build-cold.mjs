// An esbuild plugin for the agent bundle: the dependencies in COLD (each used
// by one command or one optional feature) are built
// into CommonJS text of their own (minified, only node built-ins left as
// require()), brotli-compressed, and stored in the bundle as a base64 string;
// each import of them becomes agent/lib/cold-module.ts expanding that string
// on first use. Why: see cold-module.ts. Source runs (jest) import the
// packages as usual; only the bundle differs, and the end-to-end tests run it.
import { build } from 'esbuild';
import path from 'node:path';
import { createRequire } from 'node:module';
import { brotliCompressSync, constants } from 'node:zlib';
import { COLD_CODE_NAMESPACE } from './build-cold-code.mjs';

const COLD = [
  {
    name: 'systeminformation',
    // The three modules the agent uses (agent/channels/hardware.ts), not the index.
    entry: "module.exports = { system: require('systeminformation/lib/system.js').system, usb: require('systeminformation/lib/usb.js').usb, audio: require('systeminformation/lib/audio.js').audio };",
    imports: { 'systeminformation/lib/system.js': 'system', 'systeminformation/lib/usb.js': 'usb', 'systeminformation/lib/audio.js': 'audio' },
  },
  {
    name: 'uqr',
    // The pairing screen's QR code.
    entry: "module.exports = require('uqr');",
    imports: { uqr: null },
  },
  {
    name: 'mrmime',
    // The MIME type of a clip, in the daemon only once the first clip is queued.
    entry: "module.exports = require('mrmime');",
    imports: { mrmime: null },
  },
  {
    name: 'node-cron',
    entry: "module.exports = require('node-cron');",
    imports: { 'node-cron': null },
  },
];

async function pack(root, cold) {
  const out = await build({
    stdin: { contents: cold.entry, resolveDir: root, loader: 'js' },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    minify: true,
    legalComments: 'none',
    write: false,
    logLevel: 'warning',
  });
  const code = out.outputFiles[0].contents;
  const packed = brotliCompressSync(code, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).toString('base64');
  // The export names, for `import('node-cron')` callers that use named exports.
  const module = { exports: {} };
  new Function('exports', 'require', 'module', '__filename', '__dirname', out.outputFiles[0].text)(module.exports, createRequire(import.meta.url), module, root, root);
  const functions = Object.keys(module.exports).filter((n) => /^[A-Za-z_$][\w$]*$/.test(n) && n !== 'default' && typeof module.exports[n] === 'function');
  return { packed, functions };
}

export function coldDependencies(root) {
  const expander = path.join(root, 'agent/lib/cold-module.ts');
  return {
    name: 'cold-dependencies',
    setup(b) {
      const byImport = new Map(COLD.flatMap((c) => Object.entries(c.imports).map(([spec, pick]) => [spec, { cold: c, pick }])));
      const packs = new Map();
      const filter = new RegExp(`^(${[...byImport.keys()].map((s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|')})$`);
      b.onResolve({ filter }, (args) => {
        // The agent's imports, and the shared pack's table of them (else the table's require('mrmime')
        // put the whole package in the bundle beside its pack: 44 KB of mrmime and node-cron).
        if (!args.importer.startsWith(path.join(root, 'agent')) && args.namespace !== COLD_CODE_NAMESPACE) return undefined;
        return { path: args.path, namespace: 'c2c-cold' };
      });
      b.onResolve({ filter: /^c2c-cold-pack:/ }, (args) => ({ path: args.path, namespace: 'c2c-cold' }));
      b.onLoad({ filter: /.*/, namespace: 'c2c-cold' }, async (args) => {
        if (args.path.startsWith('c2c-cold-pack:')) {
          const cold = COLD.find((c) => `c2c-cold-pack:${c.name}` === args.path);
          if (!packs.has(cold.name)) packs.set(cold.name, pack(root, cold));
          const { packed } = await packs.get(cold.name);
          return {
            contents: `import { expandColdModule } from ${JSON.stringify(expander)};\nexport default () => expandColdModule(${JSON.stringify(cold.name)}, ${JSON.stringify(packed)});`,
            loader: 'js',
            resolveDir: root,
          };
        }
        const { cold, pick } = byImport.get(args.path);
        if (!packs.has(cold.name)) packs.set(cold.name, pack(root, cold));
        const { functions } = await packs.get(cold.name);
        // A package imported by name offers its functions, each expanding the
        // package on its first call, so a static import costs nothing until
        // used (an import of anything else fails the build). A module imported
        // by path offers the one function the agent takes from it.
        const contents =
          pick === null
            ? functions.map((n) => `export function ${n}(...a) { return load().${n}(...a); }`).join('\n')
            : `const m = { ${pick}: (...a) => load().${pick}(...a) };\nexport default m;`;
        return { contents: `import load from 'c2c-cold-pack:${cold.name}';\n${contents}`, loader: 'js', resolveDir: root };
      });
    },
  };
}
