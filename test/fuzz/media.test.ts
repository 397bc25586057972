// Fuzzer 3 (issue 18): the daemon against the fake cloud with a hostile media
// dir (test/fuzz/lib/media.mjs). Long run: node scripts/fuzz.mjs --target media.
import { fuzzSuite } from './fuzz-suite.js';

// 32254480: a clip renamed while queued was never uploaded; 103: a second name for a file was skipped in silence.
fuzzSuite({ target: 'media', seeds: [1, 32254480, 103], casesPerSeed: 1, jobs: 1, timeoutMs: 300_000 });
