// Fuzzer 1 (issue 18): check, pair, unpair and the daemon against a hostile
// service (test/fuzz/lib/answers.mjs). Long run: node scripts/fuzz.mjs --target answers.
import { fuzzSuite } from './fuzz-suite.js';

fuzzSuite({ target: 'answers', seeds: [1, 2, 3], casesPerSeed: 6, jobs: 2, timeoutMs: 300_000 });
