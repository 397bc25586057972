// The uploads unit's one line of work (uploads-unit.ts): the media watcher's
// finds, files queued by hand, looks at incoming/ and its settle looks all run
// in it, one at a time, so two of them never queue one file twice.
export interface WorkLine {
  /** Appends a step; a step that fails is the step's own business (each logs its own). */
  then(step: () => Promise<void> | void): void;
  /** Appends a step and gives its outcome back; the line goes on whatever it was. */
  run<T>(step: () => Promise<T>): Promise<T>;
}
