// jest's order of suites: the longest first, so the workers end together
// instead of one running a long suite alone at the end. jest knows a suite's
// length from its last run (its cache) and runs the suites it has no time for
// first, ordered by file size. A fresh clone (CI) has no cache, and file size
// alone put the fuzzers (files of five lines that run for 20 s and more) last,
// where they alone made the last 20 s of a run. So a fresh clone uses the
// times below, measured (2026-11-28, docs/testing.md "Test time budget"),
// and for a suite not listed its size,
// ten times over in the folders whose suites start real processes.
import Sequencer from '@jest/test-sequencer';

/**
 * Seconds a suite took in the last measured run (those of 8 s and more): 2026-11-28, two jest
 * workers on a quiet 2-core machine, the process suites in one run and
 * the others in another (docs/testing.md, "Test time budget"). On three workers beside the
 * background steps each takes longer; the order is what counts.
 */
const MEASURED = {
  'net/network-change': 73,
  'integration/pairing': 36,
  'integration/upload-blocks': 30,
  'cli/secrets': 27,
  'fuzz/media': 23,
  'integration/kill9': 23,
  'fuzz/localapi': 23,
  'fuzz/answers': 22,
  'integration/uploads-hostile': 22,
  'integration/cli-local-api': 21,
  'powercut/powercut': 20,
  'integration/uploads': 16,
  'integration/simulate-ending': 16,
  'integration/lifecycle': 16,
  'cli/file-system-errors': 15,
  'outbox/outbox-model': 16,
  'cli/check': 13,
  'integration/secrets-at-rest': 13,
  'cli/cli': 13,
  'web/browser/web-page': 10,
  'integration/logging-cli': 10,
  'integration/state-dir': 10,
  'e2e/uploads-realtime': 9,
  'api/hostile-answers': 9,
  'daemon/heartbeat-property': 16,
  'integration/simulate': 9,
  'e2e/local-api-schema': 9,
  'fuzz/files': 8,
  'fleet/fleet': 8,
};

/** Folders whose suites run the bundle, the fake cloud or other processes in real time. */
const PROCESS_SUITES = /\/test\/(integration|net|fuzz|packaging|systemd|sim|powercut)\//;
/** Bytes of a suite's file per second it runs, about (a unit suite of 10 KB runs about a second; a process suite ten times longer). */
const BYTES_PER_SECOND = 10_000;

const known = (path) => MEASURED[/\/test\/(.+)\.test\.ts$/.exec(path)?.[1] ?? ''];

export default class SlowFirstSequencer extends Sequencer {
  sort(tests) {
    const sorted = super.sort(tests); // sets each `duration` the cache knows
    if (sorted.every((t) => t.duration != null)) return sorted;
    const seconds = (t) => known(t.path) ?? ((t.context.hasteFS.getSize(t.path) ?? 0) * (PROCESS_SUITES.test(t.path) ? 10 : 1)) / BYTES_PER_SECOND;
    const rank = (t) => [this.hasFailed(t) ? 0 : 1, t.duration == null ? 0 : 1, -(t.duration != null ? t.duration / 1000 : seconds(t))];
    return [...sorted].sort((a, b) => {
      const [x, y] = [rank(a), rank(b)];
      return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
    });
  }
}
