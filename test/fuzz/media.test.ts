// Fuzzer 3 (issue 18): the daemon against the fake cloud with a hostile media
// dir (test/fuzz/lib/media.mjs). Long run: node scripts/fuzz.mjs --target media.
//
// Why a process: the media dir is changed under a running bundle by another
// process (real fs.watch events, rewrites and renames landing between the
// parts of an upload), the fake cloud is a process too, over HTTPS with
// handshakes cut or held and its certificate swapped mid-run (the rig's wire
// into inject() has no TLS), and SIGTERM's exit is judged. So it judges
// outcomes only, none a real-time window a loaded machine could break: every
// clip stored once and byte-identical, nothing from outside, every skip
// logged; N heartbeats need N - 1 minimum intervals after the spawn and two
// more must come; real-time waits are bounds against a hang
// (docs/testing.md, "In-process or a process").
import { fuzzSuite } from './fuzz-suite.js';

// 32254480: a clip renamed while queued was never uploaded; 103: a second name for a file was skipped in silence,
// and on a loaded machine a clip rewritten in place went under a link's name instead of its own (media-watcher.ts).
fuzzSuite({ target: 'media', seeds: [1, 32254480, 103], casesPerSeed: 1, jobs: 1, timeoutMs: 300_000 });
