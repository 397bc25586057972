// An esbuild plugin for the agent bundle: the agent's own code that only one
// command runs (the daemon behind `run`, and the modules of the other
// commands) is stored in the bundle compressed, the way build-cold.mjs stores
// dependencies, and expanded by agent/lib/cold-module.ts when that command is
// loaded. Every start of every command reads and pre-parses the bundle's
// code: `--version` or `status` need not pay for the daemon's units, nor the
// daemon for the pairing screen; and the bundle fits its budget
// (scripts/bench/disk.mjs).
//
// How:
// 1. The hot set: the modules of the bundle built with every cold entry left
//    empty (what every command may run: main.ts, args, settings, errors);
//    they stay in the bundle as usual. The modules SHARED_BY or more cold
//    entries use (got, pino, conf, the service API, the outbox reader) go
//    to one shared pack; the rest of what an entry uses is in its own pack.
// 2. A pack: CommonJS text (minified, brotli, base64) in which every import
//    of a module of the bundle or of the shared pack is
//    require('c2c-hot:<key>'), so packs and bundle share one instance of
//    each module (one AgentError class, one logger), never copies.
// 3. In the bundle, a cold entry is replaced by a module that expands its
//    pack when first imported (each entry is imported lazily: commands.ts,
//    run.ts) with a table of the modules it may require, each required on
//    first use, and re-exports the pack's exports.
// A module only two packs use is in both: a process runs one command, so no
// two copies meet (`--help` reads only each command's usage and summary).
// An entry may also be imported by another entry's code (a feature's code
// behind a dynamic import in the daemon, agent/web/'s server and page): it is
// then required from the bundle, its own pack expanded only when that import
// runs, and every module it shares with any other entry goes to the shared
// pack, since there the two copies would meet in one process.
import { build, transform } from 'esbuild';
import path from 'node:path';
import { brotliCompressSync, constants } from 'node:zlib';

/** Entry modules stored compressed, by their path under the repository root. */
const COLD_CODE = [
  'agent/daemon/main.ts',
  'agent/cli/pair.ts',
  'agent/cli/upload.ts',
  'agent/cli/status.ts',
  'agent/cli/channels.ts',
  'agent/cli/check.ts',
  'agent/cli/queue.ts',
  'agent/cli/unpair.ts',
  'agent/cli/profiles.ts',
  'agent/cli/cancel.ts',
  'agent/cli/prefs.ts',
  'agent/cli/priority.ts',
  'agent/cli/web-pin.ts',
  'agent/cli/press.ts',
  'agent/cli/comment.ts',
  // Real-time logging (docs/real-time-logging.md): its handlers and workers, loaded on the first press or comment, and the input device's reader, only for a profile with keys.
  'agent/logging/load.ts',
  'agent/logging/input-unit.ts',
  // The web page (docs/web-page.md): its server, loaded by the daemon only with webListen set, and the page, on its first request.
  'agent/web/web-server.ts',
  'agent/web/web-app.ts',
  // Features' code a paired, idle camera does not run (core/feature.ts), each behind a dynamic import:
  // the upload workers and the storage client (the first upload item), the pairing flow (the first
  // pairing call), the upload routes' handlers (their first call).
  'agent/uploads/workers-build.ts',
  'agent/auth/pairing-load.ts',
  'agent/uploads/upload-handlers.ts',
  'agent/uploads/pipeline.ts',
  'agent/cli/command-help.ts',
];

/**
 * The cold entries of the daemon's own file (dist/c2c-agentd.cjs, agent/daemon/entry.ts):
 * every entry above but the commands' own, so a feature's code behind a dynamic import
 * is a pack there too, expanded by that import.
 */
export const DAEMON_COLD_CODE = [...COLD_CODE.filter((e) => !e.startsWith('agent/cli/') && e !== 'agent/daemon/main.ts'), 'agent/cli/command-help.ts'];

// A module is a pack's own up to this many packs using it: compressed to
// about a third of its size, two copies cost less than one in the bundle.
const SHARED_BY = 3;
const HOT = 'c2c-hot:';
/** The namespace of the shared pack's stand-in, whose table requires hot modules by name (build-cold.mjs resolves its cold dependencies too). */
export const COLD_CODE_NAMESPACE = 'c2c-cold-code';
const NS = COLD_CODE_NAMESPACE;
const SHARED = 'c2c-cold-code-shared';

/** The key a hot module is known by between the bundle and a pack: its namespace and path, the path relative to root. */
const keyOf = (root, namespace, p) => (namespace === 'file' ? `file:${path.relative(root, p)}` : `${namespace}:${p}`);

/**
 * `base` is the agent bundle's esbuild options without this plugin (its
 * defines, its other plugins): the hot graph and the packs are built with them.
 * `coldCode`: the entries stored compressed; `sharedBy`: how many packs using a
 * module put it in the shared pack (the daemon's file: two, since all its packs
 * may meet in one process).
 */
export function coldAgentCode(root, base, { coldCode = COLD_CODE, sharedBy = SHARED_BY } = {}) {
  const entries = new Set(coldCode.map((e) => path.join(root, e)));
  let hotSet;
  const packs = new Map();

  // The keys of the modules in an esbuild build's metafile.
  const formats = new Map();
  const inputKeys = (r) =>
    Object.entries(r.metafile.inputs).map(([input, { format }]) => {
      const m = /^([\w-]+):(.*)$/.exec(input);
      const key = m === null ? keyOf(root, 'file', path.resolve(input)) : `${m[1]}:${m[2]}`;
      formats.set(key, format ?? 'esm');
      return key;
    });
  const graph = (entryPoints, plugins) =>
    build({ ...base, entryPoints, outfile: undefined, outdir: undefined, write: false, minify: false, metafile: true, logLevel: 'warning', plugins: [...base.plugins, ...plugins] }).then(inputKeys);
  const empty = {
    name: 'cold-code-empty',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, (args) => (entries.has(args.path) ? { contents: 'export {};', loader: 'js' } : undefined));
    },
  };
  // An entry's own graph stops at the other entries it imports (their code is in their own packs);
  // those are nested: imported by another entry.
  const nested = new Set();
  const others = (self) => ({
    name: 'cold-code-others',
    setup(b) {
      b.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData?.coldCode || args.kind === 'entry-point') return undefined;
        const r = await b.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, namespace: args.namespace, pluginData: { coldCode: true } });
        if (r.errors.length > 0 || r.external || r.path === self || !entries.has(r.path)) return undefined;
        nested.add(r.path);
        return { path: r.path, external: true };
      });
    },
  });

  // 1. The hot set: the modules of the bundle built with each cold entry
  // empty, the modules SHARED_BY or more cold entries use (a compressed copy
  // in each pack would cost more than the one in the bundle), and what the
  // other plugins make (a dependency build-cold.mjs stores compressed
  // already).
  const hot = () =>
    (hotSet ??= (async () => {
      const list = [...entries];
      const [bundleKeys, ...entryKeys] = await Promise.all([graph(base.entryPoints, [empty]), ...list.map((e) => graph([e], [others(e)]))]);
      const inBundle = new Set(bundleKeys);
      const seen = new Map();
      for (const k of entryKeys.flat()) seen.set(k, (seen.get(k) ?? 0) + 1);
      for (const [k] of seen) if (k.startsWith('c2c-cold:')) inBundle.add(k);
      // What a nested entry uses besides its own pack meets the other entries' copies in one process.
      const ofNested = new Set(list.flatMap((e, i) => (nested.has(e) ? entryKeys[i] : [])));
      const shared = new Set([...seen].filter(([k, n]) => (n >= sharedBy || (n >= 2 && ofNested.has(k))) && k.startsWith('file:') && !inBundle.has(k)).map(([k]) => k));
      if (process.env.C2C_COLD_DEBUG) { const fs = await import("node:fs"); fs.writeFileSync(process.env.C2C_COLD_DEBUG, JSON.stringify({ shared: [...shared], inBundle: [...inBundle], nested: [...nested], seen: [...seen] }, null, 1)); }
      return { inBundle, shared, forEntries: new Set([...inBundle, ...shared]) };
    })());

  // 2. One pack: CommonJS, the modules `keys` names left to the bundle or the shared pack.
  const pack = (id, entry, keysOf) => {
    if (packs.has(id)) return packs.get(id);
    const made = (async () => {
      const keys = keysOf(await hot());
      const used = new Set();
      const out = await build({
        ...base,
        ...(await entry()),
        outfile: undefined,
        outdir: undefined,
        format: 'cjs',
        banner: undefined,
        footer: undefined,
        write: false,
        metafile: false,
        logLevel: 'warning',
        // Minified below, once the default imports of the bundle's ES modules are mended.
        minify: false,
        // import() of a module in the pack or in the bundle becomes require(): both are in memory.
        supported: { 'dynamic-import': false },
        // The pack runs inside the bundle: its import.meta is the bundle's (cold-module.ts passes it).
        define: { ...base.define, 'import.meta.url': '__c2cBundleUrl' },
        plugins: [
          {
            name: 'cold-code-hot-modules',
            setup(b) {
              b.onResolve({ filter: /.*/ }, async (args) => {
                if (args.pluginData?.coldCode || args.kind === 'entry-point' || args.path.startsWith(HOT)) return undefined;
                const r = await b.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, namespace: args.namespace, pluginData: { coldCode: true } });
                if (r.errors.length > 0 || r.external) return undefined;
                const key = keyOf(root, r.namespace, r.path);
                // Another entry (nested): required from the bundle, which expands its pack when this import runs.
                if (entries.has(r.path) && r.path !== id) {
                  used.add(key);
                  formats.set(key, 'esm');
                  return { path: `${HOT}${key}`, external: true };
                }
                if (!keys.has(key)) return undefined;
                used.add(key);
                return { path: `${HOT}${key}`, external: true };
              });
            },
          },
          ...base.plugins,
        ],
      });
      // A default import from a module of an ES module package is __toESM(require(x), 1).default,
      // node's rule for CommonJS (module.exports is the default). The bundle's ES modules
      // come as their namespace (cold-module.ts), whose default is the default.
      let text = out.outputFiles[0].text;
      for (const key of used) {
        if (formats.get(key) === 'cjs') continue;
        const call = `require(${JSON.stringify(`${HOT}${key}`)})`;
        text = text.split(`__toESM(${call}, 1)`).join(call).split(`__toESM(${call})`).join(call);
      }
      const code = (await transform(text, { minify: true, format: 'cjs', target: base.target, legalComments: 'none', platform: 'node' })).code;
      const packed = brotliCompressSync(code, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).toString('base64');
      return { packed, used: [...used].sort() };
    })();
    packs.set(id, made);
    return made;
  };
  // A table of modules by key, each required on first use (so evaluated
  // in the order the pack's code asks for them, as in the bundle: a cycle
  // such as stubborn-fs's constants and handlers comes out right), as
  // { cjs: module.exports } or { esm: the namespace as CommonJS sees it }.
  const tableOf = (keys) =>
    `{ ${keys.map((key) => `get ${JSON.stringify(`${HOT}${key}`)}() { return { ${formats.get(key) === 'cjs' ? 'cjs' : 'esm'}: require(${JSON.stringify(specOf(key))}) }; }`).join(', ')} }`;
  // The modules SHARED_BY or more cold entries use, in one pack of their own,
  // expanded by the first entry that needs one: its exports are their table.
  const sharedPack = () =>
    pack('shared', async () => {
      const contents = `module.exports = ${tableOf([...(await hot()).shared])};`;
      return { stdin: { contents, resolveDir: path.join(root, 'agent'), sourcefile: 'cold-shared.js', loader: 'js' }, entryPoints: undefined };
    }, (h) => h.inBundle);
  const entryPack = async (entry) => {
    const made = await pack(entry, () => ({ entryPoints: [entry] }), (h) => h.forEntries);
    const { shared } = await hot();
    // The entry's export names, for the module that stands for it in the bundle.
    const shape = await build({ entryPoints: [entry], bundle: false, format: 'esm', write: false, metafile: true, logLevel: 'warning' });
    const exports = Object.values(shape.metafile.outputs)[0].exports;
    return { ...made, exports, own: made.used.filter((key) => !shared.has(key)), shared: made.used.some((key) => shared.has(key)) };
  };
  const specOf = (key) => {
    const [, namespace, p] = /^([\w-]+):(.*)$/.exec(key);
    return namespace === 'file' ? path.join(root, p) : p;
  };

  return {
    name: 'cold-agent-code',
    setup(b) {
      const expander = path.join(root, 'agent/lib/cold-module.ts');
      b.onResolve({ filter: new RegExp(`^${SHARED}$`) }, () => ({ path: SHARED, namespace: NS }));
      b.onLoad({ filter: /.*/, namespace: NS }, async () => {
        const { packed, used } = await sharedPack();
        const contents = [
          `import { expandColdCode } from ${JSON.stringify(expander)};`,
          `export default () => expandColdCode('shared', ${JSON.stringify(packed)}, ${tableOf(used)}, import.meta.url);`,
        ].join('\n');
        return { contents, loader: 'js', resolveDir: path.join(root, 'agent') };
      });
      b.onLoad({ filter: /\.ts$/ }, async (args) => {
        if (!entries.has(args.path)) return undefined;
        const { packed, exports, own, shared } = await entryPack(args.path);
        // 3. The entry's stand-in: the pack expanded with the hot modules it uses, its exports.
        const name = path.relative(root, args.path);
        const contents = [
          `import { expandColdCode } from ${JSON.stringify(expander)};`,
          ...(shared ? [`import shared from ${JSON.stringify(SHARED)};`] : []),
          `const m = expandColdCode(${JSON.stringify(name)}, ${JSON.stringify(packed)}, ${tableOf(own)}, import.meta.url${shared ? ', shared()' : ''});`,
          ...exports.map((n) => (n === 'default' ? 'export default m.default;' : `export const ${n} = m.${n};`)),
        ].join('\n');
        return { contents, loader: 'js', resolveDir: path.dirname(args.path) };
      });
    },
  };
}
