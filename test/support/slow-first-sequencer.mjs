// jest's order of suites: the longest first, so the two workers end
// together instead of one running a long suite alone at the end. jest knows
// a suite's length from its last run (its cache) and runs the suites it has
// no time for first, ordered by file size. A fresh clone (CI) has no cache,
// and file size alone puts a minute-long end-to-end suite behind dozens of
// large unit files: here a suite that starts real processes (the folders
// below) counts as ten times its size.
import Sequencer from '@jest/test-sequencer';

/** Folders whose suites run the bundle, the fake cloud or other processes in real time. */
const PROCESS_SUITES = /\/test\/(integration|net|fuzz|packaging|systemd|sim|powercut)\//;

export default class SlowFirstSequencer extends Sequencer {
  sort(tests) {
    const sorted = super.sort(tests); // sets each `duration` the cache knows
    if (sorted.every((t) => t.duration != null)) return sorted;
    const size = (t) => (t.context.hasteFS.getSize(t.path) ?? 0) * (PROCESS_SUITES.test(t.path) ? 10 : 1);
    const rank = (t) => [this.hasFailed(t) ? 0 : 1, t.duration == null ? 0 : 1, -(t.duration ?? size(t))];
    return [...sorted].sort((a, b) => {
      const [x, y] = [rank(a), rank(b)];
      return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
    });
  }
}
