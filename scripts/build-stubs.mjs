// An esbuild plugin that leaves out of the agent bundle the parts of its
// dependencies the agent never runs, replacing each with a stub that throws
// a clear error if it is ever reached. esbuild cannot drop them by itself:
// the packages import them at the top of modules the agent does use.
//
// - got: HTTP/2 (`http2: true`), its HTTP cache (`cache:`), its DNS cache
//   (`dnsCache:`), FormData bodies and decompression (`decompress: false`, so
//   a compressed answer can't grow past the size cap): the agent uses none.
// - conf: JSON-schema validation of the stored values (`schema:`) and version
//   migrations (`migrations:`, the only user of its semver): the agent's conf
//   stores (client id, channel map) pass neither, and conf reaches ajv and
//   semver only when they are given. (The agent's own semver use imports
//   single functions by path.)
// - pino: transports (worker threads, and the module that starts them): the
//   agent logs JSON to stdout only.
//
// Each stub is limited to the package that imports it, so nothing else can
// silently receive a stub. The end-to-end tests run the bundle.

import { readFile } from 'node:fs/promises';

const STUBS = [
  { importer: 'got', name: 'http2-wrapper', code: `const off = () => { throw new Error('HTTP/2 is not in the c2c-agent bundle'); };
export default { get globalAgent() { return off(); }, auto: off };` },
  { importer: 'got', name: 'cacheable-request', code: `export class CacheError extends Error {}
export default class CacheableRequest { constructor() { throw new Error('the HTTP cache is not in the c2c-agent bundle'); } }` },
  { importer: 'got', name: 'cacheable-lookup', code: `export default class CacheableLookup { constructor() { throw new Error('the DNS cache is not in the c2c-agent bundle'); } }` },
  { importer: 'got', name: 'form-data-encoder', code: `export const isFormData = () => false;
export class FormDataEncoder { constructor() { throw new Error('FormData bodies are not in the c2c-agent bundle'); } }` },
  { importer: 'got', name: 'decompress-response', code: `export default () => { throw new Error('decompressing answers is not in the c2c-agent bundle'); };` },
  { importer: 'conf', name: 'ajv/dist/2020.js', code: `export class Ajv2020 { constructor() { throw new Error('conf schema validation is not in the c2c-agent bundle'); } }` },
  { importer: 'conf', name: 'ajv-formats', code: `export default { default() { throw new Error('conf schema validation is not in the c2c-agent bundle'); } };` },
  { importer: 'conf', name: 'semver', code: `const off = () => { throw new Error('conf migrations are not in the c2c-agent bundle'); };
export default { eq: off, clean: off, satisfies: off, lte: off, gt: off };` },
  { importer: 'pino', name: 'thread-stream', code: `module.exports = class ThreadStream { constructor() { throw new Error('pino transports are not in the c2c-agent bundle'); } };` },
  // pino's transport module itself: it loads node:module at the top, and node's ES module loader with it
  // (about 1.3 ms of the daemon's start under the unit's flags, docs/benchmarks.md).
  ...['./lib/transport', './transport'].map((name) => ({ importer: 'pino', name, code: `module.exports = () => { throw new Error('pino transports are not in the c2c-agent bundle'); };` })),
];

// Module-level work in a dependency that costs memory at every start, done
// instead when first needed. @sindresorhus/is (got's argument checks) builds
// two Intl.ListFormat objects at load time for the text of a failed check;
// the first Intl object maps in ICU's locale data: +4.5 MiB of RSS, for a
// message the agent never shows. pino loads worker_threads (about 1 MiB) to
// ask isMainThread, which only an asynchronous destination needs; the
// agent's is synchronous. sonic-boom loads node:assert for one check.
const DEFERRED = [
  {
    file: '/node_modules/@sindresorhus/is/distribution/index.js',
    from: [
      "const andFormatter = new Intl.ListFormat('en', { style: 'long', type: 'conjunction' });",
      "const orFormatter = new Intl.ListFormat('en', { style: 'long', type: 'disjunction' });",
    ],
    to: [
      "const andFormatter = { format: (list) => new Intl.ListFormat('en', { style: 'long', type: 'conjunction' }).format(list) };",
      "const orFormatter = { format: (list) => new Intl.ListFormat('en', { style: 'long', type: 'disjunction' }).format(list) };",
    ],
  },
  {
    file: '/node_modules/pino/lib/tools.js',
    from: ["const { isMainThread } = require('worker_threads')", 'if (!opts.sync && isMainThread) {'],
    to: ["const workerThreads = () => require('worker_threads')", 'if (!opts.sync && workerThreads().isMainThread) {'],
  },
  // sonic-boom (pino's stdout) loads node:assert (0.7 MiB of RSS with the modules it brings) for
  // one check in a function the agent's synchronous destination calls only on a bad fd.
  {
    file: '/node_modules/sonic-boom/index.js',
    from: ["const assert = require('assert')"],
    to: ["const assert = (...args) => require('assert')(...args)"],
  },
];

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

export const unusedDependencyStubs = {
  name: 'unused-dependency-stubs',
  setup(build) {
    const filter = new RegExp(`^(${STUBS.map((s) => escape(s.name)).join('|')})$`);
    build.onResolve({ filter }, (args) => {
      const stub = STUBS.find((s) => s.name === args.path && args.importer.includes(`/node_modules/${s.importer}/`));
      return stub === undefined ? undefined : { path: stub.name, namespace: 'c2c-stub' };
    });
    build.onLoad({ filter: /\/node_modules\/.*\.js$/ }, async (args) => {
      const deferred = DEFERRED.find((d) => args.path.endsWith(d.file));
      if (deferred === undefined) return undefined;
      let text = await readFile(args.path, 'utf8');
      deferred.from.forEach((from, i) => {
        // A dependency update that changes these lines must fail the build, not ship the cost silently.
        if (!text.includes(from)) throw new Error(`build-stubs: ${deferred.file} no longer has: ${from}`);
        text = text.replace(from, deferred.to[i]);
      });
      return { contents: text, loader: 'js' };
    });
    build.onLoad({ filter: /.*/, namespace: 'c2c-stub' }, (args) => {
      const stub = STUBS.find((s) => s.name === args.path);
      return { contents: stub.code, loader: 'js' };
    });
  },
};
