// Fuzzer 1 (issue 18): check, pair, unpair and the daemon against a hostile
// service (test/fuzz/lib/answers.mjs). Long run: node scripts/fuzz.mjs --target answers.
//
// Why a process: what is hostile is the wire itself (a raw node:net server,
// behind a TLS front that cuts, holds or spoils handshakes: lying lengths,
// chunked garbage, 1xx and 101, answers dripped or never sent), which only
// the bundle's real HTTP and TLS stack meets (the rig's wire into the fake's
// inject() skips it), and the oracles are a process's: exit codes, stdout and
// stderr, signals, sockets left open or in CLOSE_WAIT, fds and RSS. So it
// judges outcomes only, none a real-time window a loaded machine could break:
// heartbeats as N - 1 minimum intervals after the spawn, polls after SIGTERM
// counted, idle sockets and CLOSE_WAIT a leak only when they stay, real-time
// waits bounds against a hang (docs/testing.md, "In-process or a process").
import { fuzzSuite } from './fuzz-suite.js';

fuzzSuite({ target: 'answers', seeds: [1, 2, 3], casesPerSeed: 6, jobs: 2, timeoutMs: 300_000 });
