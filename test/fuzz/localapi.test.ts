// Fuzzer 4 (issue 20): the daemon's local API against hostile clients
// (test/fuzz/lib/localapi.mjs). Long run: node scripts/fuzz.mjs --target localapi.
//
// Why a process: the local API's socket is met from another process (raw
// bytes, pipelined batches, connections dropped) and the daemon's exit and
// the socket it leaves are judged. Outcomes only: heartbeats as N - 1 minimum
// intervals after the spawn, real-time waits bounds against a hang
// (docs/testing.md, "In-process or a process").
import { fuzzSuite } from './fuzz-suite.js';

// Seed 1 found a handler's "aborted" read logged as a bug, kilobyte error messages, and a 413 lost to a reset;
// with pipelined batches (issue 27), a request of a batch served twice (the second answer reset the connection).
fuzzSuite({ target: 'localapi', seeds: [1], casesPerSeed: 3, jobs: 1, timeoutMs: 240_000 });
