// Fuzzer 2 (issue 18): every command with hostile local files: configs,
// profiles, credentials, state and runtime dirs (test/fuzz/lib/files.mjs).
// Long run: node scripts/fuzz.mjs --target files.
import { fuzzSuite } from './fuzz-suite.js';

fuzzSuite({ target: 'files', seeds: [1, 2, 3], casesPerSeed: 8, jobs: 2, timeoutMs: 300_000 });
